/**
 * Calibration: measured evidence of the configured model endpoint — latency of a minimal call,
 * generation throughput, useful parallelism (how many concurrent calls still pay off) and the
 * context window (asked of the endpoint's model listing; servers name it differently).
 * `calibrate_budgets` sizes agents' token budgets from the measured window.
 */
import type { EndpointSettings, ModelGate } from './model.js';

export interface Calibration {
  model: string;
  base_url: string;
  measured_at: string;
  /** Median wall time of a minimal completion. */
  latency_ms: number;
  /** Completion tokens per second of one call (null when the endpoint reports no usage). */
  throughput_tokens_per_s: number | null;
  /** Wall time of n concurrent calls, for each n tried. */
  parallel_ms: Record<string, number>;
  /** The largest n tried whose speed-up stayed at least 60% of ideal. */
  useful_parallelism: number;
  context_window: number | null;
  context_window_source: string;
}

const PROMPT = [{ role: 'user' as const, content: 'Reply with the single word: ok' }];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Context-window fields of OpenAI-compatible model listings (vLLM, llama.cpp, LM Studio, OpenRouter, Ollama's meta). */
const WINDOW_KEYS = ['context_window', 'context_length', 'max_context_length', 'max_model_len', 'n_ctx', 'n_ctx_train', 'max_input_tokens'];

function findWindow(value: unknown, depth = 0): { n: number; key: string } | undefined {
  if (!value || typeof value !== 'object' || depth > 3) return undefined;
  for (const key of WINDOW_KEYS) {
    const v = (value as Record<string, unknown>)[key];
    if (typeof v === 'number' && v > 0) return { n: v, key };
  }
  for (const v of Object.values(value as Record<string, unknown>)) {
    const found = findWindow(v, depth + 1);
    if (found) return found;
  }
  return undefined;
}

async function contextWindow(endpoint: EndpointSettings, model: string): Promise<{ n: number | null; source: string }> {
  const base = endpoint.baseUrl!.replace(/\/$/, '');
  for (const url of [`${base}/models/${encodeURIComponent(model)}`, `${base}/models`]) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(Math.min(endpoint.timeoutMs, 10_000)) });
      if (!res.ok) continue;
      const body = (await res.json()) as { data?: Array<{ id?: string }> };
      const entry = Array.isArray(body.data) ? (body.data.find((m) => m.id === model) ?? undefined) : body;
      const found = findWindow(entry);
      if (found) return { n: found.n, source: `${url} (${found.key})` };
    } catch {
      // Not every server has the route; the next one is tried.
    }
  }
  return { n: null, source: 'not reported by the endpoint' };
}

export async function calibrate(gate: ModelGate, endpoint: EndpointSettings, maxParallel: number): Promise<Calibration> {
  const model = gate.modelFor({ role: 'calibration' });
  const latencies: number[] = [];
  let throughput: number | null = null;
  for (let i = 0; i < 3; i++) {
    const reply = await gate.chat({ role: 'calibration', messages: PROMPT, max_tokens: 8 });
    latencies.push(reply.ms);
  }
  const long = await gate.chat({
    role: 'calibration',
    messages: [{ role: 'user', content: 'Count from 1 to 40, separated by spaces.' }],
    max_tokens: 128,
  });
  if (long.completion_tokens) throughput = Math.round((long.completion_tokens / (long.ms / 1000)) * 10) / 10;

  const single = median(latencies);
  const parallel: Record<string, number> = {};
  let useful = 1;
  for (const n of [2, 4].filter((x) => x <= Math.max(2, maxParallel * 2))) {
    const started = performance.now();
    await Promise.all(Array.from({ length: n }, () => gate.chat({ role: 'calibration', messages: PROMPT, max_tokens: 8 })));
    const ms = performance.now() - started;
    parallel[String(n)] = Math.round(ms);
    // Speed-up = n calls in `ms` versus n × single; keep n while it is at least 60% of ideal.
    if ((n * single) / ms >= 0.6 * n) useful = n;
  }
  const window = await contextWindow(endpoint, model);
  return {
    model,
    base_url: endpoint.baseUrl!,
    measured_at: new Date().toISOString(),
    latency_ms: Math.round(single),
    throughput_tokens_per_s: throughput,
    parallel_ms: parallel,
    useful_parallelism: useful,
    context_window: window.n,
    context_window_source: window.source,
  };
}

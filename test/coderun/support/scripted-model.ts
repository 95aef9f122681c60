/**
 * A real loopback HTTP server speaking OpenAI chat completions *with tool calls*, scripted per
 * scenario. The shared fake (test/support/fake-openai-server.ts) answers text only, so coding-run
 * tests use this one. A scenario's responder sees each request already classified (planner,
 * reviewer or agent, with the task id and the turn number) and returns the assistant message.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedToolCall {
  name: string;
  /** An object is JSON-encoded; a string is sent as is (malformed arguments). */
  arguments: Record<string, unknown> | string;
}

export interface ScriptedAnswer {
  content?: string | null;
  tool_calls?: ScriptedToolCall[];
  status?: number;
  delayMs?: number;
}

export interface ModelRequest {
  model: string;
  messages: Array<{ role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }>;
  tools?: Array<{ function: { name: string } }>;
  max_tokens?: number;
}

export interface Classified {
  kind: 'planner' | 'reviewer' | 'agent' | 'other';
  /** Task id named in the system prompt (agents and reviewers). */
  task: string | null;
  /** Agent name from "You are <name>," (agents and reviewers). */
  agent: string | null;
  /** Assistant turns already in the conversation (0 on the first call). */
  turn: number;
  /** Tool results the conversation holds, newest last. */
  toolResults: string[];
  system: string;
  body: ModelRequest;
}

export function classify(body: ModelRequest): Classified {
  const tools = (body.tools ?? []).map((t) => t.function.name);
  const system = body.messages.find((m) => m.role === 'system')?.content ?? '';
  const all = body.messages.map((m) => m.content ?? '').join('\n');
  const task = /Task (\S+?):/.exec(all)?.[1] ?? /task (\S+?)\./.exec(system)?.[1] ?? null;
  return {
    kind: tools.includes('submit_plan')
      ? 'planner'
      : tools.includes('review')
        ? 'reviewer'
        : tools.includes('write_file')
          ? 'agent'
          : 'other',
    task,
    agent: /You are ([^,]+),/.exec(system)?.[1] ?? null,
    turn: body.messages.filter((m) => m.role === 'assistant').length,
    toolResults: body.messages.filter((m) => m.role === 'tool').map((m) => m.content ?? ''),
    system,
    body,
  };
}

export interface ScriptedModel {
  baseUrl: string;
  requests: Classified[];
  /** Most requests that were being answered at the same time. */
  peakConcurrency: number;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startScriptedModel(
  responder: (req: Classified) => ScriptedAnswer | Promise<ScriptedAnswer>,
  /** `models`: what GET /v1/models/<id> answers (model listings carry the context window). */
  options: { delayMs?: number; models?: Record<string, Record<string, unknown>> } = {},
): Promise<ScriptedModel> {
  const requests: Classified[] = [];
  const sockets = new Set<import('node:net').Socket>();
  let active = 0;
  const state = { peakConcurrency: 0 };
  let callId = 0;
  const server = http.createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const listed = req.method === 'GET' ? /\/v1\/models\/([^/?]+)$/.exec(req.url ?? '') : null;
    if (listed && options.models?.[decodeURIComponent(listed[1]!)]) {
      res
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ id: decodeURIComponent(listed[1]!), object: 'model', ...options.models[decodeURIComponent(listed[1]!)] }));
      return;
    }
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res
        .writeHead(404, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ error: { message: 'not found', type: 'invalid_request_error' } }));
      return;
    }
    active++;
    state.peakConcurrency = Math.max(state.peakConcurrency, active);
    try {
      const classified = classify(JSON.parse(raw) as ModelRequest);
      requests.push(classified);
      const answer = await responder(classified);
      await sleep(answer.delayMs ?? options.delayMs ?? 0);
      if (res.destroyed) return;
      if (answer.status && answer.status >= 400) {
        res
          .writeHead(answer.status, { 'Content-Type': 'application/json' })
          .end(JSON.stringify({ error: { message: `scripted ${answer.status}`, type: 'server_error' } }));
        return;
      }
      const toolCalls = (answer.tool_calls ?? []).map((c) => ({
        id: `call_${++callId}`,
        type: 'function',
        function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
      }));
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `chatcmpl-${requests.length}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: classified.body.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: answer.content ?? null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
              finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
              logprobs: null,
            },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      );
    } finally {
      active--;
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    get peakConcurrency() {
      return state.peakConcurrency;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The next step of an agent from a script: one answer per turn; `finish` once the script runs out. */
export function agentScript(turns: ScriptedAnswer[], c: Classified): ScriptedAnswer {
  return turns[c.turn] ?? { tool_calls: [{ name: 'finish', arguments: { summary: 'done' } }] };
}

export const write = (path: string, content: string): ScriptedAnswer => ({
  tool_calls: [{ name: 'write_file', arguments: { path, content } }],
});
export const approve: ScriptedAnswer = { tool_calls: [{ name: 'review', arguments: { verdict: 'approve', findings: [] } }] };
export const reject = (finding: string): ScriptedAnswer => ({
  tool_calls: [{ name: 'review', arguments: { verdict: 'reject', findings: [finding] } }],
});

/**
 * Holds each caller until `n` have arrived, so the answers that follow overlap whatever the worker
 * threads' start-up took. After `timeoutMs` from the first arrival it lets them through anyway,
 * so a run that never gets `n` going at once shows as a wrong count, not a hang (and well within
 * the model client's 10 s timeout).
 */
export function barrier(n: number, timeoutMs = 8_000): () => Promise<void> {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return () => {
    if (++arrived === 1) setTimeout(open, timeoutMs).unref();
    if (arrived >= n) open();
    return opened;
  };
}

/** A planner's task, as `submit_plan` carries it; `extra` sets or overrides fields. */
export const planTask = (id: string, squad: string, files: string[], extra: Record<string, unknown> = {}) => ({
  id,
  title: `task ${id}`,
  description: `do ${id}`,
  role: 'developer',
  squad,
  criteria: [],
  files,
  dependencies: [],
  ...extra,
});

/** The planner's answer submitting `plan`. */
export const planAnswer = (plan: Record<string, unknown>): ScriptedAnswer => ({ tool_calls: [{ name: 'submit_plan', arguments: plan }] });

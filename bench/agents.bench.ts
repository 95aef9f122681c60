/**
 * Agent runtime benchmarks (issue 3): thread append latency at 10 vs 10,000 threads, POST /invoke
 * throughput against bare node:http, and time to the first SSE frame of /invoke/stream.
 * Every figure is measured against a baseline taken in the same run on the same machine.
 */
import { execSync } from 'node:child_process';
import http from 'node:http';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import autocannon from 'autocannon';
import { UnconfiguredProvider } from '../core/agents/model.js';
import { LowdbStore } from '../core/storage/lowdb-store.js';
import { ThreadService } from '../core/threads/service.js';
import { BARE_SERVER, median, repo, report, round, startProcess, stop, workspace } from './lib/measure.js';

const hangarArgs = (root: string) => [path.join(repo, 'bin', 'hangar.mjs'), '--no-window', '--port', '0', '--root', root];

/** Median latency of appending one message to a random existing thread, with `count` threads stored. */
async function appendLatency(count: number): Promise<number> {
  const root = await workspace({});
  const threads = new ThreadService(new LowdbStore(root), new UnconfiguredProvider());
  // Fill in batches: concurrent writes are group-committed, so 10,000 threads load in seconds.
  for (let start = 0; start < count; start += 1000) {
    await Promise.all(
      Array.from({ length: Math.min(1000, count - start) }, async (_, i) => {
        const id = `t-${start + i}`;
        await threads.create('bench', { thread_id: id, user_id: 'u', title: null, metadata: {} });
        await threads.append('bench', id, [
          { role: 'user', content: 'a question of typical length about something' },
          { role: 'assistant', content: 'an answer of typical length, a little longer than the question was' },
        ]);
      }),
    );
  }
  // Measure steady state, not the aftermath of the bulk load: let the kernel write back the
  // megabytes the fill just produced before timing single appends.
  execSync('sync');
  await new Promise((r) => setTimeout(r, 200));
  const samples: number[] = [];
  for (let i = 0; i < 300; i++) {
    const id = `t-${Math.floor(Math.random() * count)}`;
    const started = performance.now();
    await threads.append('bench', id, [{ role: 'user', content: `message ${i}` }]);
    samples.push(performance.now() - started);
  }
  await rm(root, { recursive: true, force: true });
  return median(samples.slice(20));
}

async function threadAppend() {
  await appendLatency(10); // warm-up
  const small: number[] = [];
  const large: number[] = [];
  for (let i = 0; i < 3; i++) {
    small.push(await appendLatency(10));
    large.push(await appendLatency(10_000));
  }
  const ratio = median(large) / median(small);
  report('append a message: 10,000 threads vs 10', `${round(median(large), 3)} ms vs ${round(median(small), 3)} ms median`, ratio, '≤ 1.5×', ratio <= 1.5);
}

async function post(url: string, seconds: number): Promise<number> {
  const result = await autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: 'ping' }),
    connections: 32,
    duration: seconds,
  });
  if (result.non2xx || result.errors) throw new Error(`non-2xx ${result.non2xx}, errors ${result.errors} for ${url}`);
  return result.requests.average;
}

/** Time from sending the request to the first `id:` line of the stream, over one keep-alive socket. */
function firstFrame(url: string, agent: http.Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      let seen = false;
      res.on('data', (chunk: Buffer) => {
        if (!seen && chunk.includes('id: ')) {
          seen = true;
          resolve(performance.now() - started);
        }
      });
      res.on('end', () => (seen ? undefined : reject(new Error('stream ended without a frame'))));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ query: 'ping' }));
  });
}

async function invoke() {
  const root = await workspace({ 'agents/noop.ts': `import { defineAgent } from 'hangar';\nexport default defineAgent({ run: async () => 'ok' });\n` });
  const bare = await startProcess(['-e', BARE_SERVER]);
  const hangar = await startProcess(hangarArgs(root));
  for (;;) {
    const res = await fetch(`${hangar.url}/readiness`).catch(() => undefined);
    if (res?.status === 200) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const route = `${hangar.url}/api/v1/noop/invoke`;
  await post(bare.url, 1);
  await post(route, 1);
  const b: number[] = [];
  const h: number[] = [];
  for (let i = 0; i < 3; i++) {
    b.push(await post(bare.url, 3));
    h.push(await post(route, 3));
  }
  const ratio = median(h) / median(b);
  report('POST /invoke (no-op agent) throughput', `${round(median(h), 0)} req/s vs bare node:http ${round(median(b), 0)} req/s`, ratio, '≥ 0.3×', ratio >= 0.3);

  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const stream = `${hangar.url}/api/v1/noop/invoke/stream`;
  for (let i = 0; i < 20; i++) await firstFrame(stream, agent);
  const frames: number[] = [];
  for (let i = 0; i < 200; i++) frames.push(await firstFrame(stream, agent));
  agent.destroy();
  const m = median(frames);
  report('first SSE frame of POST /invoke/stream', `${round(m, 3)} ms median over loopback`, m / 5, '≤ 5 ms', m <= 5);
  await stop(bare.child);
  await stop(hangar.child);
  await rm(root, { recursive: true, force: true });
}

await threadAppend();
await invoke();

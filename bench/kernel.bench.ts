/**
 * Kernel benchmarks (issue 2): cold start, request overhead, hot reload latency, discovery at scale.
 * Every figure is measured against a baseline taken in the same run on the same machine.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { agentFile, BARE_SERVER, median, repo, report, round, startProcess, stop, throughput, workspace } from './lib/measure.js';

const hangarArgs = (root: string) => [path.join(repo, 'bin', 'hangar.mjs'), '--no-window', '--port', '0', '--root', root];

async function timeToReady(args: string[], probe: string): Promise<number> {
  const started = performance.now();
  const { child, url } = await startProcess(args);
  for (;;) {
    const res = await fetch(url + probe).catch(() => undefined);
    if (res?.status === 200) break;
    await new Promise((r) => setTimeout(r, 2));
  }
  const ms = performance.now() - started;
  await stop(child);
  return ms;
}

async function coldStart() {
  const bare: number[] = [];
  const hangar: number[] = [];
  for (let i = 0; i < 5; i++) {
    bare.push(await timeToReady(['-e', BARE_SERVER], '/'));
    hangar.push(await timeToReady(hangarArgs(repo), '/readiness'));
  }
  const h = median(hangar);
  const b = median(bare);
  report('cold start (example workspace) to /readiness 200', `${round(h)} ms median vs bare node:http ${round(b)} ms`, h / b, '≤ 1000 ms', h <= 1000);
}

// The framework's own ceiling, for context: Fastify answering the same route with no hooks.
const BARE_FASTIFY = `const app = require('fastify')(); app.get('/api/v1/:agent/health', (q) => ({ status: 'healthy', agent: q.params.agent, framework: 'hangar' })); app.listen({ port: 0, host: '127.0.0.1' }).then((url) => console.log(url));`;

async function requestOverhead() {
  const bare = await startProcess(['-e', BARE_SERVER]);
  const fastify = await startProcess(['-e', BARE_FASTIFY]);
  const hangar = await startProcess(hangarArgs(repo));
  const route = '/api/v1/echo/health';
  for (const url of [bare.url, fastify.url + route, hangar.url + route]) await throughput(url, 1);
  const b: number[] = [];
  const e: number[] = [];
  const h: number[] = [];
  for (let i = 0; i < 3; i++) {
    b.push(await throughput(bare.url, 3));
    e.push(await throughput(fastify.url + route, 3));
    h.push(await throughput(hangar.url + route, 3));
  }
  for (const p of [bare, fastify, hangar]) await stop(p.child);
  const ratio = median(h) / median(b);
  report(
    'GET /api/v1/{agent}/health throughput',
    `${round(median(h), 0)} req/s vs bare node:http ${round(median(b), 0)} req/s (bare Fastify: ${round(median(e), 0)} req/s, hangar/Fastify ${round(median(h) / median(e), 2)})`,
    ratio,
    '≥ 0.5×',
    ratio >= 0.5,
  );
}

async function hotReload() {
  const root = await workspace({ 'agents/hot.ts': agentFile('v0') });
  const { child, url } = await startProcess(hangarArgs(root));
  const samples: number[] = [];
  for (let i = 1; i <= 30; i++) {
    const version = `v${i}`;
    const started = performance.now();
    await writeFile(path.join(root, 'agents/hot.ts'), agentFile(version));
    for (;;) {
      const body = (await (await fetch(`${url}/api/v1/agents`)).json()) as { agents: Record<string, { version: string }> };
      if (body.agents.hot?.version === version) break;
    }
    samples.push(performance.now() - started);
    await new Promise((r) => setTimeout(r, 30));
  }
  await stop(child);
  const restart = await timeToReady(hangarArgs(root), '/readiness');
  const m = median(samples);
  report('hot reload: write → new version answering', `${round(m)} ms median (p90 ${round(samples.sort((a, b) => a - b)[26]!)} ms) vs process restart ${round(restart)} ms`, m / restart, '≤ 150 ms', m <= 150);
}

async function discoveryAtScale() {
  const files: Record<string, string> = {};
  for (let i = 0; i < 200; i++) files[`agents/gen-${String(i).padStart(3, '0')}.ts`] = agentFile(`g${i}`);
  const big = await workspace(files);
  const small = await workspace({ 'agents/one.ts': agentFile('one') });
  const bigRuns: number[] = [];
  const smallRuns: number[] = [];
  for (let i = 0; i < 3; i++) {
    smallRuns.push(await timeToReady(hangarArgs(small), '/readiness'));
    bigRuns.push(await timeToReady(hangarArgs(big), '/readiness'));
  }
  const m = median(bigRuns);
  report('200 generated agents discovered and ready', `${round(m)} ms median vs 1 agent ${round(median(smallRuns))} ms`, m / median(smallRuns), '≤ 3000 ms', m <= 3000);
}

await coldStart();
await requestOverhead();
await hotReload();
await discoveryAtScale();

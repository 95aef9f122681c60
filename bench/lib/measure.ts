import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { profileArgs } from './figures.mjs';

export { report } from './figures.mjs';

/** Shared helpers for the benchmarks: medians, a workspace, the real CLI as a child process. */

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
export const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
export const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

export async function workspace(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'hangar-bench-'));
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), content);
  }
  return root;
}

export const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
export const agentFile = (reply: string) =>
  `import { defineAgent } from 'hangar';\nexport default defineAgent({ version: ${JSON.stringify(reply)}, run: async () => ${JSON.stringify(reply)} });\n`;

/** Start a process and resolve with its URL once it prints `ready at <url>` (or a bare URL line). */
export function startProcess(
  args: string[],
  pattern = /(http:\/\/127\.0\.0\.1:\d+)/,
  env: NodeJS.ProcessEnv = {},
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: repo, env: { ...process.env, ...env } });
  // Kept short: a server logs to stderr for as long as it runs; the tail explains an early exit.
  let err = '';
  child.stderr!.on('data', (d) => (err = (err + d).slice(-4000)));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = pattern.exec(out);
      if (m) resolve({ child, url: m[1]! });
    });
    child.on('exit', (code) => reject(new Error(`process exited ${code} before ready: ${out}${err}`)));
  });
}

export async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** Requests per second with the same autocannon client settings for every target. */
export async function throughput(url: string, seconds = 5, connections = 32): Promise<number> {
  const result = await autocannon({ url, connections, duration: seconds, pipelining: 1 });
  if (result.non2xx || result.errors) throw new Error(`non-2xx ${result.non2xx}, errors ${result.errors} for ${url}`);
  return result.requests.average;
}

/**
 * Rebuild dist/ if a source changed since the last build, outside any timed section: bin/hangar.mjs
 * rebuilds a stale dist/ before starting, and a start-up figure must not time a build (sources can
 * change during a run when others work in the same tree).
 */
export function freshDist(): void {
  const built = spawnSync(process.execPath, [path.join(repo, 'scripts', 'build.mjs'), '--if-stale', '--quiet'], {
    cwd: repo,
    stdio: 'inherit',
  });
  if (built.status !== 0) throw new Error(`scripts/build.mjs exited ${built.status}`);
}

/**
 * `hangar` through its CLI over `root`, with default settings, as a user starts it. Under
 * `npm run bench -- --profile NAME` it writes a .cpuprofile when it exits (stop() ends it cleanly).
 */
export const hangarArgs = (root: string) => [
  ...profileArgs(),
  path.join(repo, 'bin', 'hangar.mjs'),
  '--no-window',
  '--port',
  '0',
  '--root',
  root,
];

/** Poll `url` until it answers 200 and `ok(body)` holds. */
export async function waitFor(url: string, ok: (body: unknown) => boolean = () => true, everyMs = 2): Promise<void> {
  for (;;) {
    const res = await fetch(url).catch(() => undefined);
    if (res?.status === 200 && ok(await res.json().catch(() => null))) return;
    if (res) await res.body?.cancel().catch(() => undefined);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const BARE_SERVER = `require('http').createServer((q, s) => { s.setHeader('content-type', 'application/json'); s.end('{"status":"ok"}'); }).listen(0, '127.0.0.1', function () { console.log('http://127.0.0.1:' + this.address().port); });`;

/**
 * The fair baseline for a JSON POST: reads the whole body, parses it, answers a JSON object of the
 * size of Hangar's answer. Not less work (answering before the body is read), not more.
 */
export const BARE_JSON_SERVER = `require('http').createServer((q, s) => {
  let body = ''; q.setEncoding('utf8'); q.on('data', (d) => (body += d));
  q.on('end', () => {
    let input; try { input = JSON.parse(body); } catch { s.statusCode = 400; s.end('{"detail":"invalid JSON"}'); return; }
    s.setHeader('content-type', 'application/json');
    s.end(JSON.stringify({ response: 'ok', steps_taken: [], thread_id: null, query: input.query, agent: 'noop', duration_ms: 0 }));
  });
}).listen(0, '127.0.0.1', function () { console.log('http://127.0.0.1:' + this.address().port); });`;

/**
 * The baseline for the first SSE frame: parses the JSON body like the JSON server above, sends the
 * SSE headers and a start frame, then, on the next turn of the event loop (where an agent's run
 * would produce its first event), a step frame and the end. The client times the step frame.
 */
export const BARE_SSE_SERVER = `require('http').createServer((q, s) => {
  let body = ''; q.setEncoding('utf8'); q.on('data', (d) => (body += d));
  q.on('end', () => {
    const input = JSON.parse(body);
    s.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    s.write('id: 1\\ndata: ' + JSON.stringify({ event: 'start', response: '', steps_taken: [], thread_id: null, agent: 'noop' }) + '\\n\\n');
    setImmediate(() => {
      s.write('id: 2\\ndata: ' + JSON.stringify({ event: 'step', node: 'run', response: 'ok', steps_taken: [], query: input.query }) + '\\n\\n');
      s.end('id: 3\\ndata: ' + JSON.stringify({ event: 'complete', response: 'ok', steps_taken: [] }) + '\\n\\ndata: [DONE]\\n\\n');
    });
  });
}).listen(0, '127.0.0.1', function () { console.log('http://127.0.0.1:' + this.address().port); });`;

/** Spawn to the first 200 of `probe` (build `dist/` first with `freshDist()` when timing hangar). */
export async function timeToReady(args: string[], probe: string): Promise<number> {
  const started = performance.now();
  const { child, url } = await startProcess(args);
  await waitFor(url + probe);
  const ms = performance.now() - started;
  await stop(child);
  return ms;
}

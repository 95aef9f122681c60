/**
 * Agent runtime benchmarks (issues 3, 25, 27). Every figure is measured against a baseline taken
 * in the same run on the same machine.
 *
 * 1. Append a message: 10,000 threads vs 10, and one thread of 10,000 messages vs threads of 10
 *    (the long thread is grown append by append, so the append log's compaction runs on the way).
 *    After loading 10,000 threads, the first few hundred appends are slower while each thread's
 *    pages come back into SQLite's page cache (the load and its checkpoint leave it cold): 300
 *    appends warm each store up, reported beside the figure, and the next 1,000 are timed.
 * 2. A chat turn (`POST /chat` with the bundled echo agent, the request a new user sends:
 *    `{content, thread_id}`, default settings) on a thread of 10,000 messages vs on a new thread. The long thread's messages
 *    are appended through the thread service of the same server, not chatted: 5,000 turns would
 *    take hours on today's store, and what a turn costs at 10,000 messages is the question.
 * 3. `POST /invoke` of a no-op agent vs a bare node:http process that reads and parses the same
 *    JSON body and answers JSON (median of 3 alternating rounds of 3 s after 5 s of warm-up each,
 *    Hangar started by its CLI with default settings). Beside it, as context, the CPU time per
 *    request of each server process (every thread, from /proc on Linux) over the same rounds: it
 *    moves much less with the machine's load than requests per second do.
 * 4. First SSE frame of `POST /invoke/stream` that carries an agent event (not the start frame
 *    Hangar writes before the agent runs) vs a bare node:http SSE server in the same run.
 */
import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cp, rm } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import autocannon from 'autocannon';
import { startServer } from '../core/app/server.js';
import { Logger } from '../core/kernel/log.js';
import {
  BARE_JSON_SERVER,
  BARE_SSE_SERVER,
  hangarArgs,
  median,
  repo,
  report,
  round,
  startProcess,
  stop,
  waitFor,
  workspace,
} from './lib/measure.js';

const LONG = 10_000;

const APPEND_WARMUP = 300;
const APPEND_TIMED = 1_000;

/**
 * Median latency of appending one message to a random existing thread, with `count` threads
 * stored, in steady state and (as context) over the warm-up right after the bulk load.
 */
async function appendLatency(count: number): Promise<{ steady: number; warmup: number }> {
  const root = await workspace({});
  // The server's own thread service over its own store, whichever store that is.
  const server = await startServer({ root, port: 0, watch: false, requestLog: false, logLevel: 'error' }, { logger: new Logger('error') });
  const threads = server.ctx.services.get('agents').threads;
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
  for (let i = 0; i < APPEND_WARMUP + APPEND_TIMED; i++) {
    const id = `t-${Math.floor(Math.random() * count)}`;
    const started = performance.now();
    await threads.append('bench', id, [{ role: 'user', content: `message ${i}` }]);
    samples.push(performance.now() - started);
  }
  await server.close();
  await rm(root, { recursive: true, force: true });
  return { steady: median(samples.slice(APPEND_WARMUP)), warmup: median(samples.slice(0, APPEND_WARMUP)) };
}

async function manyThreads() {
  await appendLatency(10); // warm-up
  const small: Array<{ steady: number; warmup: number }> = [];
  const large: Array<{ steady: number; warmup: number }> = [];
  for (let i = 0; i < 3; i++) {
    small.push(await appendLatency(10));
    large.push(await appendLatency(10_000));
  }
  const steady = (rounds: typeof small) => median(rounds.map((r) => r.steady));
  const warmup = (rounds: typeof small) => median(rounds.map((r) => r.warmup));
  report({
    name: 'append a message: 10,000 threads vs 10',
    value: steady(large),
    unit: 'ms',
    baseline: { label: '10 threads', value: steady(small) },
    target: { on: 'ratio', op: '<=', limit: 1.5 },
    detail:
      `${round(steady(large), 3)} ms vs ${round(steady(small), 3)} ms median of ${APPEND_TIMED.toLocaleString('en')} appends ` +
      `(the ${APPEND_WARMUP} before them, right after the load: ${round(warmup(large), 3)} vs ${round(warmup(small), 3)} ms)`,
  });
}

const question = { role: 'user' as const, content: 'a question of typical length about something' };
const answer = { role: 'assistant' as const, content: 'an answer of typical length, a little longer than the question was' };

/** One long thread and a chat on it, against short ones, on one server in this process. */
async function longThread() {
  const root = await workspace({});
  await cp(path.join(repo, 'agents', 'echo.ts'), path.join(root, 'agents', 'echo.ts'));
  const server = await startServer({ root, port: 0, watch: false, requestLog: false, logLevel: 'error' }, { logger: new Logger('error') });
  await server.discovered;
  try {
    const threads = server.ctx.services.get('agents').threads;
    const fresh = async (id: string, messages: number) => {
      await threads.create('echo', { thread_id: id, user_id: 'u', title: null, metadata: {} });
      for (let n = 0; n < messages; n += 2) await threads.append('echo', id, [question, answer]);
    };
    await fresh('long', 0);
    const grow = performance.now();
    for (let n = 0; n < LONG; n += 2) await threads.append('echo', 'long', [question, answer]);
    const growMs = performance.now() - grow;
    const SHORT = 30;
    for (let i = 0; i < SHORT; i++) await fresh(`ten-${i}`, 10);

    // Alternate so both see the same machine state; each short thread stays near 10 messages.
    const long: number[] = [];
    const short: number[] = [];
    for (let i = 0; i < 330; i++) {
      let started = performance.now();
      await threads.append('echo', 'long', [{ role: 'user', content: `message ${i}` }]);
      if (i >= 30) long.push(performance.now() - started);
      started = performance.now();
      await threads.append('echo', `ten-${i % SHORT}`, [{ role: 'user', content: `message ${i}` }]);
      if (i >= 30) short.push(performance.now() - started);
    }
    report({
      name: `append a message: a thread of ${LONG.toLocaleString('en')} messages vs threads of 10`,
      value: median(long),
      unit: 'ms',
      baseline: { label: '10 messages', value: median(short) },
      target: { on: 'ratio', op: '<=', limit: 1.5 },
      detail: `${round(median(long), 3)} ms vs ${round(median(short), 3)} ms median (growing the thread to ${LONG.toLocaleString('en')} took ${round(growMs / 1000, 1)} s)`,
    });

    const chat = async (threadId: string) => {
      const started = performance.now();
      const res = await fetch(`${server.url}/api/v1/echo/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ content: 'what did I ask before?', thread_id: threadId }),
      });
      const body = (await res.json()) as { history_loaded?: number };
      if (res.status !== 200) throw new Error(`chat on ${threadId} answered ${res.status}: ${JSON.stringify(body)}`);
      return { ms: performance.now() - started, history: body.history_loaded ?? 0 };
    };
    for (let i = 0; i < 3; i++) {
      await chat('long');
      await chat(`warm-${i}`);
    }
    const onLong: number[] = [];
    const onNew: number[] = [];
    let history = 0;
    for (let i = 0; i < 15; i++) {
      const turn = await chat('long');
      history = turn.history;
      onLong.push(turn.ms);
      onNew.push((await chat(`new-${i}`)).ms);
    }
    report({
      name: `chat turn (echo agent, default request and settings) on a thread of ${LONG.toLocaleString('en')} messages vs a new thread`,
      value: median(onLong),
      unit: 'ms',
      baseline: { label: 'new thread', value: median(onNew) },
      target: { on: 'ratio', op: '<=', limit: 1.5 },
      detail: `${round(median(onLong), 2)} ms vs ${round(median(onNew), 2)} ms median (history loaded: ${history} messages)`,
    });
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
}

/**
 * CPU time (user + system, every thread) a process has used so far, in µs, from /proc; undefined
 * where there is no /proc (the figure is then not reported).
 */
function cpuMicros(pid: number | undefined): number | undefined {
  if (pid === undefined || process.platform !== 'linux') return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which may itself contain spaces: utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** How long each server is loaded before the rounds that count. */
const WARMUP_SECONDS = 5;

/** Linux's USER_HZ, the unit of /proc's CPU times (100 on every architecture Node runs on). */
const CLOCK_TICKS = 100;

/** Requests per second, and the server's CPU µs per request when its pid is given (Linux). */
async function post(url: string, seconds: number, pid?: number): Promise<{ rps: number; cpu: number | undefined }> {
  const before = cpuMicros(pid);
  const result = await autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: 'ping' }),
    connections: 32,
    duration: seconds,
  });
  const after = cpuMicros(pid);
  if (result.non2xx || result.errors) throw new Error(`non-2xx ${result.non2xx}, errors ${result.errors} for ${url}`);
  const cpu = before === undefined || after === undefined ? undefined : (after - before) / result.requests.total;
  return { rps: result.requests.average, cpu };
}

/**
 * Time from sending the request to the first frame that carries an agent event (its data is not
 * Hangar's `start` frame), over one keep-alive socket; the rest of the stream is read to its end.
 */
function firstEvent(url: string, agent: http.Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      let seen = false;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (seen) return;
        text += chunk;
        for (const frame of text.split('\n\n').slice(0, -1)) {
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (!data || data === '[DONE]') continue;
          if ((JSON.parse(data) as { event?: string }).event !== 'start') {
            seen = true;
            resolve(performance.now() - started);
            return;
          }
        }
      });
      res.on('end', () => (seen ? undefined : reject(new Error(`stream ended without an agent event: ${text}`))));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ query: 'ping' }));
  });
}

async function timedFrames(url: string): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < 20; i++) await firstEvent(url, agent);
  const frames: number[] = [];
  for (let i = 0; i < 100; i++) frames.push(await firstEvent(url, agent));
  agent.destroy();
  return median(frames);
}

async function invoke() {
  const root = await workspace({
    'agents/noop.ts': `import { defineAgent } from 'hangar';\nexport default defineAgent({ run: async () => 'ok' });\n`,
  });
  const bare = await startProcess(['-e', BARE_JSON_SERVER]);
  const bareSse = await startProcess(['-e', BARE_SSE_SERVER]);
  const hangar = await startProcess(hangarArgs(root));
  try {
    await waitFor(`${hangar.url}/readiness`, () => true, 10);
    const route = `${hangar.url}/api/v1/noop/invoke`;
    // Warmed until steady, both alike: after a 1 s warm-up Hangar's first rounds still ran faster
    // round by round (server CPU per request 107, 97 then 86 µs in one run) while the bare server's
    // did not move, so the first round measured the JIT and the young generation still growing.
    await post(bare.url, WARMUP_SECONDS);
    await post(route, WARMUP_SECONDS);
    const b: number[] = [];
    const h: number[] = [];
    const bCpu: number[] = [];
    const hCpu: number[] = [];
    for (let i = 0; i < 3; i++) {
      const bareRound = await post(bare.url, 3, bare.child.pid);
      const hangarRound = await post(route, 3, hangar.child.pid);
      b.push(bareRound.rps);
      h.push(hangarRound.rps);
      if (bareRound.cpu !== undefined && hangarRound.cpu !== undefined) {
        bCpu.push(bareRound.cpu);
        hCpu.push(hangarRound.cpu);
      }
    }
    report({
      name: 'POST /invoke (no-op agent) throughput',
      value: median(h),
      unit: 'req/s',
      baseline: { label: 'bare node:http parsing the same JSON body', value: median(b) },
      target: { on: 'ratio', op: '>=', limit: 0.4 },
      detail: `${round(median(h), 0)} req/s vs bare node:http (reads and parses the body, answers JSON) ${round(median(b), 0)} req/s, medians of 3 alternating rounds`,
    });
    // Context for the figure above: on a machine others load, requests per second follow the load
    // (three runs of #27's second round measured 0.30×, 0.54× and 0.31× within minutes); the CPU a request costs the server
    // (all its threads: the host, V8's collector helpers) moves much less.
    if (hCpu.length) {
      report({
        name: '(context) POST /invoke (no-op agent): server CPU per request, every thread',
        value: median(hCpu),
        unit: 'µs',
        baseline: { label: 'bare node:http parsing the same JSON body', value: median(bCpu) },
        detail: `${round(median(hCpu), 1)} µs vs bare node:http ${round(median(bCpu), 1)} µs of CPU (user + system, /proc) per request, medians of the same 3 rounds`,
      });
    }

    // Alternate Hangar and the bare server twice, so neither gets only the quiet half of the run.
    const hs: number[] = [];
    const bs: number[] = [];
    for (let i = 0; i < 2; i++) {
      hs.push(await timedFrames(`${hangar.url}/api/v1/noop/invoke/stream`));
      bs.push(await timedFrames(bareSse.url));
    }
    const m = median(hs);
    const base = median(bs);
    report({
      name: 'first SSE frame with an agent event, POST /invoke/stream',
      value: m,
      unit: 'ms',
      baseline: { label: 'bare node:http SSE server', value: base },
      target: { on: 'value', op: '<=', limit: 5, unit: 'ms' },
      also: [{ label: 'within 3× the bare SSE server', pass: m <= 3 * base }],
      detail: `${round(m, 3)} ms median over loopback vs bare node:http SSE ${round(base, 3)} ms (target also ≤ 3× bare)`,
    });
  } finally {
    await stop(bare.child);
    await stop(bareSse.child);
    await stop(hangar.child);
    await rm(root, { recursive: true, force: true });
  }
}

await manyThreads();
await longThread();
await invoke();

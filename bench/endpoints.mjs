// Custom endpoint benchmarks (issue 6). Standalone: `node bench/endpoints.mjs` (or `npm run bench -- endpoints`).
//
// Three processes, like a real deployment: the upstreams (one child), Hangar itself started through
// its CLI over a temporary workspace holding two endpoint drop-ins (another child), and the client
// (this process). Both figures are ratios against a baseline measured in the same run:
//
// 1. Fan-out overhead: a 3-upstream ALL endpoint (upstreams answering after 2, 5 and 10 ms) against
//    calling the slowest upstream directly from the same client. Target: ≤ 1 ms added at the median
//    (sequential calls).
//    Throughput (16 concurrent connections) is measured over upstreams that answer at once: over
//    the delayed ones it measured the 10 ms sleep, not Hangar. Its baseline is a bare node:http
//    process doing the same fan-out over the same instant upstreams. Target ≥ 0.5×.
// 2. OAuth2 single flight: 1,000 concurrent calls while the cached token is expired cause exactly
//    one token request.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { profileArgs, report } from './lib/figures.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SEQUENTIAL = 1_500;
// Calls (of each kind) before measuring. V8 tiers up Hangar's request path over its first couple of
// thousand calls: after 300 the median still carries ~0.25 ms of unoptimized code, after 2,000 it is
// the steady state of a server that has been running for a while, which is what the target is about.
// The direct calls and the bare proxy get the same warm-up.
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2_000);
const CONCURRENT_OAUTH = 1_000;
const THROUGHPUT_SECONDS = 5;
const CONNECTIONS = 16;

// The upstreams: three JSON servers with fixed delays, a token endpoint (answering after 20 ms, so
// concurrent callers really overlap) and an API that checks the bearer token. Prints one JSON line
// of URLs.
const UPSTREAMS = `
const http = require('http');
let tokenRequests = 0, issued = 0;
const serve = (handler) => new Promise((resolve) => {
  const s = http.createServer(handler);
  s.keepAliveTimeout = 60000;
  s.listen(0, '127.0.0.1', () => resolve('http://127.0.0.1:' + s.address().port));
});
const json = (res, status, body) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
const delayed = (ms, v) => (req, res) => { req.resume(); setTimeout(() => json(res, 200, { v }), ms); };
(async () => {
  const a = await serve(delayed(2, 1));
  const b = await serve(delayed(5, 2));
  const c = await serve(delayed(10, 3));
  const zero = await serve((req, res) => { req.resume(); json(res, 200, { v: 0 }); });
  const token = await serve((req, res) => {
    let body = ''; req.on('data', (d) => (body += d));
    // The first token lives 1 s so it expires before the burst; later ones outlive the burst.
    req.on('end', () => { tokenRequests++; setTimeout(() => json(res, 200, { access_token: 'tok-' + (++issued), token_type: 'Bearer', expires_in: issued === 1 ? 1 : 3600 }), 20); });
  });
  const api = await serve((req, res) => { req.resume(); json(res, req.headers.authorization === 'Bearer tok-' + issued ? 200 : 401, { v: issued }); });
  const stats = await serve((req, res) => json(res, 200, { tokenRequests }));
  console.log(JSON.stringify({ a, b, c, zero, token, api, stats }));
})();
`;

// Context for the overhead figure: the least any fan-out process can add — a bare node:http server
// that calls the three upstreams with a keep-alive agent, parses and merges their JSON and answers
// (no validation, routing, metrics or retries). Prints its URL.
const BARE_PROXY = `
const http = require('http');
const agent = new http.Agent({ keepAlive: true });
const upstreams = [process.env.BENCH_A, process.env.BENCH_B, process.env.BENCH_C];
const call = (url) => new Promise((resolve, reject) => {
  http.get(url, { agent }, (res) => { let body = ''; res.setEncoding('utf8'); res.on('data', (d) => (body += d)); res.on('end', () => resolve(JSON.parse(body))); }).on('error', reject);
});
const server = http.createServer(async (req, res) => {
  req.resume();
  const answers = await Promise.all(upstreams.map(call));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(Object.assign({}, ...answers)));
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => console.log('http://127.0.0.1:' + server.address().port));
`;

const FANOUT = `import { defineEndpoint, z } from 'hangar';
export default defineEndpoint({
  description: 'bench: ALL over three upstreams',
  path: '/',
  methods: ['GET'],
  aggregation: 'ALL',
  response: z.object({ v: z.number() }),
  upstreams: [
    { name: 'a', base_url: '\${BENCH_A}', retries: 0 },
    { name: 'b', base_url: '\${BENCH_B}', retries: 0 },
    { name: 'c', base_url: '\${BENCH_C}', retries: 0 },
  ],
});
`;

// Context for the overhead figure: the same fan-out over upstreams that answer at once, so the
// difference is Hangar's own CPU path rather than process wake-ups after a sleep.
const FANOUT0 = FANOUT.replace(/BENCH_[ABC]/g, 'BENCH_ZERO').replace(
  'bench: ALL over three upstreams',
  'bench: ALL over three instant upstreams',
);

const OAUTH = `import { defineEndpoint } from 'hangar';
export default defineEndpoint({
  description: 'bench: one OAuth2 upstream',
  path: '/',
  methods: ['GET'],
  upstreams: [{
    name: 'api', base_url: '\${BENCH_API}', retries: 0, timeout_ms: 30000,
    auth: { type: 'OAUTH2_CLIENT_CREDENTIALS', token_url: '\${BENCH_TOKEN}', client_id: 'bench', client_secret: '\${BENCH_SECRET}', token_leeway: '500ms' },
  }],
});
`;

function start(args, env = {}) {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], cwd: repo, env: { ...process.env, ...env } });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{') || /http:\/\/127\.0\.0\.1:\d+/.test(l));
      if (line) resolve({ child, line });
    });
    child.on('exit', (code) => reject(new Error(`process exited ${code} before ready: ${out}`)));
  });
}

async function stop(child) {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
function get(url) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    http
      .get(url, { agent }, (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`${url} → ${res.statusCode}`)),
        );
      })
      .on('error', reject);
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

/** Alternate direct and endpoint calls so both see the same machine state. */
async function latencies(direct, endpoint) {
  for (let i = 0; i < WARMUP; i++) {
    await get(direct);
    await get(endpoint);
  }
  const d = [];
  const e = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    d.push(await get(direct));
    e.push(await get(endpoint));
  }
  return { d, e };
}

async function throughput(url, seconds = THROUGHPUT_SECONDS) {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: seconds, pipelining: 1 });
  if (result.non2xx || result.errors) throw new Error(`non-2xx ${result.non2xx}, errors ${result.errors} for ${url}`);
  return result.requests.average;
}

const root = await mkdtemp(path.join(os.tmpdir(), 'hangar-bench-endpoints-'));
let upstreams;
let hangar;
let proxy;
let proxy0;
try {
  upstreams = await start(['-e', UPSTREAMS]);
  const urls = JSON.parse(upstreams.line);
  await mkdir(path.join(root, 'endpoints'), { recursive: true });
  await writeFile(path.join(root, 'endpoints', 'fanout.ts'), FANOUT);
  await writeFile(path.join(root, 'endpoints', 'oauth.ts'), OAUTH);
  await writeFile(path.join(root, 'endpoints', 'fanout0.ts'), FANOUT0);
  hangar = await start([...profileArgs(), path.join(repo, 'bin', 'hangar.mjs'), '--no-window', '--port', '0', '--root', root], {
    BENCH_A: urls.a,
    BENCH_B: urls.b,
    BENCH_C: urls.c,
    BENCH_ZERO: urls.zero,
    BENCH_API: urls.api,
    BENCH_TOKEN: urls.token,
    BENCH_SECRET: 'bench-secret',
  });
  proxy = await start(['-e', BARE_PROXY], { BENCH_A: urls.a, BENCH_B: urls.b, BENCH_C: urls.c });
  proxy0 = await start(['-e', BARE_PROXY], { BENCH_A: urls.zero, BENCH_B: urls.zero, BENCH_C: urls.zero });
  const bareProxy = proxy.line.trim();
  const base = /http:\/\/127\.0\.0\.1:\d+/.exec(hangar.line)[0];
  for (;;) {
    const ready = await fetch(`${base}/readiness`).catch(() => undefined);
    if (ready?.status === 200) break;
    await new Promise((r) => setTimeout(r, 20));
  }

  // 1. Fan-out overhead.
  const endpoint = `${base}/api/v1/endpoints/fanout`;
  const { d, e } = await latencies(urls.c, endpoint);
  const added = median(e) - median(d);
  report({
    name: 'ALL over 3 upstreams vs slowest upstream direct: median latency added',
    value: added,
    unit: 'ms',
    baseline: { label: 'slowest upstream direct', value: median(d) },
    ratio: median(e) / median(d),
    target: { on: 'value', op: '<=', limit: 1, unit: 'ms' },
    detail: `${round(median(e))} ms vs ${round(median(d))} ms (p95 ${round(percentile(e, 95))} vs ${round(percentile(d, 95))}); added ${round(added)} ms`,
  });
  const bare = await latencies(urls.c, bareProxy);
  const floor = median(bare.e) - median(bare.d);
  report({
    name: '(context) bare node:http fan-out process over the same upstreams: median latency added',
    value: floor,
    unit: 'ms',
    ratio: median(bare.e) / median(bare.d),
    detail: `${round(median(bare.e))} ms vs ${round(median(bare.d))} ms; added ${round(floor)} ms (Hangar adds ${round(added - floor)} ms more)`,
  });
  const instant = await latencies(urls.zero, `${base}/api/v1/endpoints/fanout0`);
  const cpu = median(instant.e) - median(instant.d);
  report({
    name: '(context) same fan-out over instant upstreams vs one instant upstream direct: median latency added',
    value: cpu,
    unit: 'ms',
    ratio: median(instant.e) / median(instant.d),
    detail: `${round(median(instant.e))} ms vs ${round(median(instant.d))} ms; added ${round(cpu)} ms`,
  });
  // Throughput over instant upstreams, Hangar and the bare fan-out process alternating, medians
  // of 3 rounds (as the agents benchmark does).
  const instantEndpoint = `${base}/api/v1/endpoints/fanout0`;
  const bareInstant = proxy0.line.trim();
  await throughput(instantEndpoint, 1);
  await throughput(bareInstant, 1);
  const fanned = [];
  const bareFanned = [];
  for (let i = 0; i < 3; i++) {
    fanned.push(await throughput(instantEndpoint));
    bareFanned.push(await throughput(bareInstant));
  }
  report({
    name: `ALL over 3 instant upstreams, throughput (${CONNECTIONS} connections)`,
    value: median(fanned),
    unit: 'req/s',
    baseline: { label: 'bare node:http fan-out process, same upstreams', value: median(bareFanned) },
    target: { on: 'ratio', op: '>=', limit: 0.5 },
    detail: `${round(median(fanned), 0)} req/s vs bare node:http fan-out ${round(median(bareFanned), 0)} req/s, medians of 3 alternating rounds`,
  });

  // 2. OAuth2: warm the cache, let the token expire (1 s lifetime − 0.5 s leeway), then burst.
  const oauth = `${base}/api/v1/endpoints/oauth`;
  await get(oauth);
  const before = (await (await fetch(urls.stats)).json()).tokenRequests;
  await new Promise((r) => setTimeout(r, 1_100));
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENT_OAUTH }, () => get(oauth)));
  const burstMs = performance.now() - started;
  const during = (await (await fetch(urls.stats)).json()).tokenRequests - before;
  report({
    name: `OAuth2: ${CONCURRENT_OAUTH} concurrent calls with an expired token`,
    value: during,
    unit: 'token requests',
    target: { on: 'value', op: '=', limit: 1, unit: 'token request' },
    detail: `${during} token request(s); burst took ${round(burstMs, 0)} ms`,
  });
} finally {
  agent.destroy();
  if (hangar) await stop(hangar.child);
  if (proxy) await stop(proxy.child);
  if (proxy0) await stop(proxy0.child);
  if (upstreams) await stop(upstreams.child);
  await rm(root, { recursive: true, force: true });
}

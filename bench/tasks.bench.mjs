// Task subsystem benchmarks (issue 4), one run, figures against baselines measured in the same run:
//
// 1. Fan-out: one task streams 10,000 events to 200 concurrent SSE subscribers of
//    /api/v1/tasks/{id}/events on the real server. Every subscriber must receive every event, in
//    order, then [DONE]. Baseline: a bare node:http server writing the same frames, in the same
//    bursts, to 200 sockets opened the same way. Reported as events delivered per second and the
//    ratio hangar / baseline.
// 2. Replay: the last 10 events of a finished 10,000-event log over HTTP (Last-Event-ID 9993 →
//    frames 9994…10003 and [DONE]); median of 300 requests, target ≤ 5 ms. Also the same replay
//    straight from the service (no HTTP), and against a bare node:http SSE response for scale.
//
// Subscribers run in a child process so parsing them does not share the server's event loop
// (the machine has two cores: one serves, one reads).
//
// Bundled and run by bench/run.mjs: `npm run bench -- tasks`.
import { fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Logger } from '../core/kernel/log.ts';
import { startServer } from '../core/kernel/server.ts';
import { DONE_FRAME, formatFrame, SSE_HEADERS } from '../core/http/sse.ts';
import { tasksSubsystem } from '../core/tasks/subsystem.ts';
import { median, repo, report, round } from './lib/measure.ts';

const out = path.join(repo, '.hangar', 'bench');
mkdirSync(out, { recursive: true });

const EVENTS = 10_000;
const SUBSCRIBERS = 200;
const BURST = 100;
const REPLAYS = 300;

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

// ---- subscribers (child process) -----------------------------------------------------------------
// Each subscriber checks that ids arrive as 1, 2, 3, … with nothing missing, and ends at [DONE].
const clientScript = path.join(out, 'tasks-sse-clients.mjs');
writeFileSync(
  clientScript,
  `import http from 'node:http';
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
process.on('message', ({ url, subscribers, expected }) => {
  let connected = 0, finished = 0, failures = [];
  const done = () => { if (++finished === subscribers) process.send({ type: 'done', failures }); };
  for (let i = 0; i < subscribers; i++) {
    http.get(url, { agent }, (res) => {
      if (res.statusCode !== 200) { failures.push('status ' + res.statusCode); res.resume(); done(); return; }
      if (++connected === subscribers) process.send({ type: 'ready' });
      res.setEncoding('utf8');
      let rest = '', next = 1, sawDone = false;
      res.on('data', (chunk) => {
        const text = rest + chunk;
        let at = 0, end;
        while ((end = text.indexOf('\\n\\n', at)) >= 0) {
          if (text.startsWith('id: ', at)) {
            const id = Number(text.slice(at + 4, text.indexOf('\\n', at)));
            if (id !== next) failures.push('subscriber ' + i + ': got ' + id + ' expected ' + next);
            next = id + 1;
          } else if (text.startsWith('data: [DONE]', at)) sawDone = true;
          at = end + 2;
        }
        rest = text.slice(at);
      });
      res.on('end', () => {
        if (!sawDone) failures.push('subscriber ' + i + ': no [DONE]');
        if (next - 1 !== expected) failures.push('subscriber ' + i + ': ' + (next - 1) + ' events, expected ' + expected);
        done();
      });
    }).on('error', (err) => { failures.push(String(err)); done(); });
  }
});
`,
);

function subscribe(url, expected) {
  const child = fork(clientScript, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = new Promise((resolve) => child.on('message', (m) => m.type === 'ready' && resolve()));
  const finished = new Promise((resolve) =>
    child.on('message', (m) => {
      if (m.type !== 'done') return;
      resolve({ failures: m.failures, at: performance.now() });
      child.kill();
    }),
  );
  child.send({ url, subscribers: SUBSCRIBERS, expected });
  return { ready, finished };
}

// ---- 1. fan-out through Hangar --------------------------------------------------------------------
const root = mkdtempSync(path.join(os.tmpdir(), 'hangar-bench-tasks-'));
const server = await startServer(
  { root, port: 0, watch: false, requestLog: false, logLevel: 'error', tasks: { eventsPerTask: 20_000 } },
  { subsystems: [tasksSubsystem], logger: new Logger('error') },
);
const tasks = server.ctx.tasks;

let release;
const gate = new Promise((resolve) => (release = resolve));
tasks.registerKind('bench.stream', {
  run: async (ctx) => {
    await gate;
    // A streaming producer: bursts of events, yielding to the event loop between bursts.
    for (let i = 1; i <= EVENTS; i++) {
      ctx.emit({ i, token: 'lorem ipsum dolor' });
      if (i % BURST === 0) await nextTurn();
    }
    return { events: EVENTS };
  },
});

const task = await tasks.submit({ kind: 'bench.stream', target: 'bench', principal: 'local' });
// submitted + working + EVENTS outputs + completed
const expected = EVENTS + 3;
const hangarClients = subscribe(`${server.url}/api/v1/tasks/${task.id}/events`, expected);
await hangarClients.ready;
const hangarStart = performance.now();
release();
const hangarRun = await hangarClients.finished;
const hangarMs = hangarRun.at - hangarStart;

// The exact frames the subscribers got, for the baseline to write.
const { events } = await tasks.replay(task.id, 0);
const frames = events.map((e) => formatFrame(e.seq, tasks.wire(e)));
if (frames.length !== expected) throw new Error(`log holds ${frames.length} events, expected ${expected}`);

// ---- 1b. baseline: the same frames written straight to 200 sockets -------------------------------
const responses = [];
let allConnected;
const connected = new Promise((resolve) => (allConnected = resolve));
const bare = http.createServer((req, res) => {
  res.writeHead(200, SSE_HEADERS);
  res.flushHeaders();
  responses.push(res);
  if (responses.length === SUBSCRIBERS) allConnected();
});
await new Promise((resolve) => bare.listen(0, '127.0.0.1', resolve));
const bareClients = subscribe(`http://127.0.0.1:${bare.address().port}/`, expected);
await connected;
await bareClients.ready;
const bareStart = performance.now();
// Same shape as the task: the two status frames, then bursts of BURST, then the final frame.
for (let i = 0; i < frames.length; i++) {
  for (const res of responses) res.write(frames[i]);
  if (i >= 2 && (i - 1) % BURST === 0) await nextTurn();
}
for (const res of responses) {
  res.write(DONE_FRAME);
  res.end();
}
const bareRun = await bareClients.finished;
const bareMs = bareRun.at - bareStart;
await new Promise((resolve) => bare.close(resolve));

const delivered = SUBSCRIBERS * expected;
const hangarRate = delivered / (hangarMs / 1000);
const bareRate = delivered / (bareMs / 1000);
const failures = [...hangarRun.failures, ...bareRun.failures];
for (const failure of failures.slice(0, 5)) console.log(`  delivery problem: ${failure}`);
report(
  `fan-out: 1 task, ${EVENTS} events, ${SUBSCRIBERS} SSE subscribers (all in order, all [DONE]: ${failures.length === 0 ? 'yes' : 'NO'})`,
  `${Math.round(hangarRate).toLocaleString('en')} events/s delivered in ${round(hangarMs, 0)} ms vs direct socket writes ${Math.round(bareRate).toLocaleString('en')} events/s in ${round(bareMs, 0)} ms`,
  hangarRate / bareRate,
  'every event to every subscriber; ≥ 0.25× direct writes',
  failures.length === 0 && hangarRate / bareRate >= 0.25,
);

// ---- 2. replay of the last 10 events of a 10,000-event log ---------------------------------------
const last = events.at(-1).seq;
const resumeAt = last - 10;
async function timedReplay(url) {
  const started = performance.now();
  const res = await fetch(url, { headers: { 'Last-Event-ID': String(resumeAt) } });
  const text = await res.text();
  const ms = performance.now() - started;
  const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  if (ids.length !== 10 || ids[0] !== resumeAt + 1 || !text.endsWith(DONE_FRAME)) throw new Error(`bad replay: ${ids.join(',')}`);
  return ms;
}
const replayUrl = `${server.url}/api/v1/tasks/${task.id}/events`;
for (let i = 0; i < 20; i++) await timedReplay(replayUrl);
const httpTimes = [];
for (let i = 0; i < REPLAYS; i++) httpTimes.push(await timedReplay(replayUrl));

const serviceTimes = [];
for (let i = 0; i < REPLAYS; i++) {
  const started = performance.now();
  const replay = await tasks.replay(task.id, resumeAt);
  serviceTimes.push(performance.now() - started);
  if (replay.events.length !== 10) throw new Error('service replay returned the wrong events');
}

// Scale: the same ten frames from a bare node:http server (the floor of one HTTP round trip).
const tail = frames.slice(-10).join('') + DONE_FRAME;
const floor = http.createServer((req, res) => {
  res.writeHead(200, SSE_HEADERS);
  res.end(tail);
});
await new Promise((resolve) => floor.listen(0, '127.0.0.1', resolve));
const floorUrl = `http://127.0.0.1:${floor.address().port}/`;
for (let i = 0; i < 20; i++) await timedReplay(floorUrl);
const floorTimes = [];
for (let i = 0; i < REPLAYS; i++) floorTimes.push(await timedReplay(floorUrl));
await new Promise((resolve) => floor.close(resolve));

const replayMs = median(httpTimes);
report(
  `replay: last 10 of a ${last}-event log over HTTP (Last-Event-ID)`,
  `${round(replayMs, 3)} ms median (service alone ${round(median(serviceTimes), 4)} ms) vs bare node:http ${round(median(floorTimes), 3)} ms`,
  replayMs / median(floorTimes),
  '≤ 5 ms median',
  replayMs <= 5,
);

await server.close();
rmSync(root, { recursive: true, force: true });
process.exit(failures.length === 0 ? 0 : 1);

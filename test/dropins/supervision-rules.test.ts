/**
 * The rules of the supervised host (core/kernel/dropin-host.ts) against real host threads: the
 * endpoint kind's worker entry (core/endpoints/handler-worker.ts) running fixture drop-in code, as
 * the server runs it, without the server. Each rule has its near miss beside it: the watchdog
 * against a slow call whose event loop turns, the out-of-memory restart against a second call on
 * the same thread (counted once), a stuck host after an abort against one that lets the call go,
 * the call the host never started (run again, once) against one it had started (not run again).
 * Fast enough for the `supervision` mutation group to run for each mutant (README, Mutation testing).
 */
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import type { HandlerTask } from '../../core/endpoints/hosts.js';
import { DropInHosts, type DropInHostsOptions, HostThread, hostReports } from '../../core/kernel/dropin-host.js';
import { Logger } from '../../core/kernel/log.js';
import { Metrics } from '../../core/kernel/metrics.js';
import type { IoTask } from '../fixtures/dropin-host/io-worker.js';
import { eventually } from '../support/server.js';

const ENTRY = 'core/endpoints/handler-worker.ts';
const FILE = path.resolve('test/fixtures/dropin-host/rules-endpoint.ts');

/**
 * The drop-in, as discovery's bundle would be (CommonJS). Every call but `quiet` ones first tells
 * the server it started (`ctx.call('ran')`), so a test acts on a running call, and counts runs.
 */
const CODE = `
const { threadId } = require('node:worker_threads');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
exports.default = {
  handler: async (input, ctx) => {
    if (!input.quiet) await ctx.call('ran', { id: input.id });
    switch (input.op) {
      case 'echo': return { echo: input.value, threadId, origin: performance.timeOrigin };
      case 'sleep': await sleep(input.ms); return { slept: input.ms, threadId };
      case 'spin': for (;;) {}
      case 'hog': { const keep = []; for (;;) keep.push(new Array(1e5).fill('x'.repeat(8))); }
      case 'honour':
        return await new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => reject(new Error('saw: ' + ctx.signal.reason.message))),
        );
      case 'throw': throw new TypeError('boom');
      case 'ask':
        try { return { answer: await ctx.call('upstream', { n: 1 }) }; } catch (err) { return { caught: err.message }; }
      case 'later': globalThis.ticks = 0; setTimeout(() => { globalThis.ticks++; }, 30); return 'set';
      case 'ticks': return globalThis.ticks;
    }
  },
};
`;

interface Input {
  op: string;
  id?: string;
  quiet?: boolean;
  [key: string]: unknown;
}

const made: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(made.splice(0).map((hosts) => hosts.close()));
});

/** Hosts of the endpoint kind with the watchdog at 400 ms, and what they were told. */
function endpointHosts(options: Partial<DropInHostsOptions> = {}) {
  const restarts: Array<[string, string, string]> = [];
  const warmErrors: Array<[string, unknown]> = [];
  const ran: string[] = [];
  /** Every ctx call the server was asked to answer, as [method, first argument]. */
  const asked: Array<[string, unknown]> = [];
  const hosts = new DropInHosts<HandlerTask>({
    kind: 'endpoint',
    entry: ENTRY,
    watchdogMs: 400,
    onRestart: (name, reason, detail) => restarts.push([name, reason, detail]),
    onWarmError: (name, err) => warmErrors.push([name, err]),
    ...options,
  });
  made.push(hosts);
  const run = (
    name: string,
    input: Input,
    {
      signal = new AbortController().signal,
      heapMb = 128,
      upstream,
    }: { signal?: AbortSignal; heapMb?: number; upstream?: () => Promise<unknown> } = {},
  ) =>
    hosts.run({
      name,
      heapMb,
      code: CODE,
      signal,
      task: { name, file: FILE, hash: 'a1b2c3', method: 'POST', upstreams: [], input },
      onCall: async (method, args) => {
        asked.push([method, (args as unknown[] | undefined)?.[0]]);
        const [what, options] = args as [string, { id?: string }];
        if (method === 'call' && what === 'ran') {
          ran.push(options.id ?? '?');
          return { result: { ok: true } };
        }
        if (upstream) return upstream();
        throw new Error(`no ${method} '${what}' in this test`);
      },
    });
  const started = (id: string) => eventually(() => ran.includes(id), 20_000);
  const statusOf = (name: string) => hosts.status().find((s) => s.name === name);
  return { hosts, run, ran, asked, started, restarts, warmErrors, statusOf };
}

/** The ids of the worker threads that exit from now on (Node clears a thread's id when it exits). */
function threadExits() {
  const ids: number[] = [];
  const started: number[] = [];
  const onWorker = (worker: Worker) => {
    const { threadId } = worker;
    started.push(threadId);
    worker.once('exit', () => ids.push(threadId));
  };
  process.on('worker', onWorker);
  made.push({ close: async () => void process.off('worker', onWorker) });
  return { ids, started };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A promise's outcome, to assert on its error. */
const settle = <T>(promise: Promise<T>): Promise<{ value?: T; error?: Error & { code?: string } }> =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error: error as Error & { code?: string } }),
  );

describe('a host runs its calls and reports them', () => {
  it('answers a call once, counts it running while it runs, and starts with nothing to report', async () => {
    const { hosts, run, ran, asked } = endpointHosts();
    expect(hosts.kind).toBe('endpoint');
    const slow = run('calls', { op: 'sleep', ms: 600, id: 'slow' });
    const other = run('calls', { op: 'sleep', ms: 500, id: 'other' });
    await eventually(() => ran.length === 2, 20_000);
    expect(hosts.status()).toEqual([
      { kind: 'endpoint', name: 'calls', heap_mb: 128, ready: false, running: 2, restarts: 0, out_of_memory: 0, last_restart: null },
    ]);
    const [a, b] = (await Promise.all([slow, other])) as Array<{ slept: number; threadId: number }>;
    expect([a!.slept, b!.slept]).toEqual([600, 500]);
    // Both on the one thread of the host, at once.
    expect(a!.threadId).toBe(b!.threadId);
    expect(await run('calls', { op: 'echo', value: [1, 'two'], id: 'echo' })).toMatchObject({ echo: [1, 'two'], threadId: a!.threadId });
    // Each ran once, and the host's heartbeats were not taken for calls.
    expect(ran.sort()).toEqual(['echo', 'other', 'slow']);
    expect(asked).toEqual([
      ['call', 'ran'],
      ['call', 'ran'],
      ['call', 'ran'],
    ]);
    // Past the watchdog's 400 ms after the calls ended: nothing watches them any more.
    await sleep(600);
    expect(hosts.status()[0]).toMatchObject({ running: 0, restarts: 0, out_of_memory: 0, last_restart: null });
  });

  it("passes the drop-in's error, its ctx calls' answers and failures, and lists hosts by name", async () => {
    const { hosts, run } = endpointHosts();
    const thrown = await settle(run('b-errors', { op: 'throw', quiet: true }));
    expect(thrown.error).toBeInstanceOf(Error);
    expect(thrown.error).toMatchObject({ name: 'TypeError', message: 'boom' });
    expect(await run('a-asks', { op: 'ask', quiet: true }, { upstream: async () => ({ result: { ok: true }, data: { n: 2 } }) })).toEqual({
      answer: { n: 2 },
    });
    expect(await run('a-asks', { op: 'ask', quiet: true }, { upstream: () => Promise.reject(new Error('upstream down')) })).toEqual({
      caught: 'upstream down',
    });
    // A kind that answers no ctx call: the drop-in's call fails, named.
    const bare = await hosts.run({
      name: 'a-asks',
      heapMb: 128,
      code: CODE,
      signal: new AbortController().signal,
      task: { name: 'a-asks', file: FILE, hash: 'a1b2c3', method: 'POST', upstreams: [], input: { op: 'ask', quiet: true } },
    });
    expect(bare).toEqual({ caught: "unknown host call 'call'" });
    expect(hosts.status().map((s) => [s.name, s.restarts])).toEqual([
      ['a-asks', 0],
      ['b-errors', 0],
    ]);
    // Forgetting a drop-in that has no host is nothing.
    expect(() => hosts.forget('never-ran')).not.toThrow();
  });

  it("takes the drop-in's posts, or drops them when the kind takes none", async () => {
    const posts: unknown[][] = [];
    const hosts = new DropInHosts<IoTask>({ kind: 'probe', entry: 'test/fixtures/dropin-host/io-worker.ts', watchdogMs: 400 });
    made.push(hosts);
    const value = await hosts.run({
      name: 'poster',
      heapMb: 128,
      signal: new AbortController().signal,
      code: `exports.run = async (input, io) => { io.post('progress', [1, input.of]); io.post('progress', [2, input.of]); return 'posted'; };`,
      task: { name: 'poster', file: FILE, hash: 'd4', input: { of: 2 } },
      onPost: (method, args) => posts.push([method, ...args]),
      onCall: () => Promise.reject(new Error('no calls here')),
    });
    expect(value).toBe('posted');
    expect(posts).toEqual([
      ['progress', 1, 2],
      ['progress', 2, 2],
    ]);
    // A kind that takes no reports: the posts are dropped, the call answers.
    const unheard = await hosts.run({
      name: 'poster',
      heapMb: 128,
      signal: new AbortController().signal,
      code: `exports.run = async (input, io) => { io.post('progress', [1]); return 'unheard'; };`,
      task: { name: 'poster', file: FILE, hash: 'e5', input: {} },
    });
    expect(unheard).toBe('unheard');
  });

  it("keeps a host's event loop turning between calls: a timer a call left behind fires", async () => {
    const { run } = endpointHosts();
    expect(await run('timers', { op: 'later', quiet: true })).toBe('set');
    await sleep(300);
    expect(await run('timers', { op: 'ticks', quiet: true })).toBe(1);
  });
});

describe('the watchdog', () => {
  it('restarts a host silent past watchdogMs, fails its call saying so, and counts it; a slow call whose loop turns is let be', async () => {
    const { hosts, run, started, restarts, statusOf } = endpointHosts();
    // Near miss: three times the watchdog, but the host's event loop turns (it says it is alive).
    expect(await run('loops', { op: 'sleep', ms: 1_200, id: 'slow' })).toMatchObject({ slept: 1_200 });
    expect(statusOf('loops')).toMatchObject({ restarts: 0, last_restart: null });

    const before = Date.now();
    const stuck = settle(run('loops', { op: 'spin', id: 'spin' }));
    await started('spin');
    const { error } = await stuck;
    const message = "endpoint 'loops' stopped answering: its host's event loop was blocked for more than 400 ms, so the host was restarted";
    expect(error).toMatchObject({ code: 'HANGAR_DROPIN_UNRESPONSIVE', message });
    expect(restarts).toEqual([['loops', 'unresponsive', message]]);
    const status = statusOf('loops')!;
    expect(status).toMatchObject({ running: 0, restarts: 1, out_of_memory: 0, last_restart: { reason: 'unresponsive', detail: message } });
    const at = Date.parse(status.last_restart!.at);
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now());
    expect(status.last_restart!.at).toBe(new Date(at).toISOString());

    // The next call runs on the new thread; the restart is not counted again.
    expect(await run('loops', { op: 'echo', value: 'after', id: 'after' })).toMatchObject({ echo: 'after' });
    expect(hosts.status()).toHaveLength(1);
    expect(statusOf('loops')).toMatchObject({ restarts: 1, running: 0 });
    // Its successor was started ahead of that call: the host is ready.
    await eventually(() => statusOf('loops')?.ready);
  });

  it('runs again once, on the new thread, a call the stuck host never started; one it had started is not run again', async () => {
    const { run, ran, started, statusOf } = endpointHosts();
    const begun = settle(run('queue', { op: 'sleep', ms: 5_000, id: 'begun' }));
    await started('begun');
    const stuck = settle(run('queue', { op: 'spin', id: 'spin' }));
    await started('spin');
    // Sent to the thread while its event loop is stuck: the host never starts it.
    const waiting = run('queue', { op: 'echo', value: 'w', id: 'waiting' });

    expect((await stuck).error).toMatchObject({ code: expect.stringMatching(/^HANGAR_DROPIN_(UNRESPONSIVE|HOST_RESTARTED)$/) });
    const begunOutcome = (await begun).error;
    expect(begunOutcome?.code).toMatch(/^HANGAR_DROPIN_(UNRESPONSIVE|HOST_RESTARTED)$/);
    expect(begunOutcome?.message).toContain("endpoint 'queue'");
    const answer = (await waiting) as { echo: string };
    expect(answer.echo).toBe('w');
    // One restart for the one stuck thread, whichever call's watchdog saw it first.
    expect(statusOf('queue')).toMatchObject({ restarts: 1, running: 0, last_restart: { reason: 'unresponsive' } });
    expect(ran.filter((id) => id === 'waiting')).toHaveLength(1);
    expect(ran.filter((id) => id === 'begun')).toHaveLength(1);
  });
});

describe('the heap cap', () => {
  it('fails a call past the cap with out of memory, counts the restart once for every call on the thread, and the next call runs', async () => {
    // A watchdog far away: a thread collecting at its cap can be silent for a while on a loaded machine.
    const { run, started, restarts, statusOf } = endpointHosts({ watchdogMs: 60_000 });
    const exits = threadExits();
    const other = settle(run('hog', { op: 'sleep', ms: 10_000, id: 'other' }, { heapMb: 64 }));
    await started('other');
    const hog = await settle(run('hog', { op: 'hog', id: 'hog' }, { heapMb: 64 }));
    const beside = await other;
    // The thread's death fails both calls: whichever the pool reports first fails out of memory and
    // restarts the host, which fails the other saying why.
    const outcomes = [hog.error, beside.error].map((e) => [e?.code, e?.message]).sort();
    expect(outcomes).toEqual([
      ['HANGAR_DROPIN_HOST_RESTARTED', "endpoint 'hog' was stopped: its host was restarted (out of memory: endpoint hog exceeded 64 MB)"],
      ['HANGAR_DROPIN_OUT_OF_MEMORY', 'out of memory: endpoint hog exceeded 64 MB'],
    ]);
    expect(restarts).toEqual([['hog', 'out_of_memory', 'out of memory: endpoint hog exceeded 64 MB']]);
    expect(statusOf('hog')).toMatchObject({
      heap_mb: 64,
      running: 0,
      restarts: 1,
      out_of_memory: 1,
      last_restart: { reason: 'out_of_memory', detail: 'out of memory: endpoint hog exceeded 64 MB' },
    });
    const next = (await run('hog', { op: 'echo', value: 1, id: 'next' }, { heapMb: 64 })) as { echo: number; threadId: number };
    expect(next.echo).toBe(1);

    // A new cap takes a new host, which keeps the counts; the old one's thread stops.
    const bigger = (await run('hog', { op: 'echo', value: 2, id: 'bigger' }, { heapMb: 96 })) as { echo: number; threadId: number };
    expect(bigger.echo).toBe(2);
    expect(bigger.threadId).not.toBe(next.threadId);
    expect(statusOf('hog')).toMatchObject({ heap_mb: 96, restarts: 1, out_of_memory: 1, last_restart: { reason: 'out_of_memory' } });
    await eventually(() => exits.ids.includes(next.threadId), 20_000);
  });
});

describe('cancellation', () => {
  it('answers an aborted call whose host is in a synchronous loop within the grace, stops that host, and the next call works', async () => {
    // No onRestart: the restart is only counted.
    const { run, started, statusOf } = endpointHosts({ watchdogMs: 60_000, onRestart: undefined });
    const controller = new AbortController();
    const stuck = settle(run('spins', { op: 'spin', id: 'spin' }, { signal: controller.signal }));
    await started('spin');
    const reason = new Error('the deadline passed');
    const at = performance.now();
    controller.abort(reason);
    const { error } = await stuck;
    expect(error).toBe(reason);
    expect(performance.now() - at).toBeLessThan(1_500);
    const detail = "a call of endpoint 'spins' ignored its cancellation and was stopped";
    expect(statusOf('spins')).toMatchObject({ running: 0, restarts: 1, out_of_memory: 0, last_restart: { reason: 'stopped', detail } });
    expect(await run('spins', { op: 'echo', value: 'next', id: 'next' })).toMatchObject({ echo: 'next' });
  });

  it("lets a call go whose host's loop turns: no restart, the same thread serves the next call", async () => {
    const { run, started, restarts, statusOf } = endpointHosts({ watchdogMs: 60_000 });
    const first = (await run('lets-go', { op: 'echo', value: 0, id: 'first' })) as { threadId: number };
    const controller = new AbortController();
    const ignoring = settle(run('lets-go', { op: 'sleep', ms: 5_000, id: 'ignores' }, { signal: controller.signal }));
    await started('ignores');
    const reason = new Error('cancelled by the caller');
    const at = performance.now();
    controller.abort(reason);
    expect((await ignoring).error).toBe(reason);
    expect(performance.now() - at).toBeLessThan(1_500);

    // The call that honours its signal ends with its own outcome, told the abort's reason.
    const honouring = new AbortController();
    const honours = settle(run('lets-go', { op: 'honour', id: 'honours' }, { signal: honouring.signal }));
    await started('honours');
    honouring.abort(new Error('stop now'));
    expect((await honours).error).toMatchObject({ message: 'saw: stop now' });
    // A reason that is not an Error reaches the host as the generic one.
    const plain = new AbortController();
    const plainly = settle(run('lets-go', { op: 'honour', id: 'plain' }, { signal: plain.signal }));
    await started('plain');
    plain.abort(null);
    expect((await plainly).error).toMatchObject({ message: 'saw: the call was cancelled' });

    // Past twice the grace: still no restart.
    await sleep(400);
    expect(restarts).toEqual([]);
    expect(statusOf('lets-go')).toMatchObject({ restarts: 0, running: 0, last_restart: null });
    const next = (await run('lets-go', { op: 'echo', value: 1, id: 'next' })) as { threadId: number };
    expect(next.threadId).toBe(first.threadId);
  });

  it('fails a call aborted before it began at once, without running it', async () => {
    const { run, ran, statusOf } = endpointHosts();
    const reason = new Error('already gone');
    const { error } = await settle(run('early', { op: 'echo', value: 1, id: 'early' }, { signal: AbortSignal.abort(reason) }));
    expect(error).toBe(reason);
    await sleep(300);
    expect(ran).toEqual([]);
    expect(statusOf('early')).toMatchObject({ running: 0, restarts: 0 });
  });
});

describe('starting and stopping hosts', () => {
  it('starts a host ahead of its first call, stops it when idle, and starts it again on the next call', async () => {
    const { hosts, run, statusOf, warmErrors } = endpointHosts({ idleTimeoutMs: 300 });
    hosts.prepare('idles', 128);
    expect(statusOf('idles')).toMatchObject({ ready: false, running: 0 });
    await eventually(() => statusOf('idles')?.ready, 20_000);
    // Idle past its timeout: the thread stopped.
    await eventually(() => statusOf('idles')?.ready === false, 20_000);
    expect(await run('idles', { op: 'echo', value: 'again', id: 'again' })).toMatchObject({ echo: 'again' });
    expect(statusOf('idles')).toMatchObject({ ready: true, restarts: 0, last_restart: null });
    expect(warmErrors).toEqual([]);
  });

  it('tells onWarmError when a host cannot start ahead of its first call', async () => {
    const { hosts, warmErrors } = endpointHosts({ entry: 'test/fixtures/worker-pool/broken-entry.ts' });
    hosts.prepare('broken', 128);
    await eventually(() => warmErrors.length > 0, 20_000);
    expect(warmErrors).toHaveLength(1);
    expect(warmErrors[0]![0]).toBe('broken');
    expect(String((warmErrors[0]![1] as Error).message)).toContain('broken-entry fails at load');
    expect(hosts.status()[0]).toMatchObject({ name: 'broken', ready: false });

    // Hosts start one after another: one that fails with nobody to tell holds up none after it.
    const brokenThread = new HostThread('endpoint', 'broken-thread', 128, 'test/fixtures/worker-pool/broken-entry.ts', 60_000);
    made.push(brokenThread);
    brokenThread.warm();
    const untold = new DropInHosts<HandlerTask>({ kind: 'endpoint', entry: 'test/fixtures/worker-pool/broken-entry.ts', watchdogMs: 400 });
    made.push(untold);
    untold.prepare('untold', 128);
    const { hosts: fine, statusOf } = endpointHosts();
    fine.prepare('after', 128);
    await eventually(() => statusOf('after')?.ready, 20_000);
  });

  it('lets a forgotten host finish its calls, then stops its thread; close fails what still runs', async () => {
    const exits = threadExits();
    const { hosts, run, started, statusOf } = endpointHosts();
    const finishing = run('gone', { op: 'sleep', ms: 400, id: 'finishing' });
    await started('finishing');
    hosts.forget('gone');
    expect(statusOf('gone')).toBeUndefined();
    const { threadId } = (await finishing) as { threadId: number };
    await eventually(() => exits.ids.includes(threadId), 20_000);

    // Closing: a call still running fails, with the pool's own error, and no restart is counted.
    const closing = settle(run('closes', { op: 'sleep', ms: 5_000, id: 'closing' }));
    await started('closing');
    await hosts.close();
    const { error } = await closing;
    expect(error).toBeInstanceOf(Error);
    expect(error?.code).toBeUndefined();
    expect(hosts.status()).toEqual([]);
  });
});

describe('the spare thread', () => {
  it('is kept once a host has restarted, one at a time, and takes over at its next restart', async () => {
    // HostThread as the agents' supervisor drives it: the caller stops the thread and says so.
    const thread = new HostThread('endpoint', 'spare', 128, ENTRY, 60_000);
    made.push(thread);
    thread.warm();
    await eventually(() => thread.status().ready, 20_000);
    expect(thread.spare).toBeUndefined();
    const exits = threadExits();
    // Two restarts in a row, no spare yet: counted once per generation, the same pool starts its
    // successor (ready again shortly), and one spare follows, not two.
    const first = thread.pool;
    expect(thread.restarted(0, 'stopped', 'first')).toBe(true);
    expect(thread.restarted(0, 'stopped', 'first again')).toBe(false);
    expect(thread.status()).toMatchObject({ ready: false, restarts: 1, last_restart: { reason: 'stopped', detail: 'first' } });
    expect(thread.restarted(1, 'stopped', 'second')).toBe(true);
    expect(thread.pool).toBe(first);
    await eventually(() => thread.status().ready, 20_000);
    await eventually(() => (thread.spare?.threads ?? 0) > 0, 20_000);
    await sleep(300);
    expect(exits.started).toHaveLength(1);
    const spare = thread.spare!;

    // The next restart: the spare takes over at once, the stopped pool is closed, a new spare follows.
    expect(thread.restarted(2, 'unresponsive', 'third')).toBe(true);
    expect(thread.pool).toBe(spare);
    expect(thread.status()).toMatchObject({ ready: true, restarts: 3, out_of_memory: 0, last_restart: { reason: 'unresponsive' } });
    await eventually(() => first.threads === 0, 20_000);
    await eventually(() => (thread.spare?.threads ?? 0) > 0 && thread.spare !== spare, 20_000);
    const next = thread.spare!;

    // Retired (forgotten, or replaced by a new cap): its threads stop, the spare's too, and nothing starts again.
    await thread.retire();
    expect(thread.spare).toBeUndefined();
    await eventually(() => spare.threads === 0 && next.threads === 0, 20_000);
    expect(thread.restarted(3, 'out_of_memory', 'fourth')).toBe(true);
    expect(thread.status()).toMatchObject({ ready: false, restarts: 4, out_of_memory: 1 });
    await sleep(600);
    expect(thread.spare).toBeUndefined();
    expect(thread.status().ready).toBe(false);
    expect(thread.pool.threads).toBe(0);
  });
});

describe('a spare without a thread', () => {
  it('is not taken over: the host starts a thread of its own', async () => {
    // An entry that fails at load: the spare's warm fails and leaves it no thread.
    const thread = new HostThread('endpoint', 'no-spare', 128, 'test/fixtures/worker-pool/broken-entry.ts', 60_000);
    made.push(thread);
    const first = thread.pool;
    expect(thread.restarted(0, 'stopped', 'first')).toBe(true);
    await eventually(() => thread.spare !== undefined, 20_000);
    const spare = thread.spare!;
    await sleep(500);
    expect(spare.threads).toBe(0);
    expect(thread.restarted(1, 'stopped', 'second')).toBe(true);
    expect(thread.pool).toBe(first);
    expect(thread.status()).toMatchObject({ ready: false, restarts: 2 });
    // Closed: a restart after it (a call the close failed) prepares no spare.
    await thread.close();
    expect(thread.restarted(2, 'stopped', 'after close')).toBe(true);
    await sleep(600);
    expect(thread.spare).toBeUndefined();
  });
});

describe('how hosts report', () => {
  it('counts a restart in /metrics and logs it, and logs a host that did not start ahead of its first call', async () => {
    const lines: string[] = [];
    const log = new Logger('info', (line) => lines.push(line));
    const metrics = new Metrics();
    const reports = hostReports({ log, metrics }, 'ingestor');
    reports.onRestart('reader', 'out_of_memory');
    reports.onWarmError('reader', new Error('no thread'));
    expect(await metrics.registry.metrics()).toContain(
      'dropin_host_restarts_total{kind="ingestor",name="reader",reason="out_of_memory"} 1',
    );
    expect(log.records().map((r) => [r.level, r.message, r.fields])).toEqual([
      ['warn', 'ingestor host restarted: reader (out of memory)', {}],
      ['warn', 'ingestor host of reader did not start ahead of its first call', { error: 'no thread' }],
    ]);
  });
});

/**
 * Team mode, events across instances: an invoke stream or a studio run on instance A, replayed and
 * followed on instance B. Two real `hangar` processes (bin/hangar.mjs) on one real PostgreSQL, each
 * with its own copy of the workspace, and a scripted model that streams its answer token by token.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { PostgresStore } from '../../core/storage/postgres-store.js';
import { type CliProcess, runCli, stopAll } from '../support/cli.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';
import { agentSource, makeWorkspace } from '../support/server.js';
import { readSse, type SseFrame } from '../support/sse.js';

const ALICE = { authorization: 'Bearer tok-alice' };
const BOB = { authorization: 'Bearer tok-bob' };
/** Small, so the retention rules can be seen at work across the team. */
const RETAIN = 3;
const TTL_SECONDS = 6;
const TOKENS = ['one ', 'two ', 'three ', 'four ', 'five ', 'six ', 'seven ', 'eight ', 'nine ', 'ten'];

const FILES = {
  'hangar.config.json': JSON.stringify({ auth: { tokens: { alice: 'tok-alice', bob: 'tok-bob' } } }),
  'agents/talker.ts': agentSource(`{
    requiresModel: true,
    run: async (input, ctx) => ctx.model.chat([{ role: 'user', content: input.query }]),
  }`),
  'agents/other.ts': agentSource(`{ run: async () => 'other' }`),
  'agents/slow-steps.ts': agentSource(`{
    graph: {
      nodes: {
        first: async () => { await new Promise((r) => setTimeout(r, 3000)); return { response: 'first' }; },
        second: async () => { await new Promise((r) => setTimeout(r, 3000)); return { response: 'second' }; },
        third: async () => { await new Promise((r) => setTimeout(r, 3000)); return { response: 'third' }; },
      },
      edges: [{ from: 'first', to: 'second' }, { from: 'second', to: 'third' }],
      entry: 'first',
    },
  }`),
  'agents/steps.ts': agentSource(`{
    graph: {
      nodes: {
        first: async () => { await new Promise((r) => setTimeout(r, 300)); return { response: 'first' }; },
        second: async () => { await new Promise((r) => setTimeout(r, 300)); return { response: 'second' }; },
        third: async () => { await new Promise((r) => setTimeout(r, 300)); return { response: 'third' }; },
      },
      edges: [{ from: 'first', to: 'second' }, { from: 'second', to: 'third' }],
      entry: 'first',
    },
  }`),
};

interface Instance {
  proc: CliProcess;
  url: string;
}

let postgres: TestPostgres;
let databaseUrl: string;
let model: FakeOpenAI;
let a: Instance;
let b: Instance;

async function startInstance(databaseUrl: string): Promise<Instance> {
  const root = await makeWorkspace(FILES);
  const proc = runCli(['--no-window', '--root', root, '--port', '0'], {
    env: {
      HANGAR_STORAGE__URL: databaseUrl,
      HANGAR_MODEL__BASE_URL: model.baseUrl,
      HANGAR_MODEL__MODEL: 'fake-1',
      HANGAR_MODEL__RETRIES: '0',
      HANGAR_TEAM__HEARTBEAT_SECONDS: '10',
      HANGAR_STREAMS__RETAIN: String(RETAIN),
      HANGAR_STREAMS__TTL_SECONDS: String(TTL_SECONDS),
    },
  });
  const ready = await proc.line(/ready at/);
  return { proc, url: /http:\/\/[\d.]+:\d+/.exec(ready)![0] };
}

const ids = (frames: SseFrame[]) => frames.map((f) => Number(f.id));
const oneToN = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

/** Open a POST stream and hand back its stream id as soon as the headers arrive, with the rest of the read. */
async function startStream(on: Instance, agent: string, query: string) {
  const res = await fetch(`${on.url}/api/v1/${agent}/invoke/stream`, {
    method: 'POST',
    headers: { ...ALICE, 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  expect(res.status).toBe(200);
  const id = res.headers.get('x-stream-id')!;
  const rest = res.text();
  return { id, rest };
}

beforeAll(async () => {
  postgres = await startPostgres();
  model = await startFakeOpenAI(() => ({ chunks: TOKENS, chunkDelayMs: 40 }));
  databaseUrl = await postgres.database();
  a = await startInstance(databaseUrl);
  b = await startInstance(databaseUrl);
}, 120_000);
afterAll(async () => {
  stopAll();
  await model?.close();
  await postgres?.stop();
});

describe('team mode: invoke streams and studio runs from any instance', () => {
  it('SSE replay on B of a stream run on A: every frame from the start, then after a Last-Event-ID, in order, ending with [DONE]', async () => {
    const onA = await readSse(`${a.url}/api/v1/talker/invoke/stream`, { json: { query: 'count' }, headers: ALICE });
    expect(onA.done).toBe(true);
    const id = onA.headers.get('x-stream-id')!;
    expect(ids(onA.frames)).toEqual(oneToN(onA.frames.length));
    expect(onA.frames.filter((f) => f.data.event === 'token')).toHaveLength(TOKENS.length);

    const fromStart = await readSse(`${b.url}/api/v1/talker/invoke/stream/${id}`, { headers: ALICE });
    expect(fromStart.status).toBe(200);
    expect(fromStart.done).toBe(true);
    expect(fromStart.frames).toEqual(onA.frames);
    expect(fromStart.frames.at(-1)!.data).toMatchObject({ event: 'complete', response: TOKENS.join('') });

    const resumed = await readSse(`${b.url}/api/v1/talker/invoke/stream/${id}`, { headers: { ...ALICE, 'last-event-id': '4' } });
    expect(resumed.done).toBe(true);
    expect(ids(resumed.frames)).toEqual(oneToN(onA.frames.length).slice(4));
    const since = await readSse(`${b.url}/api/v1/talker/invoke/stream/${id}?since=${onA.frames.length}`, { headers: ALICE });
    expect(since).toMatchObject({ done: true, frames: [] });
  });

  it('a long answer is stored as differences (not the answer so far per token) and replays whole on B from any point', async () => {
    const long = Array.from({ length: 250 }, (_, i) => `w${i} `);
    model.enqueue({ chunks: long });
    const onA = await readSse(`${a.url}/api/v1/talker/invoke/stream`, { json: { query: 'long' }, headers: ALICE });
    const id = onA.headers.get('x-stream-id')!;
    expect(onA.frames.at(-1)!.data).toMatchObject({ event: 'complete', response: long.join('') });
    for (const since of [0, 99, 150, onA.frames.length - 2]) {
      const replayed = await readSse(`${b.url}/api/v1/talker/invoke/stream/${id}?since=${since}`, { headers: ALICE });
      expect(replayed.done).toBe(true);
      expect(replayed.frames).toEqual(onA.frames.slice(since));
    }
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query(
        `SELECT count(*) FILTER (WHERE frame ? 'response') AS whole, sum(length(frame::text)) AS bytes
           FROM hangar_invoke_stream_frames WHERE stream_id = $1`,
        [id],
      );
      // start, complete, a step, and one token frame in a hundred are whole.
      expect(Number(rows[0].whole)).toBeLessThan(10);
      expect(Number(rows[0].bytes)).toBeLessThan(JSON.stringify(onA.frames.map((f) => f.data)).length / 10);
    } finally {
      await db.end();
    }
  });

  it('a reader on B follows a stream while A is still producing it, through its last frame and [DONE]', async () => {
    const started = await startStream(a, 'talker', 'follow');
    const followed = await readSse(`${b.url}/api/v1/talker/invoke/stream/${started.id}`, { headers: ALICE });
    const onA = await started.rest;
    expect(followed.done).toBe(true);
    expect(ids(followed.frames)).toEqual(oneToN(followed.frames.length));
    expect(followed.frames.map((f) => f.data.event)).toEqual(['start', ...TOKENS.map(() => 'token'), 'step', 'complete']);
    expect(followed.frames.filter((f) => f.data.event === 'token').map((f) => f.data.delta)).toEqual(TOKENS);
    // What A sent its own client is what B relayed, frame for frame.
    expect(onA.match(/^id: \d+$/gm)).toHaveLength(followed.frames.length);
    // Nothing was re-run for the readers on B: one model call per stream.
    expect(model.requests.filter((r) => r.body.messages.at(-1)!.content === 'follow')).toHaveLength(1);
  });

  it('on B, another principal, another agent or an unknown id get the same 404', async () => {
    const started = await startStream(a, 'talker', 'private');
    await started.rest;
    const asBob = await readSse(`${b.url}/api/v1/talker/invoke/stream/${started.id}`, { headers: BOB });
    const otherAgent = await readSse(`${b.url}/api/v1/other/invoke/stream/${started.id}`, { headers: ALICE });
    const unknown = await readSse(`${b.url}/api/v1/talker/invoke/stream/no-such-stream`, { headers: ALICE });
    for (const read of [asBob, otherAgent]) {
      expect(read.status).toBe(404);
      expect(read.body).toEqual({ ...unknown.body, detail: unknown.body.detail.replace('no-such-stream', started.id) });
    }
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('HANGAR_AGENT_STREAM_NOT_FOUND');
  });

  it('streams.retain and streams.ttlSeconds hold across the team: past either, a stream is a 404 on B and its rows are deleted', async () => {
    const made: string[] = [];
    for (let i = 0; i <= RETAIN; i++) {
      const started = await startStream(a, 'other', `kept ${i}`);
      await started.rest;
      made.push(started.id);
    }
    const replayOnB = (id: string) => readSse(`${b.url}/api/v1/other/invoke/stream/${id}`, { headers: ALICE });
    // One of RETAIN + 1 finished streams is past the count: the oldest by when its end reached the
    // database, once the newest one's end is stored (a moment after its client got [DONE] from A).
    // That is not always the first one started: a stream's end is written behind its client's
    // [DONE], so on a loaded machine the next stream's end can be stored first (a CI run on Node 26
    // saw the first stream still served after 5 s). Polled for less than the time to live.
    const replays = () => Promise.all(made.map(async (id) => ({ id, read: await replayOnB(id) })));
    let seen = await replays();
    for (let tries = 0; !seen.some((s) => s.read.status === 404) && tries < 30; tries++) {
      await new Promise((r) => setTimeout(r, 100));
      seen = await replays();
    }
    const gone = seen.filter((s) => s.read.status === 404).map((s) => s.id);
    expect(gone).toHaveLength(1);
    for (const { id, read } of seen) if (id !== gone[0]) expect(read.done).toBe(true);
    const oldest = gone[0]!;
    const newest = made.filter((id) => id !== oldest).at(-1)!;
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      const stored = async (id: string) =>
        Number((await db.query('SELECT count(*) AS n FROM hangar_invoke_stream_frames WHERE stream_id = $1', [id])).rows[0].n) +
        Number((await db.query('SELECT count(*) AS n FROM hangar_invoke_streams WHERE id = $1', [id])).rows[0].n);
      expect(await stored(newest)).toBeGreaterThan(0);
      // Pruning runs (at most once a second per instance) when a stream is opened or looked up.
      for (let tries = 0; (await stored(oldest)) > 0 && tries < 50; tries++) {
        await new Promise((r) => setTimeout(r, 200));
        await replayOnB(oldest);
      }
      expect(await stored(oldest)).toBe(0);
      // Past the time to live, the newest is gone too.
      await new Promise((r) => setTimeout(r, TTL_SECONDS * 1000 + 500));
      expect((await replayOnB(newest)).status).toBe(404);
      for (let tries = 0; (await stored(newest)) > 0 && tries < 50; tries++) {
        await new Promise((r) => setTimeout(r, 200));
        await replayOnB(newest);
      }
      expect(await stored(newest)).toBe(0);
    } finally {
      await db.end();
    }
  });

  it('a studio run on A is followed on B: its stored events, then the live ones, through done and [DONE]', async () => {
    const res = await fetch(`${a.url}/studio/agents/steps/runs/stream`, {
      method: 'POST',
      headers: { ...ALICE, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'go' }),
    });
    expect(res.status).toBe(200);
    const runId = res.headers.get('x-studio-run-id')!;
    const onA = res.text();
    const followed = await readSse(`${b.url}/studio/agents/steps/runs/${runId}/stream`, { headers: ALICE });
    await onA;
    expect(followed.done).toBe(true);
    expect(ids(followed.frames)).toEqual(oneToN(followed.frames.length));
    const nodes = followed.frames.filter((f) => f.data.type === 'node_end').map((f) => f.data.node);
    expect(nodes).toEqual(['first', 'second', 'third']);
    expect(followed.frames.at(-1)!.data).toMatchObject({ type: 'done', status: 'completed' });
    // The stored run agrees, and a resume point on B replays after it.
    const resumed = await readSse(`${b.url}/studio/agents/steps/runs/${runId}/stream`, { headers: { ...ALICE, 'last-event-id': '2' } });
    expect(ids(resumed.frames)).toEqual(ids(followed.frames).slice(2));
    expect((await readSse(`${b.url}/studio/agents/steps/runs/${runId}/stream`, { headers: BOB })).status).toBe(404);
  });

  it('an instance starting while a studio run executes on another leaves it alone; a run whose instance stopped is marked failed', async () => {
    const res = await fetch(`${a.url}/studio/agents/slow-steps/runs/stream`, {
      method: 'POST',
      headers: { ...ALICE, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'slow' }),
    });
    const runId = res.headers.get('x-studio-run-id')!;
    const onA = res.text();
    const followed = readSse(`${b.url}/studio/agents/slow-steps/runs/${runId}/stream`, { headers: ALICE, timeoutMs: 60_000 });
    // A third instance starts (and recovers runs left executing) while the run is on its first node.
    const c = await startInstance(databaseUrl);
    await onA;
    const events = (await followed).frames.map((f) => f.data);
    expect(events.filter((e) => e.type === 'run_error')).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: 'done', status: 'completed' });
    c.proc.child.kill('SIGTERM');

    // A run left `running` by an instance no longer listed (it died) is ended by a live instance's sweep.
    const store = new PostgresStore(databaseUrl);
    try {
      const runs = store.collection<Record<string, unknown>>('studio_runs');
      const stored = (await runs.get(runId))!;
      const orphan = {
        ...stored,
        run_id: `${runId}-orphan`,
        status: 'running',
        instance: 'an-instance-that-stopped',
        order: Date.now(),
        events: (stored.events as Array<{ type: string }>).filter((e) => e.type !== 'done'),
      };
      await runs.put(orphan.run_id as string, orphan);
      let run: any;
      for (let tries = 0; tries < 100; tries++) {
        run = await (await fetch(`${b.url}/studio/agents/slow-steps/runs/${orphan.run_id}`, { headers: ALICE })).json();
        if (run.status !== 'running') break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(run).toMatchObject({ status: 'error', error: 'the server stopped while the run was executing' });
      expect(run.events.slice(-2).map((e: { type: string }) => e.type)).toEqual(['run_error', 'done']);
      expect(run).not.toHaveProperty('instance');
    } finally {
      await store.close();
    }
  });

  it("the UI's live channel on B shows a task A runs, as it changes, only to its owner", async () => {
    const messagesOf = (principal: string) => {
      const socket = new WebSocket(`${b.url.replace('http', 'ws')}/api/v1/events?token=tok-${principal}`);
      const messages: any[] = [];
      socket.on('message', (data) => messages.push(JSON.parse(String(data))));
      return { socket, messages, open: new Promise((resolve) => socket.once('open', resolve)) };
    };
    const alice = messagesOf('alice');
    const bob = messagesOf('bob');
    await Promise.all([alice.open, bob.open]);
    const submitted = await fetch(`${a.url}/api/v1/other/invoke/async`, {
      method: 'POST',
      headers: { ...ALICE, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'x' }),
    });
    expect(submitted.status).toBe(202);
    const task = (await submitted.json()) as { id: string };
    const deadline = Date.now() + 20_000;
    const statuses = () => alice.messages.filter((m) => m.type === 'task' && m.task.id === task.id).map((m) => m.task.status);
    while (!statuses().includes('completed') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(statuses().at(-1)).toBe('completed');
    expect(alice.messages.filter((m) => m.type === 'task').every((m) => m.task.principal === 'alice')).toBe(true);
    expect(bob.messages.filter((m) => m.type === 'task' && m.task.id === task.id)).toEqual([]);
    alice.socket.close();
    bob.socket.close();
  });
});

import { cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';
import { studioWorkspace, typesOf } from './helpers.js';

const EVENT_TYPES = [
  'run_start',
  'node_start',
  'node_end',
  'message_chunk',
  'subagent_start',
  'subagent_end',
  'task_update',
  'breakpoint_hit',
  'run_complete',
  'run_error',
  'done',
];

describe('studio with a model configured', () => {
  let fake: FakeOpenAI;
  let server: TestServer;
  let root: string;
  const demo = '/studio/agents/studio-demo';

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    root = await studioWorkspace();
    server = await startTestServer({
      root,
      settings: { watch: false, model: { baseUrl: fake.baseUrl, model: 'tiny', timeoutMs: 5000, retries: 0 } },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('streams every event type of the spec across a run, its resume and a failing run', async () => {
    fake.enqueue({ chunks: ['A ', 'short ', 'brief.'] });
    const run = await readSse(`${server.url}${demo}/runs/stream`, {
      json: { query: 'outline the talk and rehearse', thread_id: 'talk', prompt_version: 'v2' },
    });
    const types = typesOf(run.frames);
    expect(types).toEqual([
      'run_start',
      'node_start',
      'task_update',
      'node_end',
      'node_start',
      'subagent_start',
      'subagent_end',
      'node_end',
      'node_start',
      'task_update',
      'message_chunk',
      'message_chunk',
      'message_chunk',
      'node_end',
      'node_start',
      'breakpoint_hit',
      'done',
    ]);
    const chunks = run.frames.filter((f) => f.data.type === 'message_chunk').map((f) => f.data);
    expect(chunks.map((c) => c.content).join('')).toBe('A short brief.');
    expect(chunks.every((c) => c.node === 'tiny')).toBe(true);
    // The model got the selected prompt version and the todos.
    const request = fake.requests.at(-1)!.body;
    expect(request.messages[0].content).toMatch(/^You write project briefs for busy readers/);
    expect(request.messages[1].content).toMatch(/1\. outline the talk\n2\. rehearse/);

    const resumed = await readSse(`${server.url}${demo}/threads/talk/resume`, { json: { value: { reviewer: 'grace' } } });
    expect(resumed.frames.find((f) => f.data.type === 'run_complete')!.data.response).toBe('A short brief.\n\n(approved by grace)');

    const failed = await readSse(`${server.url}${demo}/runs/stream`, { json: { query: '...' } });
    const seen = new Set([...types, ...typesOf(resumed.frames), ...typesOf(failed.frames)]);
    expect([...seen].sort()).toEqual([...EVENT_TYPES].sort());
    expect(typesOf(failed.frames).slice(-2)).toEqual(['run_error', 'done']);
  });

  it('a model failure mid-run is the run’s error, stored with it', async () => {
    fake.enqueue({ status: 500, error: 'model melted' });
    const { body } = await server.request(`${demo}/runs`, {
      method: 'POST',
      json: { query: 'summarise the notes', metadata: { auto_approve: true } },
    });
    expect(body).toMatchObject({ status: 'error', error_node: 'draft' });
    expect(body.error).toMatch(/model endpoint answered 500/);
    expect(body.events.map((e: { type: string }) => e.type).slice(-2)).toEqual(['run_error', 'done']);
  });
});

describe('studio across a restart', () => {
  let root: string;
  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('keeps runs and checkpoints; a paused thread resumes in the same run after the restart', async () => {
    root = await studioWorkspace();
    const first = await startTestServer({ root, settings: { watch: false } });
    const demo = '/studio/agents/studio-demo';
    const paused = (
      await first.request(`${demo}/runs`, { method: 'POST', json: { query: 'fix the roof', thread_id: 'house', breakpoints: ['draft'] } })
    ).body;
    expect(paused.status).toBe('breakpoint');
    const done = (await first.request('/studio/agents/echo/runs', { method: 'POST', json: { query: 'keep me' } })).body;
    // A run still executing when the server stops is cancelled and stays resumable.
    const slow = await readSse(`${first.url}/studio/agents/slow/runs/stream`, {
      json: { query: 'x', thread_id: 'slow' },
      stopAfter: (f) => f.data.type === 'node_start',
    });
    await first.stop();

    const second = await startTestServer({ root, settings: { watch: false } });
    try {
      const echoRuns = (await second.request('/studio/agents/echo/runs')).body;
      expect(echoRuns.map((r: { run_id: string }) => r.run_id)).toEqual([done.run_id]);
      expect((await second.request(`/studio/agents/echo/runs/${done.run_id}`)).body.events).toEqual(done.events);

      const slowRun = (await second.request(`/studio/agents/slow/runs/${slow.headers.get('x-studio-run-id')}`)).body;
      expect(slowRun.status).toBe('cancelled');
      expect(slowRun.events.map((e: { type: string }) => e.type).slice(-2)).toEqual(['run_error', 'done']);

      expect((await second.request(`${demo}/threads/house/state`)).body).toMatchObject({
        next: 'draft',
        checkpoint_id: paused.paused.checkpoint_id,
      });
      const resumed = await readSse(`${second.url}${demo}/threads/house/resume`, { json: {} });
      expect(resumed.headers.get('x-studio-run-id')).toBe(paused.run_id);
      expect(typesOf(resumed.frames).slice(-2)).toEqual(['breakpoint_hit', 'done']);
      const run = (await second.request(`${demo}/runs/${paused.run_id}`)).body;
      expect(run).toMatchObject({ status: 'interrupted', resumes: 1, paused: { node: 'review', reason: 'interrupt' } });
      expect(run.events.map((e: { seq: number }) => e.seq)).toEqual(run.events.map((_: unknown, i: number) => i + 1));
    } finally {
      await second.stop();
    }
  });
});

describe('studio and the HITL routes', () => {
  let server: TestServer;
  let root: string;
  beforeAll(async () => {
    root = await studioWorkspace({
      // Loads (discovery checks the shape), but its graph names a node that does not exist.
      'agents/broken.ts': agentSource(`{ graph: { nodes: { a: () => ({}) }, edges: [{ from: 'a', to: 'b' }], entry: 'a' } }`),
    });
    server = await startTestServer({ root, settings: { watch: false } });
  });
  afterAll(async () => {
    await server?.stop();
    await rm(root, { recursive: true, force: true });
  });

  it('a thread suspended by /invoke is visible in the studio, and a studio resume uses up its pending approval', async () => {
    const suspended = await server.request('/api/v1/studio-demo/invoke', {
      method: 'POST',
      json: { query: 'water the plants', thread_id: 'garden' },
    });
    expect(suspended.status).toBe(202);
    const state = (await server.request('/studio/agents/studio-demo/threads/garden/state')).body;
    expect(state).toMatchObject({ next: 'review', interrupt: { node: 'review' } });

    const resumed = await readSse(`${server.url}/studio/agents/studio-demo/threads/garden/resume`, {
      json: { value: { reviewer: 'kim' } },
    });
    expect(resumed.frames.find((f) => f.data.type === 'run_complete')!.data.response).toMatch(/approved by kim/);
    // The run behind the 202 was not a studio run, so the continuation is a new run record.
    const run = (await server.request(`/studio/agents/studio-demo/runs/${resumed.headers.get('x-studio-run-id')}`)).body;
    expect(run).toMatchObject({ status: 'completed', checkpoint_id: state.checkpoint_id, input: { query: 'water the plants' } });

    expect((await server.request('/api/v1/studio-demo/threads/garden/pending')).body.count).toBe(0);
    const late = await server.request('/api/v1/studio-demo/threads/garden/approve', {
      method: 'POST',
      json: { approval_id: suspended.body.detail.approval_id },
    });
    expect(late.status).toBe(404);
  });

  it('an agent whose graph does not compile is listed with the reason, and its graph and runs are the 500 "graph error"', async () => {
    const entry = (await server.request('/studio/agents')).body.find((a: { name: string }) => a.name === 'broken');
    expect(entry).toMatchObject({ has_graph: true, capabilities: ['graph'] });
    expect(entry.graph_error).toMatch(/graph.edges\[0\].to 'b' is not a node/);
    const graph = await server.request('/studio/agents/broken/graph');
    expect(graph.status).toBe(500);
    expect(graph.body.detail).toMatch(/^agent 'broken' has an invalid graph/);
    expect((await server.request('/studio/agents/broken/runs', { method: 'POST', json: { query: 'x' } })).status).toBe(500);
  });
});

describe('studio after a crash', () => {
  let root: string | undefined;
  let copy: string | undefined;
  afterAll(async () => {
    for (const dir of [root, copy]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a run that was executing when the process died is stored as failed, with run_error and done', async () => {
    root = await studioWorkspace();
    const server = await startTestServer({ root, settings: { watch: false } });
    let runId: string | null = null;
    try {
      const started = await readSse(`${server.url}/studio/agents/slow/runs/stream`, {
        json: { query: 'x', thread_id: 's' },
        stopAfter: (f) => f.data.type === 'node_start',
      });
      runId = started.headers.get('x-studio-run-id');
      // Events are written behind the run, at most 200 ms late; after that window, what is on
      // disk while the run executes is what a crash leaves behind.
      await new Promise((resolve) => setTimeout(resolve, 500));
      await server.ctx.store.flush();
      copy = await mkdtemp(path.join(os.tmpdir(), 'hangar-crash-'));
      await cp(root, copy, { recursive: true });
    } finally {
      await server.stop();
    }
    const after = await startTestServer({ root: copy, settings: { watch: false } });
    try {
      const run = (await after.request(`/studio/agents/slow/runs/${runId}`)).body;
      expect(run).toMatchObject({ status: 'error', error: 'the server stopped while the run was executing' });
      expect(run.events.map((e: { type: string }) => e.type)).toEqual(['run_start', 'node_start', 'run_error', 'done']);
      // Its thread is left before the node that was running, so it can be resumed.
      expect((await after.request('/studio/agents/slow/threads/s/state')).body.next).toBe('wait');
    } finally {
      await after.stop();
    }
  });
});

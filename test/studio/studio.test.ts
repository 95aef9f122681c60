import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';
import { studioWorkspace, typesOf } from './helpers.js';

/** The studio debug interface, driven through the shipped studio-demo agent (no model configured). */
describe('studio', () => {
  let server: TestServer;
  let root: string;
  const demo = '/studio/agents/studio-demo';
  const post = (path: string, json: unknown) => server.request(path, { method: 'POST', json });
  const stream = (path: string, json: unknown) => readSse(server.url + path, { json });

  beforeAll(async () => {
    root = await studioWorkspace();
    server = await startTestServer({ root, settings: { watch: false } });
  });
  afterAll(async () => {
    await server?.stop();
    await rm(root, { recursive: true, force: true });
  });

  describe('inspection', () => {
    it('info counts the agents and names what the studio can do', async () => {
      const { status, body } = await server.request('/studio/info');
      expect(status).toBe(200);
      expect(body).toMatchObject({ platform_title: 'Hangar Studio', agent_count: 4, model_configured: false });
      expect(typeof body.version).toBe('string');
      expect(body.capabilities).toEqual(
        expect.arrayContaining(['graph', 'streaming', 'checkpoints', 'state', 'breakpoints', 'hitl', 'time_travel']),
      );
    });

    it('agents report the capabilities each really has', async () => {
      const { body } = await server.request('/studio/agents');
      const byName = Object.fromEntries(body.map((a: { name: string }) => [a.name, a]));
      expect(Object.keys(byName).sort()).toEqual(['echo', 'slow', 'studio-demo', 'word-stats']);
      expect(byName['studio-demo']).toMatchObject({
        slug: 'studio-demo',
        version: '1.0.0',
        framework: 'hangar',
        has_graph: true,
        has_config: true,
        has_prompts: true,
        graph_error: null,
      });
      expect(byName['studio-demo'].capabilities).toEqual([
        'graph',
        'streaming',
        'checkpoints',
        'state',
        'breakpoints',
        'hitl',
        'subagents',
        'planning',
        'model',
      ]);
      // A function agent has no graph of its own, no approval and no subagent.
      expect(byName.echo).toMatchObject({ has_graph: false, has_config: false, has_prompts: true });
      expect(byName.echo.capabilities).toEqual(['streaming', 'checkpoints', 'state', 'breakpoints']);
      expect(byName['word-stats'].has_prompts).toBe(false);
    });

    it('graph shows start, the agent’s own node types and end, with conditional edges', async () => {
      const { status, body } = await server.request(`${demo}/graph`);
      expect(status).toBe(200);
      expect(body.agent_name).toBe('studio-demo');
      expect(body.nodes.map((n: { id: string; type: string }) => [n.id, n.type])).toEqual([
        ['__start__', 'start'],
        ['plan', 'planner'],
        ['analyze', 'subagent'],
        ['draft', 'llm'],
        ['review', 'approval'],
        ['finalize', 'node'],
        ['__end__', 'end'],
      ]);
      expect(body.nodes.find((n: { id: string }) => n.id === 'analyze').metadata).toMatchObject({ agent: 'word-stats' });
      const edges = body.edges.map(
        (e: { source: string; target: string; condition: string | null }) => `${e.source}->${e.target}:${e.condition}`,
      );
      expect(edges).toEqual([
        '__start__->plan:null',
        'plan->analyze:null',
        'analyze->draft:null',
        'draft->finalize:metadata.auto_approve',
        'draft->review:needs review',
        'review->finalize:null',
        'finalize->__end__:null',
      ]);
      expect(body.entry_point).toBe('plan');
      expect(body.end_points).toEqual(['finalize']);
    });

    it('a function agent’s graph is start → agent → end', async () => {
      const { body } = await server.request('/studio/agents/echo/graph');
      expect(body.nodes.map((n: { id: string; type: string }) => `${n.id}:${n.type}`)).toEqual([
        '__start__:start',
        'agent:agent',
        '__end__:end',
      ]);
      expect(body.edges.map((e: { source: string; target: string }) => `${e.source}->${e.target}`)).toEqual([
        '__start__->agent',
        'agent->__end__',
      ]);
      expect(body).toMatchObject({ entry_point: 'agent', end_points: ['agent'] });
    });

    it('schemas are the agent’s zod models as JSON Schema, with defaults when absent', async () => {
      const { body } = await server.request(`${demo}/schemas`);
      expect(body.sources).toEqual({ input: 'agent', output: 'agent' });
      expect(body.input_schema.properties.query).toMatchObject({ type: 'string', minLength: 1 });
      expect(body.input_schema.required).toEqual(['query']);
      expect(body.output_schema.properties.output.properties.approval).toEqual({ type: 'string' });
      expect(body.state_schema.properties.messages.type).toBe('array');
      const echo = (await server.request('/studio/agents/echo/schemas')).body;
      expect(echo.sources).toEqual({ input: 'default', output: 'default' });
      expect(echo.input_schema.required).toEqual(['query']);
      expect(echo.output_schema.properties.response.type).toBe('string');
    });

    it('config shows the agent configuration, prompt versions and model', async () => {
      const { body } = await server.request(`${demo}/config`);
      expect(body).toMatchObject({
        agent_name: 'studio-demo',
        kind: 'graph',
        config: { temperature: 0.2, prompt_version: 'v1' },
        prompts: { versions: ['v1', 'v2'], active: 'v1' },
        model: { configured: false, required: false },
      });
    });

    it('unknown agents, runs, threads and checkpoints are 404 {detail}', async () => {
      for (const path of [
        '/studio/agents/nope/graph',
        '/studio/agents/nope/schemas',
        '/studio/agents/nope/config',
        '/studio/agents/nope/runs',
        `${demo}/runs/no-such-run`,
        `${demo}/threads/no-such-thread/state`,
        `${demo}/threads/no-such-thread/history`,
      ]) {
        const { status, body } = await server.request(path);
        expect(status, path).toBe(404);
        expect(typeof body.detail, path).toBe('string');
      }
      expect((await post('/studio/agents/nope/runs', { query: 'x' })).status).toBe(404);
      expect((await post(`${demo}/threads/no-such-thread/resume`, {})).status).toBe(404);
      expect((await post(`${demo}/threads/no-such-thread/state`, { updates: { a: 1 } })).status).toBe(404);
      const missing = await post(`${demo}/runs`, { query: 'x', thread_id: 'no-such-thread', checkpoint_id: 'nope' });
      expect(missing.status).toBe(404);
      expect(missing.body.detail).toMatch(/checkpoint 'nope' not found/);
    });
  });

  describe('runs', () => {
    it('a streamed run emits its events live, pauses at the approval node, and resume finishes it', async () => {
      const run = await stream(`${demo}/runs/stream`, { query: 'compare flights, book a hotel and pack light', thread_id: 'trip' });
      expect(run.status).toBe(200);
      expect(run.headers.get('content-type')).toMatch(/text\/event-stream/);
      expect(run.headers.get('x-accel-buffering')).toBe('no');
      const runId = run.headers.get('x-studio-run-id');
      expect(runId).toBeTruthy();
      expect(run.done).toBe(true);
      expect(typesOf(run.frames)).toEqual([
        'run_start',
        'node_start',
        'task_update',
        'node_end', // plan
        'node_start',
        'subagent_start',
        'subagent_end',
        'node_end', // analyze
        'node_start',
        'task_update',
        'node_end', // draft
        'node_start',
        'breakpoint_hit', // review asks a person
        'done',
      ]);
      const events = run.frames.map((f) => f.data);
      // Every frame's SSE id is the event's sequence, and every event names the run.
      expect(run.frames.map((f) => Number(f.id))).toEqual(events.map((e) => e.seq));
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(new Set(events.map((e) => e.run_id))).toEqual(new Set([runId]));
      expect(events[2]).toMatchObject({ type: 'task_update', node: 'planning:write_todos', tool: 'write_todos' });
      expect(events[2].args.todos.map((t: { content: string }) => t.content)).toEqual(['compare flights', 'book a hotel', 'pack light']);
      expect(events[5]).toMatchObject({
        type: 'subagent_start',
        node: 'word-stats',
        query: 'compare flights, book a hotel and pack light',
      });
      expect(events[6]).toMatchObject({ type: 'subagent_end', node: 'word-stats' });
      expect(events[6].output.output.words).toBe(8);
      expect(events[3]).toMatchObject({ type: 'node_end', node: 'plan', step: 1 });
      expect(typeof events[3].checkpoint_id).toBe('string');
      const hit = events[12];
      expect(hit).toMatchObject({ type: 'breakpoint_hit', node: 'review', reason: 'interrupt' });
      expect(hit.message).toMatch(/^Approve this brief\?/);
      expect(events[13]).toMatchObject({ type: 'done', status: 'interrupted' });

      const state = await server.request(`${demo}/threads/trip/state`);
      expect(state.body).toMatchObject({
        thread_id: 'trip',
        agent_name: 'studio-demo',
        checkpoint_id: hit.checkpoint_id,
        next: 'review',
        run_id: runId,
      });
      expect(state.body.interrupt).toMatchObject({ node: 'review' });
      expect(state.body.state.todos.map((t: { status: string }) => t.status)).toEqual(['in_progress', 'in_progress', 'in_progress']);

      const resumed = await stream(`${demo}/threads/trip/resume`, { value: { reviewer: 'ada' }, action: 'approve' });
      expect(resumed.status).toBe(200);
      expect(resumed.headers.get('x-studio-run-id')).toBe(runId);
      // Only the continued events, numbered after the ones before.
      expect(typesOf(resumed.frames)).toEqual([
        'run_start',
        'node_start',
        'node_end',
        'node_start',
        'task_update',
        'node_end',
        'run_complete',
        'done',
      ]);
      expect(resumed.frames[0].data).toMatchObject({ resumed_from: hit.checkpoint_id, seq: 15 });
      expect(resumed.frames[1].data).toMatchObject({ node: 'review' });
      const complete = resumed.frames[6].data;
      expect(complete).toMatchObject({ status: 'completed', steps_taken: ['plan', 'analyze', 'draft', 'review', 'finalize'] });
      expect(complete.response).toMatch(/\(approved by ada\)$/);

      // The stored run holds every event of both segments, and the result.
      const stored = await server.request(`${demo}/runs/${runId}`);
      expect(stored.body).toMatchObject({
        run_id: runId,
        agent_name: 'studio-demo',
        thread_id: 'trip',
        status: 'completed',
        resumes: 1,
        paused: null,
        error: null,
      });
      expect(stored.body.events).toEqual([...events, ...resumed.frames.map((f) => f.data)]);
      expect(stored.body.event_count).toBe(22);
      expect(stored.body.result.output).toMatchObject({ approval: 'approved by ada', reviewer: 'ada' });
      expect(stored.body.result.output.todos.every((t: { status: string }) => t.status === 'completed')).toBe(true);

      const again = await post(`${demo}/threads/trip/resume`, {});
      expect(again.status).toBe(409);
      expect(again.body.detail).toMatch(/is not paused/);
    });

    it('a breakpoint stops before the named node; resume continues from there with the run’s breakpoints', async () => {
      const run = await stream(`${demo}/runs/stream`, {
        query: 'write tests and ship',
        thread_id: 'bp',
        breakpoints: ['draft', 'finalize'],
        metadata: { auto_approve: true },
      });
      expect(typesOf(run.frames)).toEqual([
        'run_start',
        'node_start',
        'task_update',
        'node_end',
        'node_start',
        'subagent_start',
        'subagent_end',
        'node_end',
        'breakpoint_hit',
        'done',
      ]);
      const hit = run.frames.at(-2)!.data;
      expect(hit).toMatchObject({ node: 'draft', reason: 'breakpoint' });
      expect(run.frames.at(-1)!.data.status).toBe('breakpoint');
      const runId = run.headers.get('x-studio-run-id');
      const paused = (await server.request(`${demo}/runs/${runId}`)).body;
      expect(paused).toMatchObject({
        status: 'breakpoint',
        paused: { node: 'draft', reason: 'breakpoint', checkpoint_id: hit.checkpoint_id },
      });
      expect((await server.request(`${demo}/threads/bp/state`)).body).toMatchObject({
        next: 'draft',
        interrupt: null,
        checkpoint_id: hit.checkpoint_id,
      });

      // A new run on a paused thread is refused: resume it, or name a checkpoint.
      const busy = await post(`${demo}/runs`, { query: 'again', thread_id: 'bp' });
      expect(busy.status).toBe(409);
      expect(busy.body.detail).toMatch(/paused before node 'draft'/);

      const toFinalize = await stream(`${demo}/threads/bp/resume`, {});
      expect(typesOf(toFinalize.frames)).toEqual(['run_start', 'node_start', 'task_update', 'node_end', 'breakpoint_hit', 'done']);
      expect(toFinalize.frames[4].data).toMatchObject({ node: 'finalize', reason: 'breakpoint' });

      const unknown = await post(`${demo}/threads/bp/resume`, { breakpoints: ['nowhere'] });
      expect(unknown.status).toBe(422);
      expect(unknown.body.detail).toMatch(/'nowhere' is not a node/);
      const end = await stream(`${demo}/threads/bp/resume`, { action: 'approve' });
      expect(typesOf(end.frames)).toEqual(['run_start', 'node_start', 'task_update', 'node_end', 'run_complete', 'done']);
      expect(end.frames[4].data.response).toMatch(/\(auto-approved\)$/);
    });

    it('breakpoints given to a resume replace the run’s', async () => {
      await post(`${demo}/runs`, { query: 'tidy the desk', thread_id: 'bp2', breakpoints: ['analyze', 'draft'] });
      const resumed = await stream(`${demo}/threads/bp2/resume`, { breakpoints: [] });
      expect(resumed.frames.filter((f) => f.data.type === 'node_start').map((f) => f.data.node)).toEqual(['analyze', 'draft', 'review']);
      expect(resumed.frames.at(-2)!.data).toMatchObject({ type: 'breakpoint_hit', reason: 'interrupt' });
      const run = (await server.request(`${demo}/runs/${resumed.headers.get('x-studio-run-id')}`)).body;
      expect(run.breakpoints).toEqual([]);
    });

    it('a breakpoint naming no node is 422 listing the nodes', async () => {
      const { status, body } = await post(`${demo}/runs`, { query: 'x', breakpoints: ['draft', 'publish'] });
      expect(status).toBe(422);
      expect(body.detail).toMatch(/'publish' is not a node of agent 'studio-demo'/);
      expect(body.detail).toMatch(/plan, analyze, draft, review, finalize/);
      const streamed = await stream(`${demo}/runs/stream`, { query: 'x', breakpoints: ['nope'] });
      expect(streamed.status).toBe(422);
      expect(streamed.body.detail).toMatch(/its nodes are/);
    });

    it('invalid bodies are 422 naming the field', async () => {
      const missing = await post(`${demo}/runs`, { breakpoints: [] });
      expect(missing.status).toBe(422);
      expect(missing.body.detail).toMatch(/^body\.query/);
      const action = await post(`${demo}/threads/bp/resume`, { action: 'maybe' });
      expect(action.status).toBe(422);
      expect(action.body.detail).toMatch(/^body\.action/);
      const noThread = await post(`${demo}/runs`, { query: 'x', checkpoint_id: 'c' });
      expect(noThread.status).toBe(422);
      expect(noThread.body.detail).toMatch(/^body\.thread_id/);
    });

    it('rejecting at the approval node discards the run', async () => {
      await post(`${demo}/runs`, { query: 'rewrite everything', thread_id: 'nope-thread' });
      const rejected = await stream(`${demo}/threads/nope-thread/resume`, { action: 'reject', reason: 'too risky' });
      expect(typesOf(rejected.frames)).toEqual(['run_start', 'run_complete', 'done']);
      expect(rejected.frames[1].data.status).toBe('rejected');
      expect(rejected.frames[2].data.status).toBe('rejected');
      const state = (await server.request(`${demo}/threads/nope-thread/state`)).body;
      expect(state.next).toBeNull();
      expect(state.state.metadata).toMatchObject({ hitl_approved: false, hitl_rejection_reason: 'too risky' });
    });

    it('the synchronous run answers with the stored run record', async () => {
      const { status, headers, body } = await post(`${demo}/runs`, {
        query: 'plan the sprint',
        metadata: { auto_approve: true },
        user_id: 'ada',
      });
      expect(status).toBe(200);
      expect(headers.get('x-studio-run-id')).toBe(body.run_id);
      expect(body).toMatchObject({
        agent_name: 'studio-demo',
        status: 'completed',
        input: { query: 'plan the sprint', user_id: 'ada', metadata: { auto_approve: true }, prompt_version: 'v1' },
        breakpoints: [],
        checkpoint_id: null,
        paused: null,
        error: null,
        resumes: 0,
      });
      expect(typeof body.thread_id).toBe('string');
      expect(body.result.response).toMatch(/^Brief: plan the sprint/);
      expect(body.events.map((e: { type: string }) => e.type).at(-2)).toBe('run_complete');
      expect(body.event_count).toBe(body.events.length);
      expect(body.duration_ms).toBeGreaterThan(0);
      expect(body.last_checkpoint_id).toBe((await server.request(`${demo}/threads/${body.thread_id}/state`)).body.checkpoint_id);
      expect(body).not.toHaveProperty('order');
    });

    it('an agent error mid-run emits run_error then done, and is stored with the run', async () => {
      const run = await stream(`${demo}/runs/stream`, { query: '!!! ???', thread_id: 'broken' });
      expect(typesOf(run.frames)).toEqual([
        'run_start',
        'node_start',
        'task_update',
        'node_end',
        'node_start',
        'subagent_start',
        'subagent_end',
        'node_end',
        'node_start',
        'run_error',
        'done',
      ]);
      expect(run.done).toBe(true);
      const error = run.frames[9].data;
      expect(error).toMatchObject({ node: 'draft' });
      expect(error.error).toMatch(/word-stats found no words/);
      expect(run.frames[10].data.status).toBe('error');
      const stored = (await server.request(`${demo}/runs/${run.headers.get('x-studio-run-id')}`)).body;
      expect(stored).toMatchObject({ status: 'error', error_node: 'draft', result: null });
      expect(stored.error).toMatch(/word-stats found no words/);
      expect(stored.events).toHaveLength(11);

      // The failed node can be retried: the thread waits before it. Fix the state, then resume.
      expect((await server.request(`${demo}/threads/broken/state`)).body.next).toBe('draft');
      await post(`${demo}/threads/broken/state`, {
        updates: {
          request: 'fixed request',
          subagent_results: { analyze: { output: { words: 2, sentences: 1, top_words: [['fixed', 1]], reading_ease: 50 } } },
        },
      });
      const retried = await stream(`${demo}/threads/broken/resume`, {});
      expect(typesOf(retried.frames)).toEqual([
        'run_start',
        'node_start',
        'task_update',
        'node_end',
        'node_start',
        'breakpoint_hit',
        'done',
      ]);
    });

    it('runs are listed newest first, 50 by default, without their events', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await post('/studio/agents/echo/runs', { query: `run ${i}` })).body.run_id);
      const { body } = await server.request('/studio/agents/echo/runs');
      expect(body.map((r: { run_id: string }) => r.run_id)).toEqual(ids.reverse());
      expect(body[0]).not.toHaveProperty('events');
      expect(body[0]).toMatchObject({ status: 'completed', event_count: 5 });
      expect((await server.request('/studio/agents/echo/runs?limit=2')).body).toHaveLength(2);
      expect((await server.request('/studio/agents/echo/runs?limit=0')).status).toBe(422);
      const demoRuns = (await server.request(`${demo}/runs?thread_id=trip`)).body;
      expect(demoRuns).toHaveLength(1);
      expect(demoRuns[0].thread_id).toBe('trip');
    });

    it('lists at most 50 runs unless asked for more', async () => {
      for (let i = 0; i < 52; i++) await post('/studio/agents/word-stats/runs', { query: `count ${i} words` });
      const { body } = await server.request('/studio/agents/word-stats/runs');
      expect(body).toHaveLength(50);
      expect(body[0].input.query).toBe('count 51 words');
      expect((await server.request('/studio/agents/word-stats/runs?limit=60')).body).toHaveLength(52);
    });

    it('a function agent runs as one node, and a breakpoint can stop before it', async () => {
      const run = await stream('/studio/agents/echo/runs/stream', { query: 'hello there', context: { reverse: true } });
      expect(typesOf(run.frames)).toEqual(['run_start', 'node_start', 'node_end', 'run_complete', 'done']);
      expect(run.frames[3].data).toMatchObject({ response: 'there hello', steps_taken: ['echo'] });
      const paused = await post('/studio/agents/echo/runs', { query: 'hi', breakpoints: ['agent'] });
      expect(paused.body).toMatchObject({ status: 'breakpoint', paused: { node: 'agent' } });
    });

    it('a running run can be followed again, cancelled, and resumed', async () => {
      const started = await readSse(`${server.url}/studio/agents/slow/runs/stream`, {
        json: { query: 'wait', thread_id: 'slow-1' },
        stopAfter: (frame) => frame.data.type === 'node_start',
      });
      const runId = started.headers.get('x-studio-run-id')!;
      // The client left; the run goes on.
      expect((await server.request(`/studio/agents/slow/runs/${runId}`)).body.status).toBe('running');
      const busy = await post('/studio/agents/slow/threads/slow-1/state', { updates: { note: 'x' } });
      expect(busy.status).toBe(409);
      expect(busy.body.detail).toMatch(/run in progress/);
      expect((await post('/studio/agents/slow/runs', { query: 'again', thread_id: 'slow-1' })).status).toBe(409);

      const follow = readSse(`${server.url}/studio/agents/slow/runs/${runId}/stream`);
      const cancelled = await post(`/studio/agents/slow/runs/${runId}/cancel`, {});
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toMatchObject({ status: 'cancelled', error: 'run cancelled' });
      const followed = await follow;
      expect(followed.done).toBe(true);
      // The node returned when its signal aborted; the engine stops before the next one.
      expect(typesOf(followed.frames)).toEqual(['run_start', 'node_start', 'node_end', 'run_error', 'done']);
      expect(followed.frames[3].data).toMatchObject({ cancelled: true, node: 'after' });
      expect((await post(`/studio/agents/slow/runs/${runId}/cancel`, {})).status).toBe(409);

      // Replay after a sequence number, as a reconnecting client does.
      const tail = await readSse(`${server.url}/studio/agents/slow/runs/${runId}/stream`, { headers: { 'Last-Event-ID': '2' } });
      expect(typesOf(tail.frames)).toEqual(['node_end', 'run_error', 'done']);

      // A cancelled run left the thread before its next node: resuming runs it, in the same run.
      expect((await server.request('/studio/agents/slow/threads/slow-1/state')).body.next).toBe('after');
      const resumed = await readSse(`${server.url}/studio/agents/slow/threads/slow-1/resume`, { json: {} });
      expect(resumed.headers.get('x-studio-run-id')).toBe(runId);
      expect(typesOf(resumed.frames)).toEqual(['run_start', 'node_start', 'node_end', 'run_complete', 'done']);
      expect(resumed.frames[1].data.node).toBe('after');
    });
  });

  describe('state, history and time travel', () => {
    it('keeps the checkpoint history of an /invoke given a thread_id, and none of a stateless one', async () => {
      const stateless = await post('/api/v1/echo/invoke', { query: 'hello' });
      expect(stateless.status).toBe(200);
      expect((await server.request(`/studio/agents/echo/threads/${stateless.body.thread_id}/history`)).status).toBe(404);

      const kept = await post('/api/v1/echo/invoke', { query: 'hello', thread_id: 'kept-history' });
      expect(kept.status).toBe(200);
      const history = (await server.request('/studio/agents/echo/threads/kept-history/history')).body;
      expect(history.map((c: { metadata: { source: string } }) => c.metadata.source)).toEqual(['loop', 'input']);
      expect(history[0]).toMatchObject({ thread_id: 'kept-history', parent_id: history[1].id, metadata: { next: null } });
    });

    it('resumes a stateless /invoke paused for approval, through the thread named in X-Thread-Id', async () => {
      const paused = await post('/api/v1/studio-demo/invoke', { query: 'buy milk' });
      expect(paused.status).toBe(202);
      const threadId = paused.headers.get('x-thread-id');
      expect(threadId).toMatch(/^[0-9a-f-]{36}$/);
      expect((await server.request(`${demo}/threads/${threadId}/history`)).status).toBe(404);
      const done = await post(`/api/v1/studio-demo/threads/${threadId}/approve`, { approval_id: paused.body.detail.approval_id });
      expect(done.status).toBe(200);
      expect(done.body.thread_id).toBe(threadId);
    });

    it('resumes an interrupted /invoke with a thread_id from its kept checkpoint', async () => {
      const paused = await post('/api/v1/studio-demo/invoke', { query: 'buy milk', thread_id: 'kept-interrupt' });
      expect(paused.status).toBe(202);
      const history = (await server.request(`${demo}/threads/kept-interrupt/history`)).body;
      expect(history[0].metadata.source).toBe('interrupt');
      const done = await post('/api/v1/studio-demo/threads/kept-interrupt/approve', { approval_id: paused.body.detail.approval_id });
      expect(done.status).toBe(200);
      expect((await server.request(`${demo}/threads/kept-interrupt/history`)).body[0].metadata.next).toBeNull();
    });

    it('editing the state adds a checkpoint whose parent is the previous one, shown first in the history', async () => {
      await post(`${demo}/runs`, { query: 'buy milk and eggs', thread_id: 'edit', breakpoints: ['draft'] });
      const before = (await server.request(`${demo}/threads/edit/state`)).body;
      expect(before.next).toBe('draft');

      const empty = await post(`${demo}/threads/edit/state`, { updates: {} });
      expect(empty.status).toBe(400);
      expect(empty.body.detail).toBe('no fields to update');
      const bad = await post(`${demo}/threads/edit/state`, { updates: { messages: 'nope' } });
      expect(bad.status).toBe(422);
      expect(bad.body.detail).toMatch(/^body\.updates\.messages/);

      const todos = [{ content: 'buy oat milk', status: 'pending' }];
      const edited = await post(`${demo}/threads/edit/state`, { updates: { todos } });
      expect(edited.status).toBe(200);
      expect(edited.body).toMatchObject({ parent_id: before.checkpoint_id, step: before.step + 1, next: 'draft', updated_keys: ['todos'] });
      expect(edited.body.state.todos).toEqual(todos);
      expect(edited.body.state.request).toBe('buy milk and eggs'); // merged, not replaced

      const history = (await server.request(`${demo}/threads/edit/history`)).body;
      expect(history[0]).toMatchObject({ id: edited.body.checkpoint_id, parent_id: before.checkpoint_id, thread_id: 'edit' });
      expect(history[0].metadata).toMatchObject({ source: 'update', updated_keys: ['todos'] });
      expect(history[1].id).toBe(before.checkpoint_id);
      expect(history.map((c: { step: number }) => c.step)).toEqual([...history.map((c: { step: number }) => c.step)].sort((a, b) => b - a));
      expect(Object.keys(history[0]).sort()).toEqual(['id', 'metadata', 'parent_id', 'state', 'step', 'thread_id', 'timestamp']);
      expect((await server.request(`${demo}/threads/edit/history?limit=2`)).body).toHaveLength(2);

      // Resuming runs the next node on the edited state.
      const resumed = await stream(`${demo}/threads/edit/resume`, {});
      const draft = resumed.frames.find((f) => f.data.type === 'node_end')!.data;
      expect(draft.output.brief).toMatch(/1\. buy oat milk/);
      expect(draft.output.brief).not.toMatch(/2\./);
    });

    it('a run from an older checkpoint forks the history instead of rewriting it', async () => {
      const first = (await post(`${demo}/runs`, { query: 'draft a memo', thread_id: 'tt', metadata: { auto_approve: true } })).body;
      expect(first.status).toBe('completed');
      const original = (await server.request(`${demo}/threads/tt/history`)).body;
      const afterPlan = original.find((c: { metadata: { node: string } }) => c.metadata.node === 'plan');
      expect(afterPlan.metadata.next).toBe('analyze');

      // Re-run from after `plan`, with an edited todo list on a fork of that checkpoint.
      const fork = await post(`${demo}/runs`, {
        query: 'draft a memo',
        thread_id: 'tt',
        checkpoint_id: afterPlan.id,
        metadata: { auto_approve: true },
      });
      expect(fork.status).toBe(200);
      expect(fork.body).toMatchObject({ status: 'completed', checkpoint_id: afterPlan.id });
      expect(fork.body.events[0]).toMatchObject({ type: 'run_start', resumed_from: afterPlan.id });
      expect(fork.body.events.filter((e: { type: string }) => e.type === 'node_start').map((e: { node: string }) => e.node)).toEqual([
        'analyze',
        'draft',
        'finalize',
      ]);

      const history = (await server.request(`${demo}/threads/tt/history`)).body;
      // Nothing was rewritten: every original checkpoint is still there, unchanged.
      for (const checkpoint of original) expect(history).toContainEqual(checkpoint);
      const added = history.slice(0, history.length - original.length);
      expect(added).toHaveLength(3);
      expect(added.at(-1).parent_id).toBe(afterPlan.id);
      expect(added.at(-1).step).toBe(afterPlan.step + 1);
      expect(added.every((c: { metadata: { run_id: string } }) => c.metadata.run_id === fork.body.run_id)).toBe(true);
      // The thread's state is the fork's end; the old end is still readable by id.
      expect((await server.request(`${demo}/threads/tt/state`)).body.checkpoint_id).toBe(added[0].id);
      const oldEnd = await server.request(`${demo}/threads/tt/state?checkpoint_id=${original[0].id}`);
      expect(oldEnd.body).toMatchObject({ checkpoint_id: original[0].id, next: null });
    });

    it('a re-run from a checkpoint paused at the approval asks the person again', async () => {
      const first = (await post(`${demo}/runs`, { query: 'order pizza', thread_id: 'ask' })).body;
      expect(first.status).toBe('interrupted');
      await stream(`${demo}/threads/ask/resume`, { value: { reviewer: 'bob' } });
      const again = (await post(`${demo}/runs`, { query: 'order pizza', thread_id: 'ask', checkpoint_id: first.paused.checkpoint_id }))
        .body;
      expect(again).toMatchObject({ status: 'interrupted', paused: { node: 'review', reason: 'interrupt' } });
      expect(again.paused.checkpoint_id).not.toBe(first.paused.checkpoint_id);
    });

    it('a new run on a finished thread is its next turn, with the conversation so far', async () => {
      await post(`${demo}/runs`, { query: 'first topic', thread_id: 'turns', metadata: { auto_approve: true } });
      const firstEnd = (await server.request(`${demo}/threads/turns/state`)).body;
      const second = (await post(`${demo}/runs`, { query: 'second topic', thread_id: 'turns', breakpoints: ['plan'] })).body;
      expect(second).toMatchObject({ status: 'breakpoint', paused: { node: 'plan' } });
      const state = (await server.request(`${demo}/threads/turns/state`)).body;
      expect(state).toMatchObject({ parent_id: firstEnd.checkpoint_id, next: 'plan' });
      expect(state.state.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user']);
      expect(state.state.messages.at(-1).content).toBe('second topic');
      expect(state.state.steps_taken).toEqual([]);
      const done = await stream(`${demo}/threads/turns/resume`, {});
      expect(done.frames.find((f) => f.data.type === 'task_update')!.data.args.todos).toEqual([
        { content: 'second topic', status: 'pending' },
      ]);
    });

    it('reject at a breakpoint ends the run there', async () => {
      await post(`${demo}/runs`, { query: 'paint the shed', thread_id: 'stop', breakpoints: ['analyze'] });
      const stopped = await stream(`${demo}/threads/stop/resume`, { action: 'reject', reason: 'not now' });
      expect(typesOf(stopped.frames)).toEqual(['run_start', 'run_complete', 'done']);
      const state = (await server.request(`${demo}/threads/stop/state`)).body;
      expect(state.next).toBeNull();
      expect(state.state.metadata).toMatchObject({ rejected_at: 'analyze', rejection_reason: 'not now' });
      expect((await server.request(`${demo}/runs/${stopped.headers.get('x-studio-run-id')}`)).body.status).toBe('rejected');
    });

    it('studio routes are in the OpenAPI document', async () => {
      const { body } = await server.request('/openapi.json');
      for (const path of ['/studio/info', '/studio/agents/{name}/runs/stream', '/studio/agents/{name}/threads/{thread_id}/resume']) {
        expect(body.paths[path], path).toBeDefined();
      }
      expect(body.paths['/studio/agents/{name}/runs'].post.requestBody.content['application/json'].schema.required).toEqual(['query']);
    });
  });
});

/**
 * A rejection in the studio ends the thread without running the graph, but the run's result is still
 * the agent's `result()`: for a supervised agent (README "Isolation") that code runs in its host,
 * never on the server's thread (#17).
 */
describe('studio rejection of a supervised agent', () => {
  let server: TestServer;
  const stream = (path: string, json: unknown) => readSse(server.url + path, { json });

  beforeAll(async () => {
    server = await startTestServer({
      files: {
        'agents/where.ts': agentSource(
          `{ graph: {
            nodes: { first: () => ({ response: 'first' }), second: () => ({ response: 'second' }) },
            edges: [{ from: 'first', to: 'second' }],
            entry: 'first',
            result: (state) => ({ response: state.response + (isMainThread ? ' on main' : ' in host') }),
          } }`,
          "import { isMainThread } from 'node:worker_threads';",
        ),
      },
      settings: { watch: false },
    });
  }, 60_000);
  afterAll(() => server?.stop());

  it("runs the agent's result() in its host", async () => {
    const paused = await server.request('/studio/agents/where/runs', {
      method: 'POST',
      json: { query: 'q', thread_id: 'halt', breakpoints: ['second'] },
    });
    expect(paused.body).toMatchObject({ status: 'breakpoint', paused: { node: 'second' } });
    const stopped = await stream('/studio/agents/where/threads/halt/resume', { action: 'reject', reason: 'no' });
    const run = (await server.request(`/studio/agents/where/runs/${stopped.headers.get('x-studio-run-id')}`)).body;
    expect(run).toMatchObject({ status: 'rejected', result: { response: 'first in host' } });
  });
});

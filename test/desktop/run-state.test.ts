import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StudioEvent } from '../../core/studio/events.js';
import { applyEvent, idleRun } from '../../desktop/views/studio/run-state.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { WITHOUT_PLUGIN_WORKERS } from './servers.js';

/** The studio's run picture, folded from the events a real server stores for real runs. */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    files: {
      'agents/studio-demo.ts': await readFile('agents/studio-demo.ts', 'utf8'),
      'agents/word-stats.ts': await readFile('agents/word-stats.ts', 'utf8'),
    },
    start: { subsystems: WITHOUT_PLUGIN_WORKERS },
  });
});
afterAll(() => server.stop());

const run = async (body: object) => {
  const res = await server.request('/studio/agents/studio-demo/runs', { method: 'POST', json: body });
  expect(res.status).toBe(200);
  return res.body as { run_id: string; events: StudioEvent[] };
};

describe('run view from studio events', () => {
  it('pauses at the human step with the plan, the subagent and the nodes so far', async () => {
    const { events } = await run({ query: 'compare prices and book a hotel', thread_id: 'rs-1' });
    const view = events.reduce(applyEvent, idleRun);
    expect(view.status).toBe('interrupted');
    expect(view.visited).toEqual(['plan', 'analyze', 'draft']);
    expect(view.active).toBeNull();
    expect(view.paused).toMatchObject({ node: 'review', reason: 'interrupt' });
    expect(view.paused!.message).toContain('Approve this brief?');
    expect(view.todos.map((t) => t.content)).toEqual(['compare prices', 'book a hotel']);
    expect(view.tools[0]!.tool).toBe('write_todos');
    expect(view.subagents).toEqual([{ name: 'word-stats', query: 'compare prices and book a hotel', done: true }]);
    expect(view.answer).toMatch(/^Brief: compare prices and book a hotel/);
    expect(view.log.at(-1)!.type).toBe('done');
  });

  it('continues the same picture when the run is resumed, to completion', async () => {
    const first = await run({ query: 'write docs then ship', thread_id: 'rs-2' });
    let view = first.events.reduce(applyEvent, idleRun);
    const resumed = await fetch(`${server.url}/studio/agents/studio-demo/threads/rs-2/resume`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'approve', value: { reviewer: 'ada' } }),
    });
    // The resume stream is SSE: fold its data lines too.
    for (const line of (await resumed.text()).split('\n')) {
      if (line.startsWith('data: ') && line !== 'data: [DONE]') view = applyEvent(view, JSON.parse(line.slice(6)) as StudioEvent);
    }
    expect(view.status).toBe('completed');
    expect(view.paused).toBeNull();
    expect(view.visited).toEqual(['plan', 'analyze', 'draft', 'review', 'finalize']);
    expect(view.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('marks the failing node when a run errors', async () => {
    const { events } = await run({ query: '!!!', thread_id: 'rs-3' });
    const view = events.reduce(applyEvent, idleRun);
    expect(view.status).toBe('error');
    expect(view.error).toMatchObject({ node: 'draft' });
  });

  it('starts a fresh answer for each node that streams tokens', () => {
    const base = { run_id: 'r', thread_id: 't', timestamp: '2026-01-01T00:00:00.000Z' };
    const events: StudioEvent[] = [
      { ...base, seq: 1, type: 'run_start', agent: 'demo', input: { query: 'hi', user_id: 'u' }, resumed_from: null },
      { ...base, seq: 2, type: 'node_start', node: 'a', step: 1 },
      { ...base, seq: 3, type: 'message_chunk', node: 'm', content: 'Hel' },
      { ...base, seq: 4, type: 'message_chunk', node: 'm', content: 'lo' },
    ];
    const mid = events.reduce(applyEvent, idleRun);
    expect(mid).toMatchObject({ answer: 'Hello', active: 'a', status: 'running' });
    const next = [
      { ...base, seq: 5, type: 'node_end', node: 'a', step: 1, output: { response: 'Hello' }, checkpoint_id: 'c1' },
      { ...base, seq: 6, type: 'node_start', node: 'b', step: 2 },
      { ...base, seq: 7, type: 'message_chunk', node: 'm', content: 'Bye' },
    ] as StudioEvent[];
    expect(next.reduce(applyEvent, mid)).toMatchObject({ answer: 'Bye', active: 'b', visited: ['a'] });
  });
});

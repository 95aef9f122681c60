import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StudioEvent } from '../../core/studio/events.js';
import { applyEvent, idleRun } from '../../desktop/views/studio/run-state.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { WITHOUT_PLUGIN_WORKERS } from './servers.js';

/** The studio run view shows each tool call of the model with its arguments and result (#32), folded from a real run's events. */
let server: TestServer;
let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI();
  server = await startTestServer({
    files: {
      'agents/calc.ts': `import { defineAgent, defineTool, z } from 'hangar';
const add = defineTool({ name: 'add', description: 'Adds two numbers', input: z.object({ a: z.number(), b: z.number() }), run: ({ a, b }) => a + b });
export default defineAgent({ instructions: 'Use add.', tools: [add] });`,
    },
    settings: { model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 }, watch: false },
    start: { subsystems: WITHOUT_PLUGIN_WORKERS },
  });
});
afterAll(async () => {
  await server?.stop();
  await fake?.close();
});

describe('run view of a tool-using agent', () => {
  it('lists each call with its arguments, then its result or error and duration', async () => {
    fake.enqueue(
      {
        tool_calls: [
          { id: 'c1', name: 'add', arguments: { a: 2, b: 3 } },
          { id: 'c2', name: 'add', arguments: { a: 'two' } },
        ],
      },
      { content: 'Five.' },
    );
    const res = await server.request('/studio/agents/calc/runs', { method: 'POST', json: { query: '2+3?', thread_id: 'calc-1' } });
    expect(res.status).toBe(200);
    const events = res.body.events as StudioEvent[];
    const view = events.reduce(applyEvent, idleRun);
    expect(view.status).toBe('completed');
    expect(view.answer).toBe('Five.');
    expect(view.tools.map(({ durationMs, ...t }) => ({ ...t, timed: typeof durationMs === 'number' }))).toEqual([
      { tool: 'add', args: { a: 2, b: 3 }, callId: 'c1', state: 'ok', result: 5, timed: true },
      {
        tool: 'add',
        args: { a: 'two' },
        callId: 'c2',
        state: 'error',
        error: expect.stringMatching(/invalid arguments for 'add'/),
        timed: true,
      },
    ]);
    // Halfway through (after the starts only) both calls show as running.
    const started = events.filter((e) => e.type !== 'tool_end').reduce(applyEvent, idleRun);
    expect(started.tools.map((t) => t.state)).toEqual(['running', 'running']);
  });
});

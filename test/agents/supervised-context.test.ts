import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, hostsReady, startTestServer, type TestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';

/**
 * A supervised node's `ctx` is made on the server when its host first calls back (#27: most nodes
 * never do, and a context is some fifteen closures). Every call back of one node lands in the same
 * context, in the order the node made them, and a node that makes none answers as before.
 */
describe("a supervised node's context, made on its first call back", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      files: {
        'agents/reporter.ts': agentSource(`{ run: async (input, ctx) => {
          ctx.step('one');
          ctx.plan('write_todos', { todos: ['a'] });
          const docs = await ctx.documents('notes');
          ctx.step('read ' + docs.length);
          ctx.tool('lookup', { q: input.query });
          return { response: 'reported ' + ctx.threadId.length };
        } }`),
        'agents/quiet.ts': agentSource(`{ run: async () => 'ok' }`),
        'agents/keys.ts': agentSource(`{ run: async (input, ctx) => {
          const { step, signal } = ctx;
          step('destructured');
          return { response: Object.keys(ctx).join(','), output: { aborted: signal.aborted, spread: typeof { ...ctx }.signal.aborted } };
        } }`),
        'agents/branching.ts': agentSource(`{ graph: {
          nodes: { first: (state, ctx) => { ctx.step('first'); return { response: 'go' }; }, second: (state) => ({ response: state.response + ' on' }) },
          edges: [{ from: 'first', to: 'second', when: (state) => state.response === 'go' }],
          entry: 'first',
        } }`),
      },
      settings: { watch: false },
    });
    await hostsReady(server, 4);
  }, 60_000);
  afterAll(() => server.stop());

  it('keeps every call back of a node in order, in one context', async () => {
    const res = await server.request('/api/v1/reporter/invoke', { method: 'POST', json: { query: 'q', thread_id: 'thread-12' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ response: 'reported 9', steps_taken: ['one', 'read 0'], thread_id: 'thread-12' });
  });

  it('streams the same run: start, the step with its steps, complete', async () => {
    const read = await readSse(`${server.url}/api/v1/reporter/invoke/stream`, { method: 'POST', json: { query: 'q' } });
    expect(read.done).toBe(true);
    expect(read.frames.map((f) => f.data.event)).toEqual(['start', 'step', 'complete']);
    expect(read.frames[1]!.data).toMatchObject({ node: 'agent', steps_taken: ['one', 'read 0'] });
    expect(read.frames[2]!.data).toMatchObject({ response: 'reported 36', steps_taken: ['one', 'read 0'] });
  });

  it('gives a node in its host the same ctx as before: its keys in order, a signal, methods that work destructured', async () => {
    const res = await server.request('/api/v1/keys/invoke', { method: 'POST', json: { query: 'q' } });
    expect(res.body).toMatchObject({
      response: 'input,prompt,signal,workspace,threadId,documents,step,tool,plan,interrupt,callAgent,model',
      output: { aborted: false, spread: 'boolean' },
      steps_taken: ['destructured'],
    });
  });

  it('answers a node that never calls back, and follows a condition asked in the host', async () => {
    const quiet = await server.request('/api/v1/quiet/invoke', { method: 'POST', json: { query: 'q' } });
    expect(quiet.status).toBe(200);
    expect(quiet.body).toMatchObject({ response: 'ok', steps_taken: [] });
    const branching = await server.request('/api/v1/branching/invoke', { method: 'POST', json: { query: 'q' } });
    expect(branching.body).toMatchObject({ response: 'go on', steps_taken: ['first', 'first', 'second'] });
  });
});

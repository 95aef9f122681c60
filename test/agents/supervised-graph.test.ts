import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, hostsReady, startTestServer, type TestServer } from '../support/server.js';

/**
 * A supervised graph agent's own code beyond its function nodes (#17): its edge conditions,
 * `result`, an approval node's `message` and a subagent node's `query` run in its host, so a
 * synchronous loop in one of them costs the run its deadline, never the server's thread.
 */
const graphAgent = (parts: { when?: string; result?: string; query?: string; message?: string }) =>
  agentSource(
    `{ graph: {
      nodes: {
        first: () => ({ response: 'first' }),
        ${parts.query ? `ask: { type: 'subagent', agent: 'echo', query: ${parts.query} },` : ''}
        ${parts.message ? `confirm: { type: 'approval', message: ${parts.message} },` : ''}
        second: (state) => ({ response: state.response + ' then second' }),
      },
      edges: [
        ${parts.query ? "{ from: 'first', to: 'ask' }, { from: 'ask', to: 'second' }," : ''}
        ${parts.message ? "{ from: 'first', to: 'confirm' }, { from: 'confirm', to: 'second' }," : ''}
        ${parts.query || parts.message ? '' : `{ from: 'first', to: 'second'${parts.when ? `, when: ${parts.when}` : ''} },`}
      ],
      entry: 'first',
      ${parts.result ? `result: ${parts.result},` : ''}
    } }`,
    "import { isMainThread } from 'node:worker_threads';",
  );

const SPIN = '() => { while (true) {} }';

describe("a supervised graph's edge conditions and result/message/query functions", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      files: {
        'agents/echo.ts': agentSource(`{ run: (input) => 'echo: ' + input.query }`),
        'agents/where.ts': graphAgent({
          when: "() => { if (isMainThread) throw new Error('edge condition ran on the server'); return true; }",
          result: "(state) => ({ response: state.response + (isMainThread ? ' on main' : ' in host') })",
        }),
        'agents/edge-spin.ts': graphAgent({ when: SPIN }),
        'agents/result-spin.ts': graphAgent({ result: SPIN }),
        'agents/query-spin.ts': graphAgent({ query: SPIN }),
        'agents/message-spin.ts': graphAgent({ message: SPIN }),
      },
      settings: { agents: { timeoutMs: 1_000, watchdogMs: 60_000 } },
    });
    await hostsReady(server, 6);
  }, 60_000);
  afterAll(() => server.stop());

  const invoke = (agent: string, query = 'q') => server.request(`/api/v1/${agent}/invoke`, { method: 'POST', json: { query } });

  it('runs them in the agent host, not on the server thread', async () => {
    const res = await invoke('where');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ response: 'first then second in host', steps_taken: ['first', 'second'] });
  });

  /** A run stuck in one of the graph's functions: 504 at its deadline, /health meanwhile, then a fixed version answers. */
  async function stuckThenFixed(agent: string, fixed: string, expected: string) {
    const spinning = invoke(agent);
    await new Promise((r) => setTimeout(r, 200));
    expect((await server.request('/health')).status).toBe(200);
    const res = await spinning;
    expect(res.status).toBe(504);
    expect(res.body).toMatchObject({ code: 'HANGAR_AGENT_TIMEOUT', detail: `agent '${agent}' did not finish within 1000 ms` });
    // The stuck host ignored its abort and was stopped, counted against this agent.
    await eventually(async () =>
      (await server.request('/api/v1/status')).body.hosts.find(
        (h: { agent: string; restarts: number }) => h.agent === agent && h.restarts >= 1,
      ),
    );
    await server.write(`agents/${agent}.ts`, fixed);
    const answered = await eventually(async () => {
      const next = await invoke(agent, 'fixed');
      return next.status === 200 && next.body.response === expected ? next : undefined;
    }, 20_000);
    expect(answered.body.response).toBe(expected);
  }

  it('an edge condition stuck in a loop ends the run at its deadline; a fixed version answers', { timeout: 40_000 }, async () => {
    await stuckThenFixed('edge-spin', graphAgent({ when: '(state) => state.response === "first"' }), 'first then second');
  });

  it('a result function stuck in a loop ends the run at its deadline; a fixed version answers', { timeout: 40_000 }, async () => {
    await stuckThenFixed(
      'result-spin',
      graphAgent({ result: "(state) => ({ response: 'result of ' + state.response })" }),
      'result of first then second',
    );
  });

  it("a subagent node's query stuck in a loop ends the run at its deadline; a fixed version answers", { timeout: 40_000 }, async () => {
    await stuckThenFixed(
      'query-spin',
      graphAgent({ query: "(state) => 'asked after ' + state.response" }),
      'echo: asked after first then second',
    );
  });

  it("an approval node's message stuck in a loop ends the run at its deadline; a fixed version pauses for approval", {
    timeout: 40_000,
  }, async () => {
    const spinning = invoke('message-spin');
    await new Promise((r) => setTimeout(r, 200));
    expect((await server.request('/health')).status).toBe(200);
    const res = await spinning;
    expect(res.status).toBe(504);
    expect(res.body).toMatchObject({ detail: "agent 'message-spin' did not finish within 1000 ms" });
    await server.write('agents/message-spin.ts', graphAgent({ message: "(state) => 'Send ' + state.response + '?'" }));
    const paused = await eventually(async () => {
      const next = await invoke('message-spin', 'fixed');
      return next.status === 202 ? next : undefined;
    }, 20_000);
    expect(JSON.stringify(paused.body)).toContain('Send first?');
  });
});

/**
 * A tool's `needsApproval` rule is the tool's code (#17): it runs where the tool's `run` runs (a
 * `tools/` drop-in's host), under the tool's `timeout_ms`, so a rule stuck in a loop fails that
 * call at the timeout and never holds the server's thread.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { eventually, hostsReady, startTestServer, type TestServer } from '../support/server.js';

const tool = (body: string) =>
  `import { defineTool, z } from 'hangar';\nimport { isMainThread } from 'node:worker_threads';\nexport default defineTool(${body});\n`;

describe("a tools/ drop-in's needsApproval", () => {
  let server: TestServer;
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI(() => ({ content: 'no script' }));
    server = await startTestServer({
      files: {
        // On the server's thread the rule would ask a person (and this run has no one to ask).
        'tools/where.ts': tool(
          `{ description: 'where', input: z.object({}), timeout_ms: 5_000, needsApproval: () => isMainThread, run: () => 'ran' }`,
        ),
        'tools/stuck.ts': tool(
          `{ description: 'stuck', input: z.object({}), timeout_ms: 500, needsApproval: () => { while (true) {} }, run: () => 'ran' }`,
        ),
        'agents/caller.ts': `import { defineAgent } from 'hangar';\nexport default defineAgent({ instructions: 'Use tools.', tools: ['where', 'stuck'] });`,
      },
      settings: { model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 }, agents: { watchdogMs: 60_000 } },
    });
    await eventually(async () => {
      const hosts: Array<{ kind: string; name: string; ready: boolean }> = (await server.request('/api/v1/status')).body.hosts;
      return hosts.filter((h) => h.kind === 'tool' && h.ready).length === 2;
    }, 30_000);
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });

  const invoke = () => server.request('/api/v1/caller/invoke', { method: 'POST', json: { query: 'go' } });

  it("runs in the tool's host", async () => {
    fake.enqueue({ tool_calls: [{ id: 'w', name: 'where', arguments: {} }] }, { content: 'done' });
    const res = await invoke();
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('done');
    expect(fake.requests.at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'tool', content: 'ran' });
  });

  it("one stuck in a loop fails the call at the tool's timeout, is stopped, and the server answers meanwhile", {
    timeout: 30_000,
  }, async () => {
    fake.enqueue({ tool_calls: [{ id: 's', name: 'stuck', arguments: {} }] }, { content: 'went on' });
    const running = invoke();
    await new Promise((r) => setTimeout(r, 200));
    expect((await server.request('/health')).status).toBe(200);
    const res = await running;
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('went on');
    expect(fake.requests.at(-1)!.body.messages.at(-1)).toMatchObject({
      role: 'tool',
      content: expect.stringContaining("'stuck' timed out after 500 ms deciding whether it needs approval"),
    });
    // The rule ignored its abort: its host was stopped, and the tool's next call runs on a new one.
    await eventually(async () =>
      (await server.request('/api/v1/status')).body.hosts.find(
        (h: { kind: string; name: string; restarts: number }) => h.kind === 'tool' && h.name === 'stuck' && h.restarts === 1,
      ),
    );
    fake.enqueue({ tool_calls: [{ id: 'w2', name: 'where', arguments: {} }] }, { content: 'again' });
    expect((await invoke()).body.response).toBe('again');
  });
});

/**
 * The same for a tool defined in a supervised agent's own module (#17): its rule runs in the agent's
 * host, in the module instance its `run` lives in, bounded by the tool's `timeout_ms`.
 */
describe("an agent-module tool's needsApproval", () => {
  let server: TestServer;
  let fake: FakeOpenAI;
  const agent = `import { defineAgent, defineTool, z } from 'hangar';
import { isMainThread } from 'node:worker_threads';
// On the server's thread the rule would ask a person (and this run has no one to ask).
const where = defineTool({ name: 'where', description: 'where', input: z.object({}), timeout_ms: 5_000, needsApproval: () => isMainThread, run: () => 'ran' });
const stuck = defineTool({ name: 'stuck', description: 'stuck', input: z.object({}), timeout_ms: 500, needsApproval: () => { while (true) {} }, run: () => 'ran' });
export default defineAgent({
  tools: [where, stuck],
  run: async (input, ctx) => (await ctx.model.run([{ role: 'user', content: input.query }])).text,
});
`;
  beforeAll(async () => {
    fake = await startFakeOpenAI(() => ({ content: 'no script' }));
    server = await startTestServer({
      files: { 'agents/owner.ts': agent },
      // The stuck rule blocks the agent's host: its watchdog restarts it, which ends that run.
      settings: { model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 }, agents: { watchdogMs: 2_000 } },
    });
    await hostsReady(server, 1);
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });

  const invoke = () => server.request('/api/v1/owner/invoke', { method: 'POST', json: { query: 'go' } });

  it("runs in the agent's host", async () => {
    fake.enqueue({ tool_calls: [{ id: 'w', name: 'where', arguments: {} }] }, { content: 'done' });
    const res = await invoke();
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('done');
    expect(fake.requests.at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'tool', content: 'ran' });
  });

  it("one stuck in a loop ends the call with its error result at the tool's timeout while the server answers", {
    timeout: 30_000,
  }, async () => {
    const before = fake.requests.length;
    fake.enqueue({ tool_calls: [{ id: 's', name: 'stuck', arguments: {} }] }, { content: 'went on' });
    const running = invoke();
    await new Promise((r) => setTimeout(r, 200));
    expect((await server.request('/health')).status).toBe(200);
    // The loop went on to the model with the call's error result: the tool itself was not run.
    await eventually(() => fake.requests.length === before + 2);
    expect(fake.requests.at(-1)!.body.messages.at(-1)).toMatchObject({
      role: 'tool',
      content: expect.stringContaining("'stuck' timed out after 500 ms deciding whether it needs approval"),
    });
    expect((await server.request('/health')).status).toBe(200);
    // The rule still holds the host's thread, so this run ends when the watchdog restarts the host.
    expect((await running).status).toBeGreaterThanOrEqual(500);
    fake.enqueue({ tool_calls: [{ id: 'w2', name: 'where', arguments: {} }] }, { content: 'again' });
    expect((await invoke()).body.response).toBe('again');
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';

/**
 * `/chat` loads a bounded history by default (`chat.max_history`, 100): a long thread costs what a
 * short one does per turn, and the thread itself keeps every message. The echo agent answers with
 * how many history messages it received and the first of them, so the test sees which were loaded.
 */
const files = {
  'agents/echo.ts': agentSource(
    `{ run: async (input) => JSON.stringify({ seen: input.history.length, first: input.history[0]?.content ?? null }) }`,
  ),
};

let server: TestServer | undefined;
afterEach(async () => server?.stop());

/** A thread of `n` stored messages (`m0` … `m<n-1>`), written through the thread service. */
async function seed(s: TestServer, thread: string, n: number) {
  await s.request('/api/v1/echo/threads', { method: 'POST', json: { thread_id: thread } });
  const messages = Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `m${i}` }));
  await s.ctx.services.get('agents').threads.append('echo', thread, messages as never);
}

const chat = async (s: TestServer, body: Record<string, unknown>) => {
  const res = await s.request('/api/v1/echo/chat', { method: 'POST', json: { content: 'next', persist: false, ...body } });
  expect(res.status).toBe(200);
  return { loaded: res.body.history_loaded as number, agent: JSON.parse(res.body.response) as { seen: number; first: string | null } };
};

describe('bounded chat history', () => {
  it("loads the newest 100 by default, the request's max_history wins, 0 loads none; the thread keeps all", async () => {
    server = await startTestServer({ files, settings: { watch: false } });
    await seed(server, 'long', 250);
    expect(await chat(server, { thread_id: 'long' })).toEqual({ loaded: 100, agent: { seen: 100, first: 'm150' } });
    expect(await chat(server, { thread_id: 'long', max_history: 120 })).toEqual({ loaded: 120, agent: { seen: 120, first: 'm130' } });
    expect(await chat(server, { thread_id: 'long', max_history: 0 })).toEqual({ loaded: 0, agent: { seen: 0, first: null } });
    const page = await server.request('/api/v1/echo/threads/long/messages?limit=5&offset=248');
    expect(page.body).toMatchObject({ total: 250, count: 2, messages: [{ content: 'm248' }, { content: 'm249' }] });
  });

  it('follows the chat.max_history setting, and null loads the whole thread', async () => {
    server = await startTestServer({ files, settings: { watch: false, chat: { max_history: 30 } } as never });
    await seed(server, 'long', 250);
    expect((await chat(server, { thread_id: 'long' })).loaded).toBe(30);
    await server.stop();
    server = await startTestServer({ files, settings: { watch: false, chat: { max_history: null } } as never });
    await seed(server, 'long', 250);
    expect(await chat(server, { thread_id: 'long' })).toEqual({ loaded: 250, agent: { seen: 250, first: 'm0' } });
  });
});

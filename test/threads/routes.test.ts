import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelProvider, UnconfiguredProvider } from '../../core/agents/model.js';
import { LowdbStore } from '../../core/storage/lowdb-store.js';
import { extractiveSummary, ThreadService } from '../../core/threads/service.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';

const files = {
  'agents/echo.ts': agentSource(`{ run: async (input) => 'echo: ' + input.query }`),
  'agents/other.ts': agentSource(`{ run: async () => 'other' }`),
};

describe('thread routes against the real server', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false } });
  });
  afterAll(() => server?.stop());

  const call = (method: string, p: string, json?: unknown) => server.request(`/api/v1/echo${p}`, { method, json });
  const chat = (thread: string, content: string) => call('POST', '/chat', { content, thread_id: thread });

  it('creates, gets, lists with a user filter, updates and deletes a thread', async () => {
    const created = await call('POST', '/threads', { thread_id: 'th-1', user_id: 'ada', title: 'First', metadata: { a: 1 } });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ id: 'th-1', user_id: 'ada', agent_name: 'echo', title: 'First', metadata: { a: 1 } });
    expect(Date.parse(created.body.created_at)).not.toBeNaN();
    await call('POST', '/threads', { thread_id: 'th-2', user_id: 'bob' });
    const generated = await call('POST', '/threads', {});
    expect(generated.body).toMatchObject({ user_id: 'default-user', title: null });
    expect(generated.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await call('POST', '/threads', { thread_id: 'th-1' })).body).toEqual({
      detail: "thread 'th-1' already exists for agent 'echo'",
      code: 'HANGAR_THREAD_EXISTS',
    });

    expect((await call('GET', '/threads/th-1')).body.title).toBe('First');
    const adas = await call('GET', '/threads?user_id=ada');
    expect(adas.body).toEqual({ threads: [expect.objectContaining({ id: 'th-1' })], count: 1 });
    expect((await call('GET', '/threads')).body.count).toBeGreaterThanOrEqual(3);
    // Threads are per agent.
    expect((await server.request('/api/v1/other/threads/th-1')).status).toBe(404);

    const patched = await call('PATCH', '/threads/th-1', { metadata: { b: 2 } });
    expect(patched.body).toMatchObject({ title: 'First', metadata: { b: 2 } });
    expect((await call('PATCH', '/threads/th-1', { title: 'Renamed' })).body).toMatchObject({ title: 'Renamed', metadata: { b: 2 } });
    const nothing = await call('PATCH', '/threads/th-1', {});
    expect(nothing.status).toBe(400);
    expect(nothing.body).toEqual({ detail: 'no fields to update: give title and/or metadata', code: 'HANGAR_THREAD_NO_CHANGES' });
    expect((await call('PATCH', '/threads/missing', { title: 'x' })).status).toBe(404);

    await chat('th-1', 'hello');
    expect(await call('DELETE', '/threads/th-1')).toMatchObject({ status: 200, body: { status: 'deleted', thread_id: 'th-1' } });
    expect(await call('GET', '/threads/th-1')).toMatchObject({
      status: 404,
      body: { detail: "thread 'th-1' not found for agent 'echo'", code: 'HANGAR_THREAD_NOT_FOUND' },
    });
    expect((await call('GET', '/threads/th-1/messages')).status).toBe(404);
    // Re-creating the id starts empty: the messages went with the thread.
    await call('POST', '/threads', { thread_id: 'th-1' });
    expect((await call('GET', '/threads/th-1/messages')).body.total).toBe(0);
    expect((await call('DELETE', '/threads/nope')).status).toBe(404);
  });

  it('pages messages with limit and offset (defaults 100 and 0) and clears them keeping the thread', async () => {
    for (let i = 0; i < 3; i++) await chat('paged', `q${i}`);
    const page = await call('GET', '/threads/paged/messages?limit=2&offset=1');
    expect(page.body).toMatchObject({ thread_id: 'paged', count: 2, total: 6, limit: 2, offset: 1 });
    expect(page.body.messages.map((m: { content: string }) => m.content)).toEqual(['echo: q0', 'q1']);
    expect(page.body.messages[0]).toEqual({ role: 'assistant', content: 'echo: q0', timestamp: expect.any(String) });
    expect((await call('GET', '/threads/paged/messages')).body).toMatchObject({ limit: 100, offset: 0, count: 6 });
    expect((await call('GET', '/threads/paged/messages?limit=0')).status).toBe(422);

    expect((await call('DELETE', '/threads/paged/messages')).body).toEqual({ status: 'cleared', thread_id: 'paged' });
    expect((await call('GET', '/threads/paged/messages')).body.total).toBe(0);
    expect((await call('GET', '/threads/paged')).status).toBe(200);
  });

  it('forks up to message_index over three generations and reports lineage both ways', async () => {
    for (const q of ['a', 'b', 'c']) await chat('root', q); // 6 messages
    const child = await call('POST', '/threads/root/fork', { message_index: 3, new_thread_id: 'child', title: 'Child' });
    expect(child.status).toBe(200);
    expect(child.body).toMatchObject({ id: 'child', parent_thread_id: 'root', fork_message_index: 3, title: 'Child' });
    expect((await call('GET', '/threads/child/messages')).body.messages.map((m: { content: string }) => m.content)).toEqual([
      'a',
      'echo: a',
      'b',
      'echo: b',
    ]);
    expect((await call('GET', '/threads/child')).body).toMatchObject({ parent_thread_id: 'root', fork_message_index: 3 });

    await chat('child', 'd');
    const grandchild = await call('POST', '/threads/child/fork', { message_index: 0, new_thread_id: 'grandchild' });
    expect(grandchild.body.title).toBe('Child (fork)');
    const sibling = await call('POST', '/threads/root/fork', { message_index: 1 });

    const lineage = await call('GET', '/threads/grandchild/lineage');
    expect(lineage.body.thread_id).toBe('grandchild');
    expect(lineage.body.ancestors.map((a: { id: string }) => a.id)).toEqual(['root', 'child']);
    expect(lineage.body.descendants).toEqual([]);
    const fromRoot = await call('GET', '/threads/root/lineage');
    expect(fromRoot.body.ancestors).toEqual([]);
    expect(fromRoot.body.descendants.map((d: { id: string }) => d.id).sort()).toEqual(['child', 'grandchild', sibling.body.id].sort());
    expect(fromRoot.body.descendants.at(-1).id).toBe('grandchild');

    // The source is untouched by later appends to the fork.
    expect((await call('GET', '/threads/root/messages')).body.total).toBe(6);
  });

  it('rejects a fork point out of range with 422 naming the field', async () => {
    await chat('short', 'only');
    for (const index of [2, -1, 99]) {
      const r = await call('POST', '/threads/short/fork', { message_index: index });
      expect(r.status).toBe(422);
      expect(r.body.detail).toMatch(/message_index/);
      expect(r.body.code).toBe('HANGAR_THREAD_FORK_OUT_OF_RANGE');
    }
    expect((await call('POST', '/threads/short/fork', { message_index: 2 })).body.detail).toBe(
      "body.message_index: 2 is out of range; thread 'short' has 2 message(s) (valid: 0-1)",
    );
    expect((await call('POST', '/threads/short/fork', {})).status).toBe(422);
    expect((await call('POST', '/threads/missing/fork', { message_index: 0 })).status).toBe(404);
  });

  it('summarises extractively with no model, and regenerates once messages change', async () => {
    await chat('sum', 'Tell me about the lighthouse keeper. The lighthouse stands on a rock.');
    const first = await call('GET', '/threads/sum/summary');
    expect(first.body).toMatchObject({ thread_id: 'sum', method: 'extractive' });
    expect(first.body.summary).toMatch(/lighthouse/);
    expect(first.body.summary).toMatch(/^2 messages/);
    await chat('sum', 'And the boats?');
    const second = await call('GET', '/threads/sum/summary');
    expect(second.body.summary).toMatch(/^4 messages/);
  });

  it('answers 404 for an unknown agent', async () => {
    expect(await server.request('/api/v1/ghost/threads')).toMatchObject({
      status: 404,
      body: { detail: 'agent "ghost" not found', code: 'HANGAR_AGENT_NOT_FOUND' },
    });
  });
});

describe('thread service', () => {
  let dir: string;
  let fake: FakeOpenAI;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-threads-'));
    fake = await startFakeOpenAI();
  });
  afterAll(async () => {
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('summarises with the model when configured and caches until the messages change', async () => {
    const provider = createModelProvider({ baseUrl: fake.baseUrl, model: 'm', timeoutMs: 2000, retries: 0 });
    const threads = new ThreadService(new LowdbStore(path.join(dir, 'a')), provider);
    await threads.create('a', { thread_id: 't', user_id: 'u', title: null, metadata: {} });
    await threads.append('a', 't', [{ role: 'user', content: 'hello' }]);
    fake.enqueue({ content: 'A greeting.' }, { content: 'A greeting and a farewell.' });
    const before = fake.requests.length;
    expect(await threads.summary('a', 't')).toMatchObject({ summary: 'A greeting.', method: 'model' });
    expect(await threads.summary('a', 't')).toMatchObject({ summary: 'A greeting.' });
    expect(fake.requests.length - before).toBe(1);
    expect(fake.requests.at(-1)!.body.messages.at(-1)!.content).toContain('user: hello');
    await threads.append('a', 't', [{ role: 'user', content: 'bye' }]);
    expect((await threads.summary('a', 't')).summary).toBe('A greeting and a farewell.');
  });

  it('falls back to an extractive summary when the model fails, without caching it', async () => {
    const provider = createModelProvider({ baseUrl: fake.baseUrl, model: 'm', timeoutMs: 2000, retries: 0 });
    const errors: unknown[] = [];
    const threads = new ThreadService(new LowdbStore(path.join(dir, 'b')), provider, (e) => errors.push(e));
    await threads.create('a', { thread_id: 't', user_id: 'u', title: null, metadata: {} });
    await threads.append('a', 't', [{ role: 'user', content: 'The quick fox.' }]);
    fake.enqueue({ status: 500 }, { content: 'Model is back.' });
    expect(await threads.summary('a', 't')).toMatchObject({ method: 'extractive' });
    expect(errors).toHaveLength(1);
    expect(await threads.summary('a', 't')).toMatchObject({ summary: 'Model is back.', method: 'model' });
  });

  it('keeps threads and messages across a restart (a new store on the same folder)', async () => {
    const root = path.join(dir, 'c');
    const first = new ThreadService(new LowdbStore(root), new UnconfiguredProvider());
    await first.create('a', { thread_id: 'keep', user_id: 'u', title: 'Kept', metadata: {} });
    await first.append('a', 'keep', [{ role: 'user', content: 'remember me' }]);
    const second = new ThreadService(new LowdbStore(root), new UnconfiguredProvider());
    expect((await second.get('a', 'keep')).title).toBe('Kept');
    expect((await second.allMessages('a', 'keep')).map((m) => m.content)).toEqual(['remember me']);
  });

  it("extractive summary picks the sentences sharing the conversation's frequent words", () => {
    const text = extractiveSummary([
      { role: 'user', content: 'Our invoice export fails. The invoice export shows an error. Weather is nice.', timestamp: '' },
      { role: 'assistant', content: 'Retry the invoice export after updating.', timestamp: '' },
    ]);
    expect(text).toMatch(/topics: (invoice|export)/);
    expect(text).toContain('invoice export fails');
    expect(extractiveSummary([])).toBe('This thread has no messages yet.');
  });
});

describe('updated_at', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false } });
  });
  afterAll(() => server?.stop());

  it('follows the conversation: a chat turn and a clear move it, reading does not', async () => {
    const call = (method: string, p: string, json?: unknown) => server.request(`/api/v1/echo${p}`, { method, json });
    const created = (await call('POST', '/threads', { thread_id: 'moving' })).body;
    expect(created.updated_at).toBe(created.created_at);
    await new Promise((r) => setTimeout(r, 5));
    await call('POST', '/chat', { content: 'hello', thread_id: 'moving' });
    const afterChat = (await call('GET', '/threads/moving')).body.updated_at;
    expect(afterChat > created.updated_at).toBe(true);
    await call('GET', '/threads/moving/messages');
    expect((await call('GET', '/threads/moving')).body.updated_at).toBe(afterChat);
    // A list shows the same time as the thread itself.
    const listed = (await call('GET', '/threads')).body.threads.find((t: { id: string }) => t.id === 'moving');
    expect(listed.updated_at).toBe(afterChat);
    await new Promise((r) => setTimeout(r, 5));
    await call('DELETE', '/threads/moving/messages');
    const afterClear = (await call('GET', '/threads/moving')).body.updated_at;
    expect(afterClear > afterChat).toBe(true);
    // Renaming moves it too, past the conversation's last change.
    await new Promise((r) => setTimeout(r, 5));
    const renamed = (await call('PATCH', '/threads/moving', { title: 'renamed' })).body;
    expect(renamed.updated_at > afterClear).toBe(true);
    expect((await call('GET', '/threads/moving')).body.updated_at).toBe(renamed.updated_at);
  });
});

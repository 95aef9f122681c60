import { cp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bm25Index, splitMarkdown } from '../../agents/docs-agent/bm25.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { makeWorkspace, startTestServer, type TestServer } from '../support/server.js';

const shipped = fileURLToPath(new URL('../../agents', import.meta.url));

/** The shipped examples, copied into a fresh workspace as a new install would have them. */
async function freshWorkspace(): Promise<string> {
  const root = await makeWorkspace();
  await cp(shipped, path.join(root, 'agents'), { recursive: true });
  return root;
}

describe('shipped example agents, with no model configured', () => {
  let server: TestServer;
  let root: string;
  beforeAll(async () => {
    root = await freshWorkspace();
    server = await startTestServer({ root, settings: { watch: false } });
  });
  afterAll(async () => {
    await server?.stop();
    await rm(root, { recursive: true, force: true });
  });

  const invoke = (agent: string, json: unknown) => server.request(`/api/v1/${agent}/invoke`, { method: 'POST', json });

  it('all load', async () => {
    const { body } = await server.request('/api/v1/agents');
    expect(Object.keys(body.agents)).toEqual(expect.arrayContaining(['docs-agent', 'approval', 'chat']));
  });

  it('docs-agent answers from the Markdown with citations and suggestions', async () => {
    const { status, body } = await invoke('docs-agent', { query: 'How do I fork a thread?' });
    expect(status).toBe(200);
    expect(body.citations[0]).toMatchObject({ source: 'docs/threads-and-chat.md', title: 'Forking and lineage' });
    expect(body.response).toMatch(/message_index/);
    expect(body.response).toMatch(/\[1\]/);
    expect(body.suggestions.length).toBeGreaterThan(0);
    expect(body.steps_taken).toEqual(['retrieve', 'compose']);
    expect(body.metadata.answered_by).toBe('extractive');
  });

  it('docs-agent indexes the workspace docs/ folder too, and says when nothing matches', async () => {
    await server.write('docs/deploy.md', '# Deploying on a boat\n\nHangar runs fine on a houseboat with solar power.\n');
    const { body } = await invoke('docs-agent', { query: 'houseboat solar' });
    expect(body.citations[0]).toMatchObject({ source: 'docs/deploy.md', title: 'Deploying on a boat' });
    const none = await invoke('docs-agent', { query: 'zzzqqq' });
    expect(none.body.response).toMatch(/could not find/);
    expect(none.body.citations).toEqual([]);
  });

  it('docs-agent reports its retrieval through /optimize/invoke', async () => {
    const { body } = await server.request('/api/v1/docs-agent/optimize/invoke', { method: 'POST', json: { query: 'prompt versions' } });
    expect(body.retrieval_context.length).toBeGreaterThan(0);
    expect(body.tool_calls[0]).toMatchObject({ name: 'bm25_search' });
    expect(body.reasoning).toMatch(/BM25/);
  });

  it('approval publishes only after a person approves', async () => {
    const outbox = path.join(root, '.hangar', 'outbox', 'notes.jsonl');
    const suspended = await invoke('approval', { query: 'Ship it on Friday', thread_id: 'note-1' });
    expect(suspended.status).toBe(202);
    expect(suspended.body.detail).toMatchObject({ node_name: 'review', message: 'Publish this note? "Ship it on Friday"' });
    await expect(readFile(outbox, 'utf8')).rejects.toThrow();
    const done = await server.request('/api/v1/approval/threads/note-1/approve', {
      method: 'POST',
      json: { approval_id: suspended.body.detail.approval_id, context: { reviewer: 'ada' } },
    });
    expect(done.body.response).toBe('Published: "Ship it on Friday"');
    const lines = (await readFile(outbox, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([expect.objectContaining({ note: 'Ship it on Friday', approved_by: 'ada', thread_id: 'note-1' })]);
    expect((await invoke('approval', { query: '   ' })).body.response).toBe('Nothing to publish.');
  });

  it('chat says which setting to configure', async () => {
    const { status, body } = await invoke('chat', { query: 'hello' });
    expect(status).toBe(503);
    expect(body.detail).toMatch(/model\.baseUrl/);
    expect(body.detail).toMatch(/HANGAR_MODEL__BASE_URL/);
  });
});

describe('shipped example agents, with a model', () => {
  let server: TestServer;
  let fake: FakeOpenAI;
  let root: string;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    root = await freshWorkspace();
    server = await startTestServer({ root, settings: { watch: false, model: { baseUrl: fake.baseUrl, model: 'fake-chat', retries: 0 } } });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('chat keeps a conversation with the model and the thread history', async () => {
    fake.enqueue({ content: 'Hi! How can I help?' }, { content: 'You said hello.' });
    await server.request('/api/v1/chat/chat', { method: 'POST', json: { content: 'hello', thread_id: 'c1' } });
    const second = await server.request('/api/v1/chat/chat', { method: 'POST', json: { content: 'what did I say?', thread_id: 'c1' } });
    expect(second.body).toMatchObject({ response: 'You said hello.', history_loaded: 2, metadata: { model: 'fake-chat' } });
    const sent = fake.requests.at(-1)!.body.messages;
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(sent[0]!.content).toMatch(/Hangar/);
  });

  it('docs-agent writes its answer with the model from the retrieved sections', async () => {
    fake.enqueue({ content: 'Use POST /fork [1].' });
    const { body } = await server.request('/api/v1/docs-agent/invoke', { method: 'POST', json: { query: 'fork a thread' } });
    expect(body).toMatchObject({ response: 'Use POST /fork [1].', metadata: { answered_by: 'model' } });
    expect(fake.requests.at(-1)!.body.messages[1]!.content).toMatch(/\[1\] Forking and lineage/);
  });
});

describe('docs-agent over the ingested docs collection', () => {
  let server: TestServer;
  let root: string;
  beforeAll(async () => {
    root = await freshWorkspace();
    await cp(fileURLToPath(new URL('../../ingestors', import.meta.url)), path.join(root, 'ingestors'), { recursive: true });
    server = await startTestServer({ root, settings: { watch: false } });
  });
  afterAll(async () => {
    await server?.stop();
    await rm(root, { recursive: true, force: true });
  });

  it('reads files directly until an ingestor fills the collection, then answers from it', async () => {
    await server.write('docs/kayak.md', '# Kayak launches\n\nThe kayak ramp opens at dawn on weekdays.\n');
    const before = await server.request('/api/v1/docs-agent/invoke', { method: 'POST', json: { query: 'kayak ramp dawn' } });
    expect(before.body.metadata.source).toBe('files');

    const run = await server.request('/api/v1/ingestion/docs-folder/run', { method: 'POST', json: {} });
    expect(run.status).toBe(200);
    const after = await server.request('/api/v1/docs-agent/invoke', { method: 'POST', json: { query: 'kayak ramp dawn' } });
    expect(after.body.metadata.source).toBe('collection:docs');
    expect(after.body.citations[0]).toMatchObject({ source: 'docs/kayak.md', title: 'Kayak launches' });
    expect(after.body.response).toContain('The kayak ramp opens at dawn on weekdays.');
  });
});

describe('BM25', () => {
  it('ranks the section whose terms are rarer and denser first', () => {
    const passages = [
      ...splitMarkdown('a.md', '# Cats\n\nCats purr. Cats sleep a lot.\n\n# Dogs\n\nDogs bark at cats.'),
      ...splitMarkdown('b.md', '# Birds\n\nBirds sing.\n```\n# not a heading\n```'),
    ];
    expect(passages.map((p) => p.title)).toEqual(['Cats', 'Dogs', 'Birds']);
    const index = new Bm25Index(passages);
    expect(index.search('cat').map((h) => h.title)).toEqual(['Cats', 'Dogs']);
    expect(index.search('barking dogs')[0]!.title).toBe('Dogs');
    expect(index.search('unrelated')).toEqual([]);
  });
});

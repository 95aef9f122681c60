/**
 * Issue #18, item 5: with several principals in `auth.tokens`, nobody reads, lists, changes or
 * approves another's records. Threads (and chat on them), studio state, history and runs,
 * checkpoints, pending approvals, feedback and pipeline runs: another principal gets exactly the
 * 404 an unknown id gets, and lists show only the caller's own. `local` (no tokens) sees all.
 */
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, makeWorkspace, startTestServer, type TestServer } from '../support/server.js';

const TOKENS = { alice: 'alice-secret-token', bob: 'bob-secret-token' };
type Who = keyof typeof TOKENS;

/** The echo agent repeats the history it was given, so a leaked history would show in bob's answer. */
const files = async () => ({
  'agents/echo.ts': agentSource(
    `{ run: async (input) => 'echo: ' + input.query + ' | heard: ' + input.history.map((m) => m.content).join(' / ') }`,
  ),
  'agents/approval.ts': await readFile(path.resolve('agents/approval.ts'), 'utf8'),
  'pipelines/shout.json': JSON.stringify({ name: 'shout', steps: [{ name: 'say', agent: 'echo', input: { query: '$.input.text' } }] }),
});

let root: string;
let server: TestServer;

beforeAll(async () => {
  root = await makeWorkspace(await files());
  server = await startTestServer({ root, settings: { watch: false, auth: { tokens: TOKENS } } as never });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await rm(root, { recursive: true, force: true });
});

function as(who: Who) {
  const call = (method: string, p: string, json?: unknown) =>
    server.request(p, {
      method,
      json: json ?? (method === 'GET' || method === 'DELETE' ? undefined : {}),
      headers: { authorization: `Bearer ${TOKENS[who]}` },
    });
  return {
    get: (p: string) => call('GET', p),
    post: (p: string, json?: unknown) => call('POST', p, json),
    patch: (p: string, json: unknown) => call('PATCH', p, json),
    delete: (p: string) => call('DELETE', p),
  };
}
const alice = as('alice');
const bob = as('bob');

/**
 * Bob's answer for alice's id must be the answer for an id that never existed: same status, same
 * detail with the id swapped. `unknownPath` is the same route with the unknown id.
 */
async function sameAsUnknown(
  response: { status: number; body: any },
  unknown: { status: number; body: any },
  id: string,
  unknownId: string,
) {
  expect(response.status).toBe(unknown.status);
  expect(response.status).toBe(404);
  expect(response.body).toEqual(JSON.parse(JSON.stringify(unknown.body).replaceAll(unknownId, id)));
}

describe('threads of another principal', () => {
  beforeAll(async () => {
    expect((await alice.post('/api/v1/echo/threads', { thread_id: 'alice-1', title: 'Salary talk' })).status).toBe(200);
    const chat = await alice.post('/api/v1/echo/chat', { thread_id: 'alice-1', content: 'my salary is 9000' });
    expect(chat.status).toBe(200);
    expect((await bob.post('/api/v1/echo/threads', { thread_id: 'bob-1' })).status).toBe(200);
  });

  it('are not readable: get, messages, summary, lineage answer as for an unknown id', async () => {
    for (const suffix of ['', '/messages', '/summary', '/lineage']) {
      await sameAsUnknown(
        await bob.get(`/api/v1/echo/threads/alice-1${suffix}`),
        await bob.get(`/api/v1/echo/threads/never-1${suffix}`),
        'alice-1',
        'never-1',
      );
    }
    expect((await alice.get('/api/v1/echo/threads/alice-1/messages')).body.total).toBe(2);
  });

  it('are not listed', async () => {
    const bobs = await bob.get('/api/v1/echo/threads');
    expect(bobs.body.threads.map((t: { id: string }) => t.id)).toEqual(['bob-1']);
    const alices = await alice.get('/api/v1/echo/threads');
    expect(alices.body.threads.map((t: { id: string }) => t.id)).toEqual(['alice-1']);
    expect(alices.body.threads[0].principal).toBe('alice');
  });

  it('cannot be changed, cleared, forked or deleted', async () => {
    await sameAsUnknown(
      await bob.patch('/api/v1/echo/threads/alice-1', { title: 'mine' }),
      await bob.patch('/api/v1/echo/threads/never-1', { title: 'mine' }),
      'alice-1',
      'never-1',
    );
    await sameAsUnknown(
      await bob.delete('/api/v1/echo/threads/alice-1/messages'),
      await bob.delete('/api/v1/echo/threads/never-1/messages'),
      'alice-1',
      'never-1',
    );
    await sameAsUnknown(
      await bob.post('/api/v1/echo/threads/alice-1/fork', { message_index: 0 }),
      await bob.post('/api/v1/echo/threads/never-1/fork', { message_index: 0 }),
      'alice-1',
      'never-1',
    );
    await sameAsUnknown(
      await bob.delete('/api/v1/echo/threads/alice-1'),
      await bob.delete('/api/v1/echo/threads/never-1'),
      'alice-1',
      'never-1',
    );
    const kept = await alice.get('/api/v1/echo/threads/alice-1');
    expect(kept.body).toMatchObject({ id: 'alice-1', title: 'Salary talk' });
    expect((await alice.get('/api/v1/echo/threads/alice-1/messages')).body.total).toBe(2);
  });

  it('cannot be chatted on or invoked with: no history reaches the model, nothing is appended', async () => {
    const chat = await bob.post('/api/v1/echo/chat', { thread_id: 'alice-1', content: 'what did she say?' });
    expect(chat.status).toBe(404);
    expect(chat.body.detail).toBe("thread 'alice-1' not found for agent 'echo'");
    expect(chat.text).not.toContain('9000');
    const invoke = await bob.post('/api/v1/echo/invoke', { thread_id: 'alice-1', query: 'x' });
    expect(invoke.status).toBe(404);
    const stream = await bob.post('/api/v1/echo/invoke/stream', { thread_id: 'alice-1', query: 'x' });
    expect(stream.status).toBe(404);
    expect((await alice.get('/api/v1/echo/threads/alice-1/messages')).body.total).toBe(2);
    // Alice's own chat still carries her history.
    const own = await alice.post('/api/v1/echo/chat', { thread_id: 'alice-1', content: 'and now?' });
    expect(own.body.response).toContain('my salary is 9000');
  });

  it('cannot be taken over by creating a thread with its id (the 409 of any taken id)', async () => {
    const taken = await bob.post('/api/v1/echo/threads', { thread_id: 'alice-1' });
    expect(taken.status).toBe(409);
    expect(taken.text).not.toContain('Salary');
  });
});

describe('studio state, history and runs of another principal', () => {
  let runId: string;
  beforeAll(async () => {
    const run = await alice.post('/studio/agents/echo/runs', { thread_id: 'alice-studio', query: 'secret plan' });
    expect(run.status).toBe(200);
    runId = run.body.run_id;
  });

  it('thread state, history and state edits answer as for an unknown thread', async () => {
    const base = '/studio/agents/echo/threads';
    await sameAsUnknown(await bob.get(`${base}/alice-studio/state`), await bob.get(`${base}/never-2/state`), 'alice-studio', 'never-2');
    await sameAsUnknown(await bob.get(`${base}/alice-studio/history`), await bob.get(`${base}/never-2/history`), 'alice-studio', 'never-2');
    await sameAsUnknown(
      await bob.post(`${base}/alice-studio/state`, { updates: { response: 'owned' } }),
      await bob.post(`${base}/never-2/state`, { updates: { response: 'owned' } }),
      'alice-studio',
      'never-2',
    );
    await sameAsUnknown(
      await bob.post(`${base}/alice-studio/resume`, { action: 'approve' }),
      await bob.post(`${base}/never-2/resume`, { action: 'approve' }),
      'alice-studio',
      'never-2',
    );
    // Checkpoints of a chat thread are the thread's too.
    await sameAsUnknown(await bob.get(`${base}/alice-1/history`), await bob.get(`${base}/never-2/history`), 'alice-1', 'never-2');
    const own = await alice.get(`${base}/alice-studio/state`);
    expect(own.status).toBe(200);
    expect(JSON.stringify(own.body)).toContain('secret plan');
    expect((await alice.get(`${base}/alice-studio/history`)).body.length).toBeGreaterThan(0);
  });

  it('a run cannot start on the thread, and the thread is not written', async () => {
    const before = (await alice.get('/studio/agents/echo/threads/alice-studio/history')).body.length;
    const run = await bob.post('/studio/agents/echo/runs', { thread_id: 'alice-studio', query: 'tell me' });
    expect(run.status).toBe(404);
    expect((await bob.post('/studio/agents/echo/runs/stream', { thread_id: 'alice-studio', query: 'tell me' })).status).toBe(404);
    expect((await alice.get('/studio/agents/echo/threads/alice-studio/history')).body.length).toBe(before);
  });

  it('runs are not listed, read, followed or cancelled', async () => {
    const base = '/studio/agents/echo/runs';
    expect((await bob.get(base)).body).toEqual([]);
    expect((await alice.get(base)).body.map((r: { run_id: string }) => r.run_id)).toContain(runId);
    await sameAsUnknown(await bob.get(`${base}/${runId}`), await bob.get(`${base}/never-run`), runId, 'never-run');
    await sameAsUnknown(await bob.get(`${base}/${runId}/stream`), await bob.get(`${base}/never-run/stream`), runId, 'never-run');
    await sameAsUnknown(await bob.post(`${base}/${runId}/cancel`), await bob.post(`${base}/never-run/cancel`), runId, 'never-run');
    expect((await alice.get(`${base}/${runId}`)).body).toMatchObject({ run_id: runId, principal: 'alice' });
  });
});

describe('pending approvals of another principal', () => {
  const outbox = () => path.join(root, '.hangar', 'outbox', 'notes.jsonl');

  it('are not seen, approved or rejected — and so nothing is published', async () => {
    const suspended = await alice.post('/api/v1/approval/invoke', { thread_id: 'alice-pub', query: 'quarterly numbers' });
    expect(suspended.status).toBe(202);
    const approvalId = suspended.body.detail.approval_id;

    const unknownPending = await bob.get('/api/v1/approval/threads/never-3/pending');
    const pending = await bob.get('/api/v1/approval/threads/alice-pub/pending');
    expect(pending.status).toBe(200);
    expect(pending.body).toEqual({ ...unknownPending.body, thread_id: 'alice-pub' });
    expect(pending.text).not.toContain('quarterly');

    await sameAsUnknown(
      await bob.post('/api/v1/approval/threads/alice-pub/approve', { approval_id: approvalId }),
      await bob.post('/api/v1/approval/threads/alice-pub/approve', { approval_id: 'never-approval' }),
      approvalId,
      'never-approval',
    );
    await sameAsUnknown(
      await bob.post('/api/v1/approval/threads/alice-pub/reject', { approval_id: approvalId }),
      await bob.post('/api/v1/approval/threads/alice-pub/reject', { approval_id: 'never-approval' }),
      approvalId,
      'never-approval',
    );
    expect(existsSync(outbox())).toBe(false);

    const own = await alice.get('/api/v1/approval/threads/alice-pub/pending');
    expect(own.body.count).toBe(1);
    const approved = await alice.post('/api/v1/approval/threads/alice-pub/approve', {
      approval_id: approvalId,
      context: { reviewer: 'alice' },
    });
    expect(approved.status).toBe(200);
    expect(approved.body.response).toContain('Published');
    expect(await readFile(outbox(), 'utf8')).toContain('quarterly numbers');
  });

  it('of a stateless invoke (a generated thread id) are not approved either', async () => {
    const suspended = await alice.post('/api/v1/approval/invoke', { query: 'no thread named' });
    expect(suspended.status).toBe(202);
    const thread = suspended.headers.get('x-thread-id')!;
    const approve = await bob.post(`/api/v1/approval/threads/${thread}/approve`, { approval_id: suspended.body.detail.approval_id });
    expect(approve.status).toBe(404);
    expect((await alice.get(`/api/v1/approval/threads/${thread}/pending`)).body.count).toBe(1);
  });
});

describe('feedback of another principal', () => {
  it('is neither listed nor exported', async () => {
    expect((await alice.post('/api/v1/echo/feedback', { rating: 2, comment: 'alice thinks it is slow' })).status).toBe(200);
    expect((await bob.post('/api/v1/echo/feedback', { rating: 5, comment: 'bob likes it' })).status).toBe(200);
    const bobs = await bob.get('/api/v1/echo/feedback');
    expect(bobs.body.feedback.map((f: { comment: string }) => f.comment)).toEqual(['bob likes it']);
    const exported = await bob.get('/api/v1/echo/feedback/export');
    expect(exported.body.count).toBe(1);
    expect(exported.body.data).not.toContain('alice');
    expect((await alice.get('/api/v1/echo/feedback')).body.feedback).toEqual([
      expect.objectContaining({ comment: 'alice thinks it is slow', principal: 'alice' }),
    ]);
  });
});

describe('pipeline runs of another principal', () => {
  it('are neither listed nor read', async () => {
    const run = await alice.post('/api/v1/pipelines/shout/run', { text: 'private words' });
    expect(run.status).toBe(200);
    expect((await bob.get('/api/v1/pipelines/shout/runs')).body).toEqual({ runs: [] });
    await sameAsUnknown(
      await bob.get(`/api/v1/pipelines/shout/runs/${run.body.id}`),
      await bob.get('/api/v1/pipelines/shout/runs/never-run'),
      run.body.id,
      'never-run',
    );
    expect((await alice.get('/api/v1/pipelines/shout/runs')).body.runs.map((r: { id: string }) => r.id)).toEqual([run.body.id]);
    expect((await alice.get(`/api/v1/pipelines/shout/runs/${run.body.id}`)).body.output).toBeDefined();
  });
});

describe('local, on a server without tokens', () => {
  it('sees every principal’s records, as before', async () => {
    await server.stop();
    server = await startTestServer({ root, settings: { watch: false } });
    const threads = (await server.request('/api/v1/echo/threads')).body.threads.map((t: { id: string }) => t.id);
    expect(threads).toEqual(expect.arrayContaining(['alice-1', 'bob-1']));
    expect((await server.request('/api/v1/echo/threads/alice-1/messages')).body.total).toBe(4);
    expect((await server.request('/studio/agents/echo/threads/alice-studio/state')).status).toBe(200);
    expect((await server.request('/api/v1/approval/threads/no-such/pending')).body.count).toBe(0);
    expect((await server.request('/api/v1/echo/feedback')).body.count).toBe(2);
    expect((await server.request('/api/v1/pipelines/shout/runs')).body.runs).toHaveLength(1);
    expect((await server.request('/studio/agents/echo/runs')).body.length).toBeGreaterThan(0);
  });

  it('the desktop window (a run-time token, no auth.tokens) is that same local user', async () => {
    server.ctx.runtimeTokens.desktop = 'window-token';
    try {
      const window = { headers: { authorization: 'Bearer window-token' } };
      expect((await server.request('/api/v1/echo/threads')).status).toBe(401);
      const threads = (await server.request('/api/v1/echo/threads', window)).body.threads.map((t: { id: string }) => t.id);
      expect(threads).toEqual(expect.arrayContaining(['alice-1', 'bob-1']));
      const made = await server.request('/api/v1/echo/chat', {
        ...window,
        method: 'POST',
        json: { thread_id: 'from-window', content: 'hi' },
      });
      expect(made.status).toBe(200);
      expect((await server.request('/api/v1/echo/threads/from-window', window)).body.principal).toBe('local');
      expect((await server.request('/studio/agents/echo/threads/alice-studio/history', window)).status).toBe(200);
    } finally {
      delete server.ctx.runtimeTokens.desktop;
    }
  });
});

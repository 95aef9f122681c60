import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Checkpoint, StoreCheckpointer } from '../../core/agents/checkpointer.js';
import type { ChatMessage } from '../../core/agents/types.js';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import { ThreadService } from '../../core/threads/service.js';
import { agentSource, startTestServer } from '../support/server.js';

/**
 * Checkpoints on the workspace store: a step stores the channels it changed and refers to the
 * thread's messages by position, so its cost is that of its change, however long the thread is.
 */
const openStore = async () => new SqliteStore(path.join(await mkdtemp(path.join(os.tmpdir(), 'hangar-cp-')), 'hangar.db'));
const noModel = { configured: false, complete: async () => '' };

/** A checkpoint as the engine writes one for a chat turn: the state holds the history and the question. */
function turnCheckpoint(
  thread: string,
  n: number,
  history: ChatMessage[],
  options: { source?: 'input' | 'loop'; parent?: string | null; response?: string } = {},
): Checkpoint {
  const query = `question ${n} ${'x'.repeat(40)}`;
  const input = {
    query,
    user_id: 'u',
    context: {},
    thread_id: thread,
    metadata: {},
    prompt_version: 'v1',
    temperature: null,
    max_tokens: null,
    history,
  };
  return {
    id: `cp-${n}-${options.source ?? 'input'}`,
    thread_id: thread,
    step: n,
    state: {
      messages: [...history, { role: 'user', content: query }],
      response: options.response ?? '',
      steps_taken: options.source === 'loop' ? ['agent'] : [],
      metadata: {},
    },
    metadata: {
      run_id: `run-${n}`,
      agent: 'chat',
      source: options.source ?? 'input',
      node: options.source === 'loop' ? 'agent' : null,
      next: options.source === 'loop' ? null : 'agent',
      input,
    },
    parent_id: options.parent ?? null,
    timestamp: new Date(1_700_000_000_000 + n).toISOString(),
  };
}

/** Chat turns as /chat makes them: two checkpoints from the newest history, then the messages appended. */
async function chat(
  threads: ThreadService,
  checkpoints: StoreCheckpointer,
  thread: string,
  turns: number,
  from = 0,
): Promise<Checkpoint[]> {
  const written: Checkpoint[] = [];
  for (let n = from; n < from + turns; n++) {
    const history = (await threads.history('chat', thread, 100)) as ChatMessage[];
    const first = turnCheckpoint(thread, n * 2, history);
    const answer = `answer ${n} ${'y'.repeat(40)}`;
    const second: Checkpoint = {
      ...first,
      id: `cp-${n * 2 + 1}-loop`,
      step: first.step + 1,
      state: { ...first.state, response: answer, steps_taken: ['agent'] },
      metadata: { ...first.metadata, source: 'loop', node: 'agent', next: null },
      parent_id: first.id,
      timestamp: new Date(Date.parse(first.timestamp) + 1).toISOString(),
    };
    await checkpoints.put('chat', first, 'alice');
    await checkpoints.put('chat', second, 'alice');
    await threads.append('chat', thread, [
      { role: 'user', content: first.metadata.input.query },
      { role: 'assistant', content: answer },
    ]);
    written.push(first, second);
  }
  return written;
}

const checkpointBytes = (store: SqliteStore) =>
  (
    store
      .statement("SELECT SUM(pgsize) AS b FROM dbstat WHERE name IN ('cp_steps', 'cp_steps_id', 'cp_blobs', 'cp_messages', 'cp_chains')")
      .get() as { b: number }
  ).b;

describe('persistent checkpoints', () => {
  it('read back exactly what was written: states, metadata, parents, times, by list, get and latest', async () => {
    const store = await openStore();
    const threads = new ThreadService(store, noModel);
    const checkpoints = new StoreCheckpointer(store);
    const written = await chat(threads, checkpoints, 't1', 30);
    const listed = await checkpoints.list('chat', 't1');
    expect(listed).toStrictEqual([...written].reverse());
    expect(await checkpoints.get('chat', 't1', 'cp-21-loop')).toStrictEqual(written[21]);
    expect(await checkpoints.latest('chat', 't1')).toStrictEqual(written.at(-1));
    expect((await checkpoints.list('chat', 't1', 3)).map((c) => c.id)).toEqual(['cp-59-loop', 'cp-58-input', 'cp-57-loop']);
    expect(await checkpoints.get('chat', 't1', 'no-such-step')).toBeUndefined();
    expect(await checkpoints.owner('chat', 't1')).toBe('alice');
  });

  it('a step stores what changed, not the conversation: late turns cost what early ones did', async () => {
    const store = await openStore();
    const threads = new ThreadService(store, noModel);
    const checkpoints = new StoreCheckpointer(store);
    await chat(threads, checkpoints, 'long', 150);
    const early = checkpointBytes(store);
    await chat(threads, checkpoints, 'long', 300, 150);
    const late = checkpointBytes(store) - early;
    // 300 turns with 100 messages of history each: copying them would take megabytes.
    expect(late / 300).toBeLessThan(700);
    expect(late / 300).toBeLessThan((early / 150) * 1.5);
    const messages = (store.statement('SELECT COUNT(*) AS n FROM cp_messages').get() as { n: number }).n;
    expect(messages).toBe(0);
  });

  it('a message list no thread log holds is stored once, in the chain (a studio conversation)', async () => {
    const store = await openStore();
    const checkpoints = new StoreCheckpointer(store);
    let conversation: ChatMessage[] = [];
    const written: Checkpoint[] = [];
    for (let n = 0; n < 40; n++) {
      const checkpoint = turnCheckpoint('studio', n, conversation, { source: 'loop', response: `answer ${n}` });
      checkpoint.state.messages = [...checkpoint.state.messages, { role: 'assistant', content: `answer ${n}` }];
      await checkpoints.put('chat', checkpoint);
      written.push(checkpoint);
      conversation = checkpoint.state.messages;
    }
    expect(await checkpoints.list('chat', 'studio')).toStrictEqual([...written].reverse());
    const stored = (store.statement('SELECT COUNT(*) AS n FROM cp_messages').get() as { n: number }).n;
    expect(stored).toBe(80);
  });

  it('clearing the thread keeps the checkpoints whole: what they referred to is copied first', async () => {
    const store = await openStore();
    const threads = new ThreadService(store, noModel);
    const checkpoints = new StoreCheckpointer(store);
    threads.attach({
      name: 'checkpoints',
      owner: (agent, id) => checkpoints.owner(agent, id),
      beforeMessagesReplaced: (agent, id) => checkpoints.detachMessages(agent, id),
      delete: (agent, id) => checkpoints.delete(agent, id),
    });
    await threads.create('chat', { thread_id: 'c1', user_id: 'u', title: null, metadata: {} });
    const before = await chat(threads, checkpoints, 'c1', 12);
    await threads.clear('chat', 'c1');
    expect(await checkpoints.list('chat', 'c1')).toStrictEqual([...before].reverse());
    const after = await chat(threads, checkpoints, 'c1', 3, 12);
    expect(await checkpoints.list('chat', 'c1')).toStrictEqual([...before, ...after].reverse());
  });

  it('checkpoints.keep: the newest N per thread stay, older ones go in the background with what only they used', async () => {
    const store = await openStore();
    const threads = new ThreadService(store, noModel);
    const checkpoints = new StoreCheckpointer(store, { keep: 10 });
    const written = await chat(threads, checkpoints, 'k', 40);
    await chat(threads, checkpoints, 'other', 3);
    await checkpoints.settled();
    const kept = await checkpoints.list('chat', 'k');
    expect(kept.length).toBeGreaterThanOrEqual(10);
    expect(kept.length).toBeLessThanOrEqual(10 + 10);
    expect(kept).toStrictEqual([...written].reverse().slice(0, kept.length));
    // (So the oldest kept step still names its parent, pruned or not.)
    expect(await checkpoints.get('chat', 'k', written[0]!.id)).toBeUndefined();
    const blobs = (store.statement('SELECT COUNT(*) AS n FROM cp_blobs').get() as { n: number }).n;
    // Per turn a response and a run patch, and the runs' base; the other thread's 3 turns.
    expect(blobs).toBeLessThanOrEqual(kept.length + 2 + 7);
    expect(await checkpoints.list('chat', 'other')).toHaveLength(6);
  });

  it('checkpoints.keep also drops the messages of a studio conversation that only pruned steps used', async () => {
    const store = await openStore();
    const checkpoints = new StoreCheckpointer(store, { keep: 4 });
    let conversation: ChatMessage[] = [];
    const written: Checkpoint[] = [];
    for (let n = 0; n < 30; n++) {
      // Each step's conversation is its own (a new question replaces the list): older messages stop being used.
      conversation = [{ role: 'user', content: `topic ${n}` }];
      const checkpoint = turnCheckpoint('studio', n, conversation, { source: 'loop' });
      await checkpoints.put('chat', checkpoint);
      written.push(checkpoint);
    }
    await checkpoints.settled();
    const kept = await checkpoints.list('chat', 'studio');
    expect(kept).toStrictEqual([...written].reverse().slice(0, kept.length));
    const stored = (store.statement('SELECT COUNT(*) AS n FROM cp_messages').get() as { n: number }).n;
    expect(stored).toBeLessThanOrEqual(kept.length);
  });

  it('checkpoints.keep is a setting the server honours', async () => {
    const server = await startTestServer({
      files: { 'agents/echo.ts': agentSource(`{ run: async (input) => 'echo: ' + input.query }`) },
      settings: { logLevel: 'error', checkpoints: { keep: 6 } },
    });
    try {
      for (let turn = 0; turn < 30; turn++) {
        const res = await server.request('/api/v1/echo/chat', { method: 'POST', json: { content: `turn ${turn}`, thread_id: 'kept' } });
        expect(res.status).toBe(200);
      }
      await (server.ctx.services.get('agents').service.checkpoints as StoreCheckpointer).settled();
      const history = (await server.request('/studio/agents/echo/threads/kept/history')).body as Checkpoint[];
      expect(history.length).toBeGreaterThanOrEqual(6);
      expect(history.length).toBeLessThanOrEqual(6 + 10);
      expect(history[0]!.state.response).toBe('echo: turn 29');
      // The thread keeps every message; only checkpoints are pruned.
      expect(await server.ctx.services.get('agents').threads.allMessages('echo', 'kept')).toHaveLength(60);
    } finally {
      await server.stop();
    }
  });

  it('converts both older layouts when a thread is first touched, keeping order, step numbers and owner', async () => {
    const store = await openStore();
    const old = (thread: string, n: number) => turnCheckpoint(thread, n, [{ role: 'user', content: `earlier ${n}` }]);
    // One record per step (with a chain record, moved to cp_chains by the migration on reopen).
    const file = store.file;
    await store.collection('checkpoint_steps').put('chat/steps#000000000000', { chain: 'chat/steps', seq: 0, checkpoint: old('steps', 0) });
    await store.collection('checkpoint_steps').put('chat/steps#000000000001', { chain: 'chat/steps', seq: 1, checkpoint: old('steps', 1) });
    // The whole chain in one record.
    await store.collection('checkpoints').put('chat/whole', { checkpoints: [old('whole', 0), old('whole', 1)], principal: 'bob' });
    store.statement("INSERT INTO cp_chains (chain, principal, next) VALUES ('chat/steps', 'alice', 2)").run();
    store.close();

    const reopened = new SqliteStore(file);
    const checkpoints = new StoreCheckpointer(reopened);
    expect(await checkpoints.list('chat', 'steps')).toStrictEqual([old('steps', 1), old('steps', 0)]);
    expect(await checkpoints.owner('chat', 'steps')).toBe('alice');
    expect(await checkpoints.list('chat', 'whole')).toStrictEqual([old('whole', 1), old('whole', 0)]);
    expect(await checkpoints.owner('chat', 'whole')).toBe('bob');
    await checkpoints.put('chat', old('steps', 2), 'carol');
    expect((await checkpoints.list('chat', 'steps')).map((c) => c.step)).toEqual([2, 1, 0]);
    expect(await reopened.collection('checkpoint_steps').count()).toBe(0);
    expect(await reopened.collection('checkpoints').count()).toBe(0);
    expect(await checkpoints.owner('chat', 'steps')).toBe('alice');
  });

  it('delete removes every step, value and message of the thread; other threads keep theirs', async () => {
    const store = await openStore();
    const threads = new ThreadService(store, noModel);
    const checkpoints = new StoreCheckpointer(store);
    await chat(threads, checkpoints, 'gone', 3);
    const kept = await chat(threads, checkpoints, 'kept', 3);
    await checkpoints.delete('chat', 'gone');
    expect(await checkpoints.list('chat', 'gone')).toEqual([]);
    expect(await checkpoints.owner('chat', 'gone')).toBeUndefined();
    expect(await checkpoints.list('chat', 'kept')).toStrictEqual([...kept].reverse());
    // A step's row id holds its chain's number (× 2^28).
    const left = (table: string, chain: string) =>
      (store.statement(`SELECT COUNT(DISTINCT ${chain}) AS n FROM ${table}`).get() as { n: number }).n;
    expect(left('cp_steps', `k / ${2 ** 28}`)).toBe(1);
    expect(left('cp_blobs', 'chain')).toBe(1);
  });
});

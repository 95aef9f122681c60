import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Checkpoint, StoreCheckpointer } from '../../core/agents/checkpointer.js';
import { SqliteStore } from '../../core/storage/sqlite-store.js';

/**
 * Checkpoints on the workspace store: one record per step, so a step costs what its own state
 * costs however long the thread is (one record holding the chain used to be rewritten per step).
 */
const openStore = async () => new SqliteStore(path.join(await mkdtemp(path.join(os.tmpdir(), 'hangar-cp-')), 'hangar.db'));

const step = (thread: string, n: number, messages = 1): Checkpoint => ({
  id: `cp-${n}`,
  thread_id: thread,
  step: n,
  state: { messages: Array.from({ length: messages }, (_, i) => ({ role: 'user', content: `m${i} ${'x'.repeat(200)}` })) } as never,
  metadata: { run_id: 'r', agent: 'chat', source: 'loop', node: 'answer', next: null, input: {} as never },
  parent_id: n ? `cp-${n - 1}` : null,
  timestamp: new Date(0).toISOString(),
});

describe('persistent checkpoints, one record per step', () => {
  it('a step on a long chain writes its own record and its chain counter, nothing else', async () => {
    const store = await openStore();
    const checkpoints = new StoreCheckpointer(store, 100);
    for (let n = 0; n < 99; n++) await checkpoints.put('chat', step('t1', n, 50), 'alice');
    const changes = () => (store.statement('SELECT total_changes() AS n').get() as { n: number }).n;
    const before = changes();
    await checkpoints.put('chat', step('t1', 99, 50), 'alice');
    expect(changes() - before).toBe(2);
    expect((await checkpoints.latest('chat', 't1'))?.id).toBe('cp-99');
    expect((await checkpoints.list('chat', 't1')).map((c) => c.step).slice(0, 3)).toEqual([99, 98, 97]);
    expect((await checkpoints.get('chat', 't1', 'cp-42'))?.step).toBe(42);
    expect(await checkpoints.owner('chat', 't1')).toBe('alice');
  });

  it('keeps the newest maxPerThread, pruning older steps in batches; a later writer never takes a chain over', async () => {
    const store = await openStore();
    const checkpoints = new StoreCheckpointer(store, 5);
    for (let n = 0; n < 43; n++) await checkpoints.put('chat', step('t1', n), n === 0 ? 'alice' : 'bob');
    expect((await checkpoints.list('chat', 't1')).map((c) => c.step)).toEqual([42, 41, 40, 39, 38]);
    expect(await checkpoints.get('chat', 't1', 'cp-20')).toBeUndefined();
    const stored = await store.collection('checkpoint_steps').count();
    expect(stored).toBeGreaterThanOrEqual(5);
    expect(stored).toBeLessThanOrEqual(5 + 20);
    expect(await checkpoints.owner('chat', 't1')).toBe('alice');
  });

  it('moves a chain stored in the old one-record layout on first touch, keeping order and owner', async () => {
    const store = await openStore();
    await store.collection('checkpoints').put('chat/old', { checkpoints: [step('old', 0), step('old', 1)], principal: 'alice' });
    const checkpoints = new StoreCheckpointer(store);
    expect((await checkpoints.list('chat', 'old')).map((c) => c.id)).toEqual(['cp-1', 'cp-0']);
    expect(await checkpoints.owner('chat', 'old')).toBe('alice');
    await checkpoints.put('chat', step('old', 2), 'bob');
    expect((await checkpoints.list('chat', 'old')).map((c) => c.id)).toEqual(['cp-2', 'cp-1', 'cp-0']);
    expect(await store.collection('checkpoints').has('chat/old')).toBe(false);
    expect(await checkpoints.owner('chat', 'old')).toBe('alice');
  });

  it('delete removes every step and the chain; other threads keep theirs', async () => {
    const store = await openStore();
    const checkpoints = new StoreCheckpointer(store);
    for (let n = 0; n < 3; n++) {
      await checkpoints.put('chat', step('gone', n));
      await checkpoints.put('chat', step('kept', n));
    }
    await checkpoints.delete('chat', 'gone');
    expect(await checkpoints.list('chat', 'gone')).toEqual([]);
    expect(await checkpoints.owner('chat', 'gone')).toBeUndefined();
    expect((await checkpoints.list('chat', 'kept')).length).toBe(3);
    expect(await store.collection('checkpoint_steps').count()).toBe(3);
  });
});

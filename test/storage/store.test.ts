import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LowdbStore } from '../../core/storage/lowdb-store.js';
import { makeWorkspace, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer | undefined;
afterEach(async () => server?.stop());

describe('lowdb store', () => {
  it('persists records across instances (a restart)', async () => {
    const dir = await makeWorkspace();
    const store = new LowdbStore(dir);
    const things = store.collection<{ n: number }>('things');
    await things.put('a', { n: 1 });
    await things.put('b', { n: 2 });
    await things.update('a', (v) => ({ n: (v?.n ?? 0) + 10 }));
    await things.delete('b');
    const reopened = new LowdbStore(dir).collection<{ n: number }>('things');
    expect(await reopened.get('a')).toEqual({ n: 11 });
    expect(await reopened.has('b')).toBe(false);
    expect(await reopened.count()).toBe(1);
  });

  it('partitions a collection so one write rewrites one shard file', async () => {
    const dir = await makeWorkspace();
    const col = new LowdbStore(dir).collection<string>('big', { shards: 16 });
    for (let i = 0; i < 64; i++) await col.put(`id-${i}`, 'x'.repeat(100));
    const files = (await readdir(path.join(dir, 'big'))).filter((f) => /^\d+\.json$/.test(f));
    expect(files.length).toBe(16);
    const sizes = await Promise.all(files.map(async (f) => (await readFile(path.join(dir, 'big', f), 'utf8')).length));
    expect(Math.max(...sizes)).toBeLessThan((64 * 110) / 2);
  });

  it('loses no update under concurrency and leaves no temp files', async () => {
    const dir = await makeWorkspace();
    const col = new LowdbStore(dir).collection<number>('counter');
    await Promise.all(Array.from({ length: 100 }, () => col.update('n', (v) => (v ?? 0) + 1)));
    expect(await new LowdbStore(dir).collection<number>('counter').get('n')).toBe(100);
    expect((await readdir(path.join(dir, 'counter'))).filter((f) => f.includes('tmp'))).toEqual([]);
  });

  it('refuses to reopen a collection with another shard count', async () => {
    const dir = await makeWorkspace();
    await new LowdbStore(dir).collection('c', { shards: 4 }).put('x', 1);
    expect(() => new LowdbStore(dir).collection('c', { shards: 8 })).toThrow('has 4 shards on disk but was opened with 8');
    expect(() => new LowdbStore(dir).collection('../escape')).toThrow('invalid collection name');
  });

  it('GET /api/v1/storage/stats reports backend, files, records per collection and bytes', async () => {
    server = await startTestServer();
    await server.ctx.store.collection('notes', { shards: 2 }).put('n1', { text: 'hello' });
    const stats = (await server.request('/api/v1/storage/stats')).body;
    expect(stats.backend).toBe('sqlite');
    expect(stats.path).toBe(path.join(server.root, '.hangar', 'hangar.db'));
    expect(stats.collections.notes.records).toBe(1);
    expect(stats.collections.notes.files).toBeGreaterThanOrEqual(1);
    expect(stats.bytes).toBeGreaterThan(0);
  });
});

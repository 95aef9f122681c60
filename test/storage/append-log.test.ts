import { appendFile, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { AppendLog } from '../../core/storage/append-log.js';
import { makeWorkspace } from '../support/server.js';

describe('append log', () => {
  it('keeps appends, replacements and deletes across a reopen (a restart)', async () => {
    const dir = await makeWorkspace();
    const log = new AppendLog<string>(dir, 'msgs');
    await log.append('a', ['1', '2']);
    await log.append('a', ['3']);
    await log.set('b', ['x']);
    await log.append('c', ['gone']);
    await log.delete('c');
    const reopened = new AppendLog<string>(dir, 'msgs');
    expect(await reopened.get('a')).toEqual({ items: ['1', '2', '3'], version: 2 });
    expect(await reopened.get('b')).toEqual({ items: ['x'], version: 1 });
    expect(await reopened.get('c')).toBeUndefined();
  });

  it('writes one line per change at the end of the file, whatever else it holds', async () => {
    const dir = await makeWorkspace();
    const log = new AppendLog<number>(dir, 'n');
    for (let i = 0; i < 50; i++) await log.append(`k${i}`, [i]);
    const before = await readFile(log.file, 'utf8');
    const started = Date.now();
    await log.append('k7', [99]);
    const after = await readFile(log.file, 'utf8');
    expect(after.startsWith(before)).toBe(true);
    const line = after.slice(before.length);
    expect(line).toMatch(/^\{"k":"k7","v":2,"t":\d+,"op":"add","items":\[99\]\}\n$/);
    // The line says when the key changed (KeyedLog.changedAt), and a reopen reads it back.
    const t = JSON.parse(line).t as number;
    expect(t).toBeGreaterThanOrEqual(started);
    expect(t).toBeLessThanOrEqual(Date.now());
    expect(await new AppendLog<number>(dir, 'n').changedAt(['k7', 'k8', 'nothing'])).toEqual(
      new Map([
        ['k7', t],
        ['k8', expect.any(Number)],
      ]),
    );
  });

  it('loses nothing under concurrent appends to one key', async () => {
    const dir = await makeWorkspace();
    const log = new AppendLog<number>(dir, 'c');
    await Promise.all(Array.from({ length: 200 }, (_, i) => log.append('t', [i])));
    const reopened = await new AppendLog<number>(dir, 'c').get('t');
    expect(reopened!.items).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(reopened!.version).toBe(200);
  });

  it('compacts while writes continue without losing or doubling any item', async () => {
    const dir = await makeWorkspace();
    const log = new AppendLog<number>(dir, 'big');
    // 2 keys, thousands of lines: far past the garbage threshold, so compaction runs mid-stream.
    await Promise.all(Array.from({ length: 3000 }, (_, i) => log.append(i % 2 ? 'odd' : 'even', [i])));
    await log.flush();
    const lines = (await readFile(log.file, 'utf8')).trim().split('\n').length;
    expect(lines).toBeLessThan(1000);
    const reopened = new AppendLog<number>(dir, 'big');
    expect((await reopened.get('even'))!.items).toEqual(Array.from({ length: 1500 }, (_, i) => 2 * i));
    expect((await reopened.get('odd'))!.items).toEqual(Array.from({ length: 1500 }, (_, i) => 2 * i + 1));
  });

  it('ignores a torn last line left by a crash', async () => {
    const dir = await makeWorkspace();
    const log = new AppendLog<string>(dir, 't');
    await log.append('a', ['kept']);
    await appendFile(log.file, '{"k":"a","v":2,"op":"add","ite');
    expect((await new AppendLog<string>(dir, 't').get('a'))!.items).toEqual(['kept']);
  });

  it('keeps counting versions for a key deleted and created again', async () => {
    const dir = await makeWorkspace();
    const log = new AppendLog<string>(dir, 'r');
    await log.append('a', ['old']);
    await log.delete('a');
    await log.append('a', ['new']);
    const reopened = await new AppendLog<string>(dir, 'r').get('a');
    expect(reopened).toEqual({ items: ['new'], version: 3 });
  });
});

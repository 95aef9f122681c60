/**
 * Safe saves (#23): a session knows which version of its file it holds; a save over a newer disk
 * version answers 409 `{detail, code, diff}` until the user reloads or overwrites; open sessions
 * follow disk edits live and re-run what changed (marimo's --watch). A save may instead merge the
 * disk's changes per cell, reporting cells changed on both sides instead of picking one.
 */
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountRoutes } from '../../core/http/route.js';
import { parseNotebook } from '../../core/notebook/formats.js';
import { notebookRoutes } from '../../core/notebook/routes.js';
import { createNotebookApp } from '../../core/notebook/server.js';
import { NotebookService } from '../../core/notebook/service.js';
import type { SessionEvent } from '../../core/notebook/session.js';

let base = '';
let root = '';
let server: http.Server;
let service: NotebookService;

const file = (cells: Array<[string, string]>) =>
  `// @hangar-notebook {"name":"t","created_at":"2026-01-01T00:00:00.000Z","metadata":{}}\n\n` +
  cells.map(([id, source]) => `// %% [code] id=${id}\n${source}\n`).join('\n');

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'nb-safe-'));
  await mkdir(join(root, 'notebooks'));
  const built = createNotebookApp({ root });
  // watch: true is what the main server passes when it watches files.
  service = new NotebookService({ root, watch: true });
  mountRoutes(built.app, notebookRoutes(service));
  await built.app.ready();
  server = built.server;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await service.closeAll();
  await new Promise((r) => server.close(r));
});

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** The next event of a session matching `test`. */
function nextEvent(id: string, test: (e: SessionEvent) => boolean): Promise<SessionEvent> {
  return service.open(id).then(
    (session) =>
      new Promise((resolve) => {
        const stop = session.subscribe((event) => {
          if (!test(event)) return;
          stop();
          resolve(event);
        });
      }),
  );
}

describe('saving over a newer file', () => {
  it('answers 409 with the diff, keeps the disk version, and overwrites only with force', async () => {
    const path = join(root, 'notebooks', 'clash.nb.ts');
    await writeFile(path, file([['c0000001', 'const a = 1']]));
    const nb = '/api/notebooks/clash.nb.ts';
    expect((await call('GET', nb)).status).toBe(200);
    expect((await call('PATCH', `${nb}/cells/c0000001`, { source: 'const a = 2' })).status).toBe(200);
    // Another editor saves meanwhile (the session has unsaved edits, so it does not take it).
    const theirs = file([['c0000001', 'const a = 3']]);
    await writeFile(path, theirs);

    const refused = await call('POST', `${nb}/save`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('HANGAR_NOTEBOOK_SAVE_CONFLICT');
    expect(refused.body.detail).toMatch(/changed on disk/);
    expect(refused.body.diff).toContain('- const a = 2');
    expect(refused.body.diff).toContain('+ const a = 3');
    expect(await readFile(path, 'utf8')).toBe(theirs);

    expect((await call('POST', `${nb}/save?force=true`)).status).toBe(200);
    expect(await readFile(path, 'utf8')).toContain('const a = 2');
    // After the overwrite the session holds the file's version: a plain save works again.
    expect((await call('POST', `${nb}/save`)).status).toBe(200);
  });

  it('reload takes the disk version and drops the unsaved edit', async () => {
    const path = join(root, 'notebooks', 'back.nb.ts');
    await writeFile(path, file([['b0000001', 'const b = 1']]));
    const nb = '/api/notebooks/back.nb.ts';
    await call('GET', nb);
    await call('PATCH', `${nb}/cells/b0000001`, { source: 'const b = 2' });
    expect((await call('GET', nb)).body.dirty).toBe(true);
    await writeFile(path, file([['b0000001', 'const b = 7']]));
    const reloaded = await call('POST', `${nb}/reload`);
    expect(reloaded.status).toBe(200);
    expect(reloaded.body.cells[0].source).toBe('const b = 7');
    expect(reloaded.body.dirty).toBe(false);
    expect((await call('POST', `${nb}/save`)).status).toBe(200);
  });
});

describe('merging with the file on disk', () => {
  /** A session with unsaved edits whose file was then changed by another editor. */
  async function diverged(name: string, start: Array<[string, string]>, mine: Record<string, string>, disk: Array<[string, string]>) {
    const path = join(root, 'notebooks', name);
    await writeFile(path, file(start));
    const nb = `/api/notebooks/${name}`;
    expect((await call('GET', nb)).status).toBe(200);
    for (const [id, source] of Object.entries(mine)) expect((await call('PATCH', `${nb}/cells/${id}`, { source })).status).toBe(200);
    const theirs = file(disk);
    await writeFile(path, theirs);
    expect((await call('POST', `${nb}/save`)).status).toBe(409);
    return { path, nb, theirs };
  }

  it('keeps the edit made on disk to one cell and the session edit to another, writing the file once', async () => {
    const { path, nb } = await diverged(
      'both.nb.ts',
      [
        ['m0000001', 'const a = 1'],
        ['m0000002', 'const b = 1'],
        ['m0000003', 'a + b'],
      ],
      { m0000002: 'const b = 20' },
      [
        ['m0000001', 'const a = 10'],
        ['m0000002', 'const b = 1'],
        ['m0000004', '// added on disk'],
        ['m0000003', 'a + b'],
      ],
    );
    const merged = await call('POST', `${nb}/save`, { strategy: 'merge' });
    expect(merged.status).toBe(200);
    expect(merged.body.from_disk).toEqual(['m0000001', 'm0000004']);

    const written = parseNotebook(await readFile(path, 'utf8'), path);
    expect(written.cells.map((c) => [c.id, c.source])).toEqual([
      ['m0000001', 'const a = 10'],
      ['m0000002', 'const b = 20'],
      ['m0000004', '// added on disk'],
      ['m0000003', 'a + b'],
    ]);
    // Written through one temporary file renamed into place: nothing half-written is left beside it.
    expect((await readdir(join(root, 'notebooks'))).filter((f) => f.includes('.tmp'))).toEqual([]);
    const session = (await call('GET', nb)).body;
    expect(session.dirty).toBe(false);
    expect(session.cells.map((c: { source: string }) => c.source)).toEqual(written.cells.map((c) => c.source));
    // The session now holds the merged file: it runs with both edits, and a plain save needs no merge.
    const ran = await call('POST', `${nb}/cells/m0000003/run`);
    expect(ran.body.cells.find((c: { id: string }) => c.id === 'm0000003').outputs[0].data['text/plain']).toBe('30');
    expect((await call('POST', `${nb}/save`)).status).toBe(200);
  });

  it('reports a cell changed on both sides with the three texts, writes nothing, and merges once a side is picked', async () => {
    const { path, nb, theirs } = await diverged(
      'same.nb.ts',
      [
        ['s0000001', 'const s = 1'],
        ['s0000002', 'const t = 1'],
      ],
      { s0000001: 'const s = 2', s0000002: 'const t = 2' },
      [
        ['s0000001', 'const s = 3'],
        ['s0000002', 'const t = 1'],
      ],
    );
    const refused = await call('POST', `${nb}/save`, { strategy: 'merge' });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('HANGAR_NOTEBOOK_MERGE_CONFLICT');
    expect(refused.body.detail).toMatch(/1 cell\(s\) of .*same\.nb\.ts changed both here and on disk/);
    expect(refused.body.conflicts).toEqual([
      {
        cell: 's0000001',
        base: { id: 's0000001', cell_type: 'code', source: 'const s = 1', name: '' },
        ours: { id: 's0000001', cell_type: 'code', source: 'const s = 2', name: '' },
        theirs: { id: 's0000001', cell_type: 'code', source: 'const s = 3', name: '' },
      },
    ]);
    // Nothing silently lost: the file is the other editor's, the session still has both its edits.
    expect(await readFile(path, 'utf8')).toBe(theirs);
    expect((await call('GET', nb)).body.cells.map((c: { source: string }) => c.source)).toEqual(['const s = 2', 'const t = 2']);

    const merged = await call('POST', `${nb}/save`, { strategy: 'merge', resolutions: { s0000001: 'theirs' } });
    expect(merged.status).toBe(200);
    expect(parseNotebook(await readFile(path, 'utf8'), path).cells.map((c) => c.source)).toEqual(['const s = 3', 'const t = 2']);
  });

  it('a cell edited here but deleted on disk is a conflict too; keeping it writes it back', async () => {
    const { path, nb } = await diverged(
      'gone.nb.ts',
      [
        ['g0000001', 'const g = 1'],
        ['g0000002', 'const h = 1'],
      ],
      { g0000002: 'const h = 2' },
      [['g0000001', 'const g = 1']],
    );
    const refused = await call('POST', `${nb}/save`, { strategy: 'merge' });
    expect(refused.body.conflicts).toMatchObject([{ cell: 'g0000002', ours: { source: 'const h = 2' }, theirs: null }]);
    expect((await call('POST', `${nb}/save`, { strategy: 'merge', resolutions: { g0000002: 'ours' } })).status).toBe(200);
    expect(parseNotebook(await readFile(path, 'utf8'), path).cells.map((c) => c.source)).toEqual(['const g = 1', 'const h = 2']);
  });

  it('refuses a malformed merge request with a detail naming the field, and leaves the file alone', async () => {
    const { path, nb, theirs } = await diverged('bad.nb.ts', [['x0000001', 'const x = 1']], { x0000001: 'const x = 2' }, [
      ['x0000001', 'const x = 3'],
    ]);
    for (const body of [
      { strategy: 'merge', resolutions: { x0000001: 'mine' } },
      { strategy: 'rebase' },
      { strategy: 'merge', extra: 1 },
    ]) {
      const answer = await call('POST', `${nb}/save`, body);
      expect(answer.status).toBe(422);
      expect(typeof answer.body.detail).toBe('string');
    }
    expect(await readFile(path, 'utf8')).toBe(theirs);
  });

  it('a disk file that no longer parses cannot be merged: 409 saying so, nothing written', async () => {
    const path = join(root, 'notebooks', 'broken.nb.ts');
    await writeFile(path, file([['y0000001', 'const y = 1']]));
    const nb = '/api/notebooks/broken.nb.ts';
    await call('GET', nb);
    await call('PATCH', `${nb}/cells/y0000001`, { source: 'const y = 2' });
    await writeFile(path, 'not a notebook');
    const refused = await call('POST', `${nb}/save`, { strategy: 'merge' });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('HANGAR_NOTEBOOK_MERGE_UNREADABLE');
    expect(await readFile(path, 'utf8')).toBe('not a notebook');
  });
});

describe('following the file live', () => {
  it('a session without unsaved edits takes a disk edit and re-runs the changed cell and its dependents', async () => {
    const path = join(root, 'notebooks', 'live.nb.ts');
    await writeFile(
      path,
      file([
        ['l0000001', 'const x = 2'],
        ['l0000002', 'x * 10'],
      ]),
    );
    const nb = '/api/notebooks/live.nb.ts';
    const ran = await call('POST', `${nb}/cells/l0000002/run`);
    expect(ran.body.cells[1].outputs[0].data['text/plain']).toBe('20');

    const reloaded = nextEvent('live.nb.ts', (e) => e.type === 'reloaded');
    await writeFile(
      path,
      file([
        ['l0000001', 'const x = 5'],
        ['l0000002', 'x * 10'],
      ]),
    );
    expect(await reloaded).toEqual({ type: 'reloaded', rerun: ['l0000001'] });
    const session = await service.open('live.nb.ts');
    await session.idle();
    const cells = (await call('GET', nb)).body.cells;
    expect(cells[0].source).toBe('const x = 5');
    expect(cells[1]).toMatchObject({ state: 'success' });
    expect(cells[1].outputs[0].data['text/plain']).toBe('50');
  });

  it('a session with unsaved edits keeps them and tells its UI, with the diff', async () => {
    const path = join(root, 'notebooks', 'busy.nb.ts');
    await writeFile(path, file([['u0000001', 'const u = 1']]));
    const nb = '/api/notebooks/busy.nb.ts';
    await call('GET', nb);
    await call('PATCH', `${nb}/cells/u0000001`, { source: 'const u = 2' });
    const told = nextEvent('busy.nb.ts', (e) => e.type === 'disk-changed');
    await writeFile(path, file([['u0000001', 'const u = 3']]));
    const event = (await told) as Extract<SessionEvent, { type: 'disk-changed' }>;
    expect(event.diff).toContain('+ const u = 3');
    expect((await call('GET', nb)).body.cells[0].source).toBe('const u = 2');
  });

  /** A clean session whose file another editor then changed: it has taken the disk's version. */
  async function reloadedUnder(name: string, start: Array<[string, string]>, disk: Array<[string, string]>) {
    const path = join(root, 'notebooks', name);
    await writeFile(path, file(start));
    const nb = `/api/notebooks/${name}`;
    expect((await call('GET', nb)).status).toBe(200);
    const reloaded = nextEvent(name, (e) => e.type === 'reloaded');
    const theirs = file(disk);
    await writeFile(path, theirs);
    await reloaded;
    return { path, nb, theirs };
  }

  it('an edit typed before a reload changed its cell is kept, and a save shows the conflict instead of overwriting the disk', async () => {
    // An editor holds typing briefly before sending it (the UI: 400 ms); the file changed meanwhile.
    const { path, nb, theirs } = await reloadedUnder(
      'typing.nb.ts',
      [
        ['t0000001', 'const e = 1'],
        ['t0000002', 'const f = 1'],
      ],
      [
        ['t0000001', 'const e = 3'],
        ['t0000002', 'const f = 3'],
      ],
    );
    const told = nextEvent('typing.nb.ts', (e) => e.type === 'disk-changed');
    const edited = await call('PATCH', `${nb}/cells/t0000001`, { source: 'const e = 2', base_source: 'const e = 1' });
    expect(edited.status).toBe(200);
    expect(edited.body.source).toBe('const e = 2');

    const refused = await call('POST', `${nb}/save`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('HANGAR_NOTEBOOK_SAVE_CONFLICT');
    expect(refused.body.diff).toContain('- const e = 2');
    expect(refused.body.diff).toContain('+ const e = 3');
    expect(await readFile(path, 'utf8')).toBe(theirs);
    const event = (await told) as Extract<SessionEvent, { type: 'disk-changed' }>;
    expect(event.diff).toContain('+ const e = 3');

    // A merge sees the three texts of the cell both sides changed, and takes the other cell from disk.
    const merge = await call('POST', `${nb}/save`, { strategy: 'merge' });
    expect(merge.status).toBe(409);
    expect(merge.body.conflicts).toEqual([
      {
        cell: 't0000001',
        base: expect.objectContaining({ source: 'const e = 1' }),
        ours: expect.objectContaining({ source: 'const e = 2' }),
        theirs: expect.objectContaining({ source: 'const e = 3' }),
      },
    ]);
    expect((await call('POST', `${nb}/save`, { strategy: 'merge', resolutions: { t0000001: 'ours' } })).status).toBe(200);
    const written = parseNotebook(await readFile(path, 'utf8'), path).cells.map((c) => c.source);
    expect(written).toEqual(['const e = 2', 'const f = 3']);
  });

  it('an edit made from the reloaded source, or sent without a base, is an ordinary edit that saves', async () => {
    const fromNew = await reloadedUnder('seen.nb.ts', [['s0000001', 'const s = 1']], [['s0000001', 'const s = 3']]);
    const edit = { source: 'const s = 4', base_source: 'const s = 3' };
    expect((await call('PATCH', `${fromNew.nb}/cells/s0000001`, edit)).status).toBe(200);
    expect((await call('POST', `${fromNew.nb}/save`)).status).toBe(200);
    expect(await readFile(fromNew.path, 'utf8')).toContain('const s = 4');

    const unbased = await reloadedUnder('blind.nb.ts', [['n0000001', 'const n = 1']], [['n0000001', 'const n = 3']]);
    expect((await call('PATCH', `${unbased.nb}/cells/n0000001`, { source: 'const n = 4' })).status).toBe(200);
    expect((await call('POST', `${unbased.nb}/save`)).status).toBe(200);
    expect(await readFile(unbased.path, 'utf8')).toContain('const n = 4');
  });
});

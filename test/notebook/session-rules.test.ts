import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readNotebookFile, writeNotebookFile } from '../../core/notebook/formats.js';
import { Notebook } from '../../core/notebook/schemas.js';
import { NotebookSession, type SessionEvent } from '../../core/notebook/session.js';

/**
 * The reactive engine's rules at their edges (#30): which cells an edit, a deletion, a reorder or a
 * reload from disk makes stale, which cells a run runs, and what a failure or a lost kernel leaves
 * behind. The data is chosen so that the plausible wrong rule (a forgotten graph, a cell that never
 * ran counted as one that did, a failed upstream taken for a fresh one) gives a different answer.
 */
const sessions: NotebookSession[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

type CellInput = { id: string; source: string; cell_type?: 'code' | 'markdown' };

function open(cells: CellInput[], options: ConstructorParameters<typeof NotebookSession>[1] = {}) {
  const session = new NotebookSession(Notebook.parse({ name: 't', cells }), options);
  sessions.push(session);
  return session;
}

const value = (s: NotebookSession, id: string) =>
  s
    .cell(id)
    .outputs.map((o) =>
      o.output_type === 'execute_result'
        ? String(o.data['text/plain'])
        : o.output_type === 'error'
          ? `!${o.evalue}`
          : o.output_type === 'stream'
            ? o.text
            : '',
    )
    .join('');

const saved = (text: string) => [
  { output_type: 'execute_result' as const, data: { 'text/plain': text }, metadata: {}, execution_count: 1 },
];

const states = (s: NotebookSession, ids: string[]) => ids.map((id) => s.state(id));

function record(s: NotebookSession): SessionEvent[] {
  const events: SessionEvent[] = [];
  s.subscribe((e) => events.push(e));
  return events;
}

const stateEvents = (events: SessionEvent[], cellId?: string) =>
  events
    .filter((e): e is Extract<SessionEvent, { type: 'cell-state' }> => e.type === 'cell-state')
    .filter((e) => cellId === undefined || e.cellId === cellId)
    .map((e) => (cellId === undefined ? `${e.cellId}:${e.state}` : e.state));

describe('notebook rules: editing', () => {
  it('an upstream edit makes the cells that ran stale and leaves the ones that never ran idle', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'const b = a + 1' },
      { id: 'c', source: 'b + 1' },
    ]);
    await s.runCell('b');
    expect(states(s, ['a', 'b', 'c'])).toEqual(['success', 'success', 'success']);
    const t = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'const b = a + 1' },
      { id: 'c', source: 'b + 1' },
    ]);
    await t.updateCell('a', { source: 'const a = 2' });
    expect(states(t, ['a', 'b', 'c'])).toEqual(['idle', 'idle', 'idle']);
    await t.runCell('a');
    await t.deleteCell('a');
    expect(states(t, ['b', 'c'])).toEqual(['stale', 'stale']);
  });

  it('a stale cell made stale again emits no second event', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'a + 1' },
    ]);
    await s.runAll();
    const events = record(s);
    await s.updateCell('a', { source: 'const a = 2' });
    await s.updateCell('a', { source: 'const a = 3' });
    expect(stateEvents(events)).toEqual(['a:stale', 'b:stale']);
  });

  it('an edit that keeps the source, or changes only the name, leaves every state as it was', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'a + 1' },
    ]);
    await s.runAll();
    await s.updateCell('a', { source: 'const a = 1' });
    await s.updateCell('a', { name: 'setup', cell_type: 'code' });
    expect(states(s, ['a', 'b'])).toEqual(['success', 'success']);
    expect(s.cell('a').name).toBe('setup');
    expect(s.dirty).toBe(true);
  });

  it('an edit that drops a name marks the cells that read it stale (the graph before the edit)', async () => {
    const s = open([
      { id: 'a', source: 'const x = 1' },
      { id: 'b', source: 'x + 1' },
      { id: 'c', source: 'const other = 5' },
    ]);
    await s.runAll();
    await s.updateCell('a', { source: 'const y = 1' });
    expect(states(s, ['a', 'b', 'c'])).toEqual(['stale', 'stale', 'success']);
  });

  it('an edit that defines a name a cell was missing marks that cell stale (the graph after the edit)', async () => {
    const s = open([
      { id: 'a', source: 'const y = 1' },
      { id: 'b', source: 'x + 1' },
    ]);
    await s.runAll();
    expect(s.state('b')).toBe('error');
    await s.updateCell('a', { source: 'const x = 41' });
    expect(states(s, ['a', 'b'])).toEqual(['stale', 'stale']);
    await s.runCell('a');
    expect(value(s, 'b')).toBe('42');
  });

  it('turning a code cell into markdown makes it idle with no outputs, its readers stale', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1;\na' },
      { id: 'b', source: 'a + 1' },
    ]);
    await s.runAll();
    await s.updateCell('a', { cell_type: 'markdown' });
    expect(states(s, ['a', 'b'])).toEqual(['idle', 'stale']);
    expect(s.cell('a').outputs).toEqual([]);
    expect(s.cellsWithState().find((c) => c.id === 'a')).toMatchObject({ state: 'idle', stale_outputs: false, outputs: [] });
  });

  it('adding a cell that defines a missing name makes its readers stale, and a new cell starts idle where it was put', async () => {
    const s = open([
      { id: 'r', source: 'x * 2' },
      { id: 'u', source: 'const u = 1' },
    ]);
    await s.runAll();
    expect(states(s, ['r', 'u'])).toEqual(['error', 'success']);
    const added = await s.addCell({ source: 'const x = 21', index: 1 });
    expect(s.notebook.cells.map((c) => c.id)).toEqual(['r', added.id, 'u']);
    expect(states(s, ['r', added.id, 'u'])).toEqual(['stale', 'idle', 'success']);
    const last = await s.addCell({ source: '"end"', index: 99 });
    expect(s.notebook.cells.at(-1)!.id).toBe(last.id);
    const appended = await s.addCell({ source: '"tail"' });
    expect(s.notebook.cells.at(-1)!.id).toBe(appended.id);
    await s.runStale();
    expect(value(s, 'r')).toBe('42');
  });

  it('deleting a cell removes its names from a running kernel and its state, and makes only its readers stale', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'a + 1' },
      { id: 'c', source: 'const c = 3' },
    ]);
    await s.runAll();
    await s.deleteCell('a');
    expect(states(s, ['b', 'c'])).toEqual(['stale', 'success']);
    expect(s.state('a')).toBe('idle');
    expect(() => s.cell('a')).toThrow(/not found/);
    await s.runCell('b');
    expect(value(s, 'b')).toMatch(/a is not defined/);
  });

  it('reorder refuses a list that is not every cell exactly once, and changes nothing then', async () => {
    const s = open([
      { id: 'a', source: '1' },
      { id: 'b', source: '2' },
      { id: 'c', source: '3' },
    ]);
    for (const bad of [
      ['a', 'b'],
      ['a', 'b', 'b'],
      ['a', 'b', 'c', 'c'],
      ['a', 'b', 'x'],
      ['a', 'a', 'b', 'c'],
    ]) {
      expect(() => s.reorder(bad)).toThrow(expect.objectContaining({ code: 'HANGAR_NOTEBOOK_ORDER_INVALID' }));
    }
    expect(s.notebook.cells.map((c) => c.id)).toEqual(['a', 'b', 'c']);
    expect(s.dirty).toBe(false);
    s.reorder(['c', 'a', 'b']);
    expect(s.notebook.cells.map((c) => c.id)).toEqual(['c', 'a', 'b']);
    expect(s.dirty).toBe(true);
  });

  it('after a reorder independent cells run in the new notebook order', async () => {
    const s = open([
      { id: 'a', source: 'console.log("a")' },
      { id: 'b', source: 'console.log("b")' },
    ]);
    await s.runAll();
    expect(s.cell('a').execution_count).toBeLessThan(s.cell('b').execution_count);
    s.reorder(['b', 'a']);
    await s.runAll();
    expect(s.cell('b').execution_count).toBeLessThan(s.cell('a').execution_count);
  });
  it('every edit marks the session dirty; deleting a markdown cell or one never run works and stales nothing', async () => {
    const s = open([
      { id: 'm', source: '# notes', cell_type: 'markdown' },
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'a + 1' },
    ]);
    expect(s.dirty).toBe(false);
    await s.deleteCell('m');
    expect(s.dirty).toBe(true);
    expect(states(s, ['a', 'b'])).toEqual(['idle', 'idle']);
    await s.addCell({ source: '"x"' });
    await s.updateCell('a', { source: 'const a = 2' });
    await s.deleteCell('b');
    expect(s.notebook.cells.map((c) => c.source)).toEqual(['const a = 2', '"x"']);
    const fresh = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'a + 1' },
    ]);
    await fresh.addCell({ source: '"x"' });
    expect(fresh.dirty).toBe(true);
    const other = open([{ id: 'a', source: 'const a = 1' }]);
    await other.deleteCell('a');
    expect(other.dirty).toBe(true);
    expect(other.notebook.cells).toEqual([]);
  });

  it('a cell deleted while a run is queued is dropped from that run', async () => {
    const s = open([
      { id: 'loop', source: 'const t = Date.now();\nwhile (Date.now() - t < 300) {}' },
      { id: 'gone', source: 'console.log("ran")' },
      { id: 'kept', source: '"kept"' },
    ]);
    const first = s.runCell('loop');
    while (s.state('loop') !== 'running') await new Promise((r) => setTimeout(r, 5));
    // Queued behind the running one; its plan is read when its turn comes.
    const second = s.runCells(['gone', 'kept']);
    await s.deleteCell('gone');
    await Promise.all([first, second]);
    expect(s.history.map((h) => h.cell_id)).toEqual(['loop', 'kept']);
    expect(s.state('gone')).toBe('idle');
    expect(s.state('kept')).toBe('success');
  });
});

describe('notebook rules: deleting during a run', () => {
  it('a cell deleted while the run that holds it is under way is dropped; the run goes on and its readers fail loudly', async () => {
    const s = open([
      { id: 'loop', source: 'const t = Date.now();\nwhile (Date.now() - t < 300) {}' },
      { id: 'b', source: 'const b = 2' },
      { id: 'c', source: 'b + 1' },
      { id: 'd', source: '"d"' },
    ]);
    const run = s.runAll();
    while (s.state('loop') !== 'running') await new Promise((r) => setTimeout(r, 5));
    await s.deleteCell('b');
    await run;
    expect(s.history.map((h) => h.cell_id)).toEqual(['loop', 'c', 'd']);
    expect(s.notebook.cells.map((c) => c.id)).toEqual(['loop', 'c', 'd']);
    expect([s.state('loop'), s.state('b'), s.state('c'), s.state('d')]).toEqual(['success', 'idle', 'error', 'success']);
    expect(value(s, 'c')).toMatch(/b is not defined/);
  });

  it('the cell running when it is deleted finishes without coming back, and the run goes on', async () => {
    const s = open([
      { id: 'loop', source: 'const t = Date.now();\nwhile (Date.now() - t < 300) {}' },
      { id: 'after', source: '"after"' },
    ]);
    const run = s.runAll();
    while (s.state('loop') !== 'running') await new Promise((r) => setTimeout(r, 5));
    await s.deleteCell('loop');
    await run;
    expect(s.notebook.cells.map((c) => c.id)).toEqual(['after']);
    expect(s.cellsWithState().map((c) => [c.id, c.state])).toEqual([['after', 'success']]);
    expect(s.state('loop')).toBe('idle');
  });
});

describe('notebook rules: running', () => {
  it('a run takes the upstream cells that are not fresh and leaves fresh ones alone', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'const b = 2' },
      { id: 'c', source: 'a + b' },
    ]);
    await s.runCell('a');
    const aCount = s.cell('a').execution_count;
    await s.runCell('c');
    expect(value(s, 'c')).toBe('3');
    expect(s.cell('a').execution_count).toBe(aCount);
    expect(s.cell('b').execution_count).toBeGreaterThan(0);
  });

  it('running a markdown cell runs nothing', async () => {
    const s = open([
      { id: 'm', source: '# title', cell_type: 'markdown' },
      { id: 'a', source: '1' },
    ]);
    const events = record(s);
    await s.runCell('m');
    await s.runCells(['m']);
    expect(events).toEqual([]);
    expect(states(s, ['m', 'a'])).toEqual(['idle', 'idle']);
    await s.runAll();
    expect(states(s, ['m', 'a'])).toEqual(['idle', 'success']);
    expect(s.history.map((h) => h.cell_id)).toEqual(['a']);
  });

  it('runStale runs what is stale or never ran and what depends on it, not the fresh cells', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'const b = a + 1' },
      { id: 'c', source: 'const c = 10' },
      { id: 'd', source: 'c + 1' },
      { id: 'e', source: 'b + 1' },
    ]);
    await s.runCell('c');
    await s.runCell('d');
    const counts = () => Object.fromEntries(['a', 'b', 'c', 'd', 'e'].map((id) => [id, s.cell(id).execution_count]));
    const before = counts();
    await s.runStale();
    const after = counts();
    expect([after.c, after.d]).toEqual([before.c, before.d]);
    expect(value(s, 'e')).toBe('3');

    await s.updateCell('a', { source: 'const a = 5' });
    const mid = counts();
    await s.runStale();
    const end = counts();
    expect([end.c, end.d]).toEqual([mid.c, mid.d]);
    expect(end.b).toBeGreaterThan(mid.b!);
    expect(value(s, 'e')).toBe('7');
  });

  it('a cell downstream of a failed cell is not run and stays stale; a sibling of the failed one runs', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'f', source: 'const f = a;\nthrow new Error("no")' },
      { id: 'g', source: 'f + 1' },
      { id: 'h', source: 'a + 100' },
    ]);
    await s.runAll();
    expect(states(s, ['a', 'f', 'g', 'h'])).toEqual(['success', 'error', 'stale', 'success']);
    expect(s.cell('g').execution_count).toBe(0);
    expect(value(s, 'h')).toBe('101');
  });

  it('a cell whose other upstream is stale and not in the run is not run (its input is out of date)', async () => {
    const s = open([
      { id: 'u', source: 'const n = ui.slider({ min: 1, max: 10, value: 3 });\nn' },
      { id: 'k', source: 'const k = 2' },
      { id: 'r', source: 'n.value * k' },
    ]);
    await s.runAll();
    expect(value(s, 'r')).toBe('6');
    await s.updateCell('k', { source: 'const k = 5' });
    const count = s.cell('r').execution_count;
    // Setting the slider re-runs its readers only; `r` also reads `k`, which is stale.
    await s.setUiValue('u:0', 4);
    expect(states(s, ['u', 'k', 'r'])).toEqual(['success', 'stale', 'stale']);
    expect(s.cell('r').execution_count).toBe(count);
    await s.runCell('k');
    expect(value(s, 'r')).toBe('20');
  });

  it('setting an element of a cell that is not fresh keeps the value but runs nothing', async () => {
    const s = open([
      { id: 'u', source: 'const n = ui.slider({ min: 1, max: 10, value: 3 });\nn' },
      { id: 'r', source: 'n.value * 10' },
    ]);
    await s.runAll();
    await s.updateCell('u', { source: 'const n = ui.slider({ min: 1, max: 10, value: 2 });\nn' });
    const count = s.cell('r').execution_count;
    await s.setUiValue('u:0', 9);
    expect(s.cell('r').execution_count).toBe(count);
    expect(s.uiValues()).toEqual({ 'u:0': 9 });
    await s.runCell('u');
    expect(value(s, 'r')).toBe('90');
  });

  it('a cell with an analysis error is shown as an error, not run, and its readers stay stale', async () => {
    const s = open([
      { id: 'r', source: 'export const r = 1' },
      { id: 's', source: 'r + 1' },
    ]);
    const events = record(s);
    await s.runAll();
    expect(states(s, ['r', 's'])).toEqual(['error', 'stale']);
    expect(s.cell('r').outputs[0]).toMatchObject({ output_type: 'error' });
    expect(s.history).toEqual([]);
    expect(stateEvents(events, 'r')).toEqual(['queued', 'error']);
  });

  it('a cell downstream of a cycle is not run', async () => {
    const s = open([
      { id: 'p', source: 'const x = y' },
      { id: 'q', source: 'const y = x' },
      { id: 'r', source: 'x + 1' },
      { id: 'z', source: '"free"' },
    ]);
    await s.runAll();
    expect(states(s, ['p', 'q', 'r', 'z'])).toEqual(['error', 'error', 'error', 'success']);
    expect(s.cell('r').execution_count).toBe(0);
  });

  it('a warning is shown before the outputs and the cell runs', async () => {
    const s = open([
      { id: 'a', source: 'const arr = [1]' },
      { id: 'b', source: 'arr.push(2);\narr.length' },
    ]);
    await s.runAll();
    expect(s.state('b')).toBe('success');
    const out = s.cell('b').outputs;
    expect(out[0]).toMatchObject({ output_type: 'stream', name: 'stderr' });
    expect((out[0] as { text: string }).text).toMatch(/^warning \(line 1\): .*`arr`/);
    expect(value(s, 'b').endsWith('2')).toBe(true);
  });

  it('each run records its count, status and time in history, and the finished state event carries the count', async () => {
    const s = open([
      { id: 'a', source: '1' },
      { id: 'b', source: 'throw new Error("x")' },
    ]);
    const events = record(s);
    await s.runAll();
    await s.runCell('a');
    expect(s.history.map((h) => [h.cell_id, h.execution_count, h.status])).toEqual([
      ['a', 1, 'success'],
      ['b', 2, 'error'],
      ['a', 3, 'success'],
    ]);
    for (const h of s.history) {
      expect(typeof h.started_at).toBe('string');
      expect(h.duration_ms).toBeGreaterThanOrEqual(0);
    }
    const finished = events.filter((e) => e.type === 'cell-state' && (e.state === 'success' || e.state === 'error'));
    expect(finished.map((e) => (e as { execution_count?: number }).execution_count)).toEqual([1, 2, 3]);
    const other = events.filter((e) => e.type === 'cell-state' && e.state !== 'success' && e.state !== 'error');
    expect(other.every((e) => !('execution_count' in e))).toBe(true);
    expect(s.cell('a').last_executed).not.toBeNull();
  });

  it('a cell run twice in a row emits success each time', async () => {
    const s = open([{ id: 'a', source: '1' }]);
    const events = record(s);
    await s.runCell('a');
    await s.runCell('a');
    expect(stateEvents(events, 'a')).toEqual(['queued', 'running', 'success', 'queued', 'running', 'success']);
  });
});

describe('notebook rules: a lost kernel', () => {
  it('a crash makes every code cell that ran stale, except the crashed one; idle and markdown cells stay as they were; counts restart', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'm', source: '# notes', cell_type: 'markdown' },
      { id: 'n', source: '"never ran"' },
      { id: 'x', source: 'process.exit(1)' },
    ]);
    const events = record(s);
    await s.runCell('a');
    await s.runCell('x');
    expect(states(s, ['a', 'm', 'n', 'x'])).toEqual(['stale', 'idle', 'idle', 'error']);
    const kernel = events.filter((e) => e.type === 'kernel');
    expect(kernel).toEqual([expect.objectContaining({ type: 'kernel', status: 'crashed' })]);
    await s.runCell('a');
    expect(s.cell('a').execution_count).toBe(1);
  });

  it('a timeout stops the plan: cells after it are left stale, not run', async () => {
    const s = open(
      [
        { id: 'slow', source: 'while (true) {}' },
        { id: 'after', source: '"after"' },
      ],
      { cellTimeoutMs: 300 },
    );
    const events = record(s);
    await s.runAll();
    expect(states(s, ['slow', 'after'])).toEqual(['error', 'stale']);
    expect(s.cell('after').execution_count).toBe(0);
    expect(events.filter((e) => e.type === 'kernel')).toEqual([expect.objectContaining({ status: 'timeout' })]);
  });

  it('an interrupt drops the runs queued behind the running one: they end stale, never run', async () => {
    const s = open([
      { id: 'loop', source: 'while (true) {}' },
      { id: 'later', source: '"later"' },
    ]);
    const first = s.runCell('loop');
    const second = s.runCell('later');
    while (s.state('loop') !== 'running') await new Promise((r) => setTimeout(r, 10));
    const events = record(s);
    await s.interrupt();
    await Promise.all([first, second]);
    expect(s.state('later')).toBe('stale');
    expect(s.cell('later').execution_count).toBe(0);
    const kernel = events.filter((e) => e.type === 'kernel');
    expect(kernel.length).toBeGreaterThan(0);
    expect(kernel.every((e) => (e as { status: string }).status === 'restarted')).toBe(true);
  });

  it('restart makes what ran stale and leaves the rest idle', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: '"b"' },
    ]);
    await s.runCell('a');
    await s.restart();
    expect(states(s, ['a', 'b'])).toEqual(['stale', 'idle']);
  });
});

describe('notebook rules: reading', () => {
  it('the state of an unknown cell is idle, and saved outputs start stale until the cell runs', async () => {
    const s = new NotebookSession(
      Notebook.parse({
        name: 't',
        cells: [
          {
            id: 'old',
            source: '1',
            outputs: [{ output_type: 'execute_result', data: { 'text/plain': '1' }, metadata: {}, execution_count: 3 }],
            execution_count: 3,
          },
          { id: 'new', source: '2' },
          { id: 'md', source: '# x', cell_type: 'markdown' },
        ],
      }),
    );
    sessions.push(s);
    expect(s.state('nope')).toBe('idle');
    expect(states(s, ['old', 'new', 'md'])).toEqual(['stale', 'idle', 'idle']);
    expect(s.cellsWithState().map((c) => [c.id, c.state, c.stale_outputs])).toEqual([
      ['old', 'stale', true],
      ['new', 'idle', false],
      ['md', 'idle', false],
    ]);
    await s.runCell('new');
    // Counts continue after the saved ones, so no two runs share a number.
    expect(s.cell('new').execution_count).toBe(4);
    await s.runCell('old');
    expect(s.cellsWithState().find((c) => c.id === 'old')).toMatchObject({ state: 'success', stale_outputs: false });
  });
});

describe('notebook rules: reloading from disk', () => {
  async function onDisk(cells: CellInput[]) {
    const dir = mkdtempSync(path.join(tmpdir(), 'hangar-nb-rules-'));
    dirs.push(dir);
    const file = path.join(dir, 'n.nb.ts');
    await writeNotebookFile(Notebook.parse({ name: 'n', cells }), file);
    const notebook = await readNotebookFile(file);
    const s = new NotebookSession(notebook, { filePath: file });
    sessions.push(s);
    await s.trackDisk();
    return { s, file };
  }

  async function rewrite(file: string, cells: CellInput[]) {
    await new Promise((r) => setTimeout(r, 20));
    await writeNotebookFile(Notebook.parse({ name: 'n', cells }), file);
  }

  it('a cell changed on disk and what reads it become stale; unchanged cells keep their state and outputs', async () => {
    const cells = [
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'a + 1' },
      { id: 'c', source: '"c"' },
    ];
    const { s, file } = await onDisk(cells);
    await s.runAll();
    await rewrite(file, [{ id: 'a', source: 'const a = 10' }, cells[1]!, cells[2]!]);
    const rerun = await s.reloadFromDisk();
    expect(rerun).toEqual([]);
    expect(states(s, ['a', 'b', 'c'])).toEqual(['stale', 'stale', 'success']);
    expect(value(s, 'c')).toBe('c');
    await s.runCell('a');
    expect(value(s, 'b')).toBe('11');
  });

  it('a cell removed on disk leaves the session, its names leave the kernel, and the cells that read them become stale', async () => {
    const cells = [
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'a' },
      { id: 'c', source: '"c"' },
    ];
    const { s, file } = await onDisk(cells);
    await s.runAll();
    await rewrite(file, [cells[1]!, cells[2]!]);
    await s.reloadFromDisk();
    expect(s.notebook.cells.map((c) => c.id)).toEqual(['b', 'c']);
    expect(s.state('a')).toBe('idle');
    expect(s.state('b')).toBe('stale');
    expect(s.state('c')).toBe('success');
    await s.runCell('b');
    expect(value(s, 'b')).toMatch(/a is not defined/);
  });

  it('a cell changed on disk to read a name makes no other cell stale; one added that defines a missing name makes its reader stale', async () => {
    const cells = [
      { id: 'r', source: 'x + 1' },
      { id: 'o', source: '"o"' },
    ];
    const { s, file } = await onDisk(cells);
    await s.runAll();
    expect(states(s, ['r', 'o'])).toEqual(['error', 'success']);
    await rewrite(file, [{ id: 'd', source: 'const x = 1' }, ...cells]);
    const rerun = await s.reloadFromDisk();
    expect(rerun).toEqual([]);
    expect(states(s, ['d', 'r', 'o'])).toEqual(['idle', 'stale', 'success']);
  });

  it('with rerun, a session that has run follows the file and re-runs the changed code cells; one that never ran does not', async () => {
    const cells = [
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'a + 1' },
      { id: 'm', source: '# m', cell_type: 'markdown' as const },
    ];
    const { s, file } = await onDisk(cells);
    await s.runAll();
    await rewrite(file, [{ id: 'a', source: 'const a = 5' }, cells[1]!, { id: 'm', source: '# changed', cell_type: 'markdown' }]);
    const rerun = await s.reloadFromDisk({ rerun: true });
    expect(rerun).toEqual(['a']);
    await s.idle();
    await new Promise((r) => setTimeout(r, 20));
    await s.idle();
    expect(value(s, 'b')).toBe('6');
    expect(states(s, ['a', 'b'])).toEqual(['success', 'success']);

    const fresh = await onDisk(cells);
    await rewrite(fresh.file, [{ id: 'a', source: 'const a = 7' }, cells[1]!]);
    expect(await fresh.s.reloadFromDisk({ rerun: true })).toEqual([]);
    expect(states(fresh.s, ['a', 'b'])).toEqual(['idle', 'idle']);
  });
});

describe('notebook rules: what each step tells the UI and keeps', () => {
  it('saved outputs make a code cell stale whether they hold outputs or only a count; a markdown cell stays idle', async () => {
    const s = new NotebookSession(
      Notebook.parse({
        name: 't',
        cells: [
          { id: 'out', source: '1', outputs: saved('1') },
          { id: 'count', source: '2', execution_count: 2 },
          { id: 'md', source: '# x', cell_type: 'markdown', execution_count: 5, outputs: saved('x') },
        ],
      }),
    );
    sessions.push(s);
    expect(states(s, ['out', 'count', 'md'])).toEqual(['stale', 'stale', 'idle']);
    expect(s.cellsWithState().map((c) => c.stale_outputs)).toEqual([true, true, false]);
  });

  it('an unknown cell is a not-found error naming it', async () => {
    const s = open([{ id: 'a', source: '1' }]);
    expect(() => s.cell('nope')).toThrow(
      expect.objectContaining({ code: 'HANGAR_NOTEBOOK_CELL_NOT_FOUND', detail: expect.stringContaining('nope') }),
    );
  });

  it('every change to the cells tells the UI with cells-changed', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'a + 1' },
    ]);
    const events = record(s);
    const changes = () => events.filter((e) => e.type === 'cells-changed').length;
    await s.addCell({ source: '"new"' });
    expect(changes()).toBe(1);
    await s.updateCell('a', { source: 'const a = 2' });
    expect(changes()).toBe(2);
    await s.deleteCell('b');
    expect(changes()).toBe(3);
    s.reorder([...s.notebook.cells].reverse().map((c) => c.id));
    expect(changes()).toBe(4);
    expect(events.every((e) => e.type !== ('' as never))).toBe(true);
  });

  it('reorder refuses a list naming a cell that does not exist, even with every real one in it', async () => {
    const s = open([
      { id: 'a', source: '1' },
      { id: 'b', source: '2' },
    ]);
    expect(() => s.reorder(['a', 'b', 'x'])).toThrow(expect.objectContaining({ code: 'HANGAR_NOTEBOOK_ORDER_INVALID' }));
    expect(s.notebook.cells.map((c) => c.id)).toEqual(['a', 'b']);
  });

  it('a code cell with saved outputs turned markdown no longer claims stale outputs', async () => {
    const s = new NotebookSession(Notebook.parse({ name: 't', cells: [{ id: 'a', source: '1', outputs: saved('1') }] }));
    sessions.push(s);
    await s.updateCell('a', { cell_type: 'markdown' });
    expect(s.cellsWithState()[0]).toMatchObject({ state: 'idle', stale_outputs: false, outputs: [] });
  });

  it('a cell with an analysis error shows only its errors, drops saved outputs, and tells the UI so', async () => {
    const s = new NotebookSession(
      Notebook.parse({
        name: 't',
        cells: [
          { id: 'arr', source: 'const arr = [1]' },
          { id: 'bad', source: 'arr.push(2);\nexport const y = 1', outputs: saved('old') },
        ],
      }),
    );
    sessions.push(s);
    const events = record(s);
    await s.runAll();
    expect(s.state('bad')).toBe('error');
    const outputs = s.cell('bad').outputs;
    expect(outputs).toHaveLength(1);
    expect(outputs[0]).toMatchObject({ output_type: 'error' });
    expect(s.cellsWithState().find((c) => c.id === 'bad')!.stale_outputs).toBe(false);
    const mine = events.filter((e) => 'cellId' in e && e.cellId === 'bad').map((e) => e.type);
    expect(mine).toEqual(['cell-state', 'outputs-cleared', 'output', 'cell-state']);
  });

  it('a run clears the outputs first, then streams the warning and the outputs to the UI', async () => {
    const s = open([
      { id: 'a', source: 'const arr = [1]' },
      { id: 'b', source: 'arr.push(2);\narr.length' },
    ]);
    await s.runCell('a');
    const events = record(s);
    await s.runCell('b');
    const mine = events.filter((e) => 'cellId' in e && e.cellId === 'b');
    expect(mine.map((e) => (e.type === 'cell-state' ? `state:${e.state}` : e.type))).toEqual([
      'state:queued',
      'outputs-cleared',
      'state:running',
      'output',
      'output',
      'state:success',
    ]);
    expect((mine[3] as { output: { name: string } }).output.name).toBe('stderr');
  });

  it('history keeps the heap delta of a run and how a lost kernel ended it', async () => {
    const s = open([
      { id: 'a', source: '[1, 2, 3]' },
      { id: 'x', source: 'process.exit(2)' },
    ]);
    await s.runCell('a');
    await s.runCell('x');
    expect(typeof s.history[0]!.heap_delta_bytes).toBe('number');
    expect(s.history[0]!.ended).toBeUndefined();
    expect(s.history[1]).toMatchObject({ cell_id: 'x', status: 'error', ended: 'crashed' });
  });

  it('idle() waits for the runs queued before it', async () => {
    const s = open([{ id: 'slow', source: 'const t = Date.now();\nwhile (Date.now() - t < 200) {}\n"done"' }]);
    const run = s.runCell('slow');
    while (s.state('slow') === 'idle') await new Promise((r) => setTimeout(r, 1));
    await s.idle();
    expect(s.state('slow')).toBe('success');
    await run;
  });

  it('a cell deleted while it runs ends its run without breaking it', async () => {
    const s = open([
      { id: 'slow', source: 'const t = Date.now();\nwhile (Date.now() - t < 300) {}' },
      { id: 'after', source: '"after"' },
    ]);
    const run = s.runAll();
    while (s.state('slow') !== 'running') await new Promise((r) => setTimeout(r, 5));
    await s.deleteCell('slow');
    await expect(run).resolves.toBeUndefined();
    expect(s.state('after')).toBe('success');
  });

  it('closing the session with a run queued leaves that run stale, not queued', async () => {
    const s = open([
      { id: 'slow', source: 'const t = Date.now();\nwhile (Date.now() - t < 300) {}' },
      { id: 'next', source: '"next"' },
    ]);
    const first = s.runCell('slow');
    const second = s.runCell('next');
    while (s.state('slow') !== 'running') await new Promise((r) => setTimeout(r, 5));
    await s.close();
    await Promise.allSettled([first, second]);
    expect(s.state('next')).toBe('stale');
    expect(s.cell('next').execution_count).toBe(0);
  });

  it('runStale never queues a markdown cell', async () => {
    const s = open([
      { id: 'm', source: '# notes', cell_type: 'markdown' },
      { id: 'a', source: '1' },
    ]);
    const events = record(s);
    await s.runStale();
    expect(stateEvents(events, 'm')).toEqual([]);
    expect(s.state('m')).toBe('idle');
  });
});

describe('notebook rules: interactive elements', () => {
  it('setting an element of an unknown cell is refused before the value is kept', async () => {
    const s = open([{ id: 'a', source: '1' }]);
    await expect(s.setUiValue('nope:0', 5)).rejects.toMatchObject({ code: 'HANGAR_NOTEBOOK_CELL_NOT_FOUND' });
    expect(s.uiValues()).toEqual({});
  });

  it("setting an element changes only that element's stored output, not the cell's other outputs", async () => {
    const s = open([
      { id: 'u', source: 'console.log("made");\nconst n = ui.slider({ min: 1, max: 10, value: 3 });\n42' },
      { id: 'r', source: 'n.value + 1' },
    ]);
    await s.runAll();
    const before = structuredClone(s.cell('u').outputs);
    await s.setUiValue('u:0', 8);
    expect(s.cell('u').outputs).toEqual(before);
    expect(value(s, 'r')).toBe('9');
  });

  it('setting an element of a cell that is not fresh changes no state', async () => {
    const s = open([
      { id: 'u', source: 'const n = ui.slider({ min: 1, max: 10, value: 3 });\nn' },
      { id: 'r', source: 'n.value * 10' },
    ]);
    await s.runAll();
    await s.updateCell('u', { source: 'const n = ui.slider({ min: 1, max: 10, value: 4 });\nn' });
    const events = record(s);
    await s.setUiValue('u:0', 9);
    expect(stateEvents(events)).toEqual([]);
  });

  it('a reader two steps from the element is not run when the step between could not run', async () => {
    const s = open([
      { id: 'u', source: 'const n = ui.slider({ min: 1, max: 10, value: 3 });\nn' },
      { id: 'k', source: 'const k = 2' },
      { id: 'r', source: 'const m = n.value * k' },
      { id: 'g', source: 'm + 1' },
    ]);
    await s.runAll();
    expect(value(s, 'g')).toBe('7');
    await s.updateCell('k', { source: 'const k = 5' });
    const count = s.cell('g').execution_count;
    await s.setUiValue('u:0', 4);
    expect(states(s, ['r', 'g'])).toEqual(['stale', 'stale']);
    expect(s.cell('g').execution_count).toBe(count);
  });
});

describe('notebook rules: more of reloading from disk', () => {
  async function onDisk(cells: Array<CellInput & { name?: string; outputs?: unknown[] }>) {
    const dir = mkdtempSync(path.join(tmpdir(), 'hangar-nb-rules-'));
    dirs.push(dir);
    const file = path.join(dir, 'n.nb.ts');
    await writeNotebookFile(Notebook.parse({ name: 'n', cells }), file);
    const s = new NotebookSession(await readNotebookFile(file), { filePath: file });
    sessions.push(s);
    await s.trackDisk();
    return { s, file };
  }

  async function rewrite(file: string, cells: Array<CellInput & { name?: string; outputs?: unknown[] }>) {
    await new Promise((r) => setTimeout(r, 20));
    await writeNotebookFile(Notebook.parse({ name: 'n', cells }), file);
  }

  it('a cell that stops defining a name on disk makes its old readers stale; kept names stay in the kernel', async () => {
    const cells = [
      { id: 'a', source: 'const x = 1' },
      { id: 'b', source: 'x + 1' },
      { id: 'gone', source: 'const g = 1' },
      { id: 'k', source: 'const k = 1' },
      { id: 'r', source: 'k + 1' },
    ];
    const { s, file } = await onDisk(cells);
    await s.runAll();
    const events = record(s);
    await rewrite(file, [{ id: 'a', source: 'const y = 1' }, cells[1]!, cells[3]!, cells[4]!]);
    await s.reloadFromDisk();
    expect(states(s, ['a', 'b', 'k', 'r'])).toEqual(['stale', 'stale', 'success', 'success']);
    expect(events.some((e) => e.type === 'cells-changed')).toBe(true);
    await s.runCell('r');
    expect(value(s, 'r')).toBe('2');
  });

  it('a cell whose type changed on disk is taken, and a changed name or metadata is taken without making it stale', async () => {
    const cells = [
      { id: 'a', source: 'const a = 1', name: 'first' },
      { id: 'b', source: 'a + 1' },
    ];
    const { s, file } = await onDisk(cells);
    await s.runAll();
    await rewrite(file, [{ id: 'a', source: 'const a = 1', name: 'renamed' }, cells[1]!]);
    expect(await s.reloadFromDisk()).toEqual([]);
    expect(s.cell('a').name).toBe('renamed');
    expect(states(s, ['a', 'b'])).toEqual(['success', 'success']);

    await rewrite(file, [{ id: 'a', source: 'const a = 1', cell_type: 'markdown' }, cells[1]!]);
    await s.reloadFromDisk();
    expect(s.cell('a').cell_type).toBe('markdown');
    expect(s.state('b')).toBe('stale');
  });

  it('a changed cell with outputs on disk starts stale with stale outputs; one without drops the claim', async () => {
    const cells = [
      { id: 'a', source: '1', outputs: saved('1') },
      { id: 'b', source: '2' },
    ];
    const { s, file } = await onDisk(cells);
    expect(s.cellsWithState().map((c) => [c.state, c.stale_outputs])).toEqual([
      ['stale', true],
      ['idle', false],
    ]);
    await rewrite(file, [
      { id: 'a', source: '10' },
      { id: 'b', source: '20', outputs: saved('20') },
    ]);
    await s.reloadFromDisk();
    expect(s.cellsWithState().map((c) => [c.id, c.state, c.stale_outputs])).toEqual([
      ['a', 'stale', false],
      ['b', 'stale', true],
    ]);
  });
});

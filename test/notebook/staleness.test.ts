import { afterEach, describe, expect, it } from 'vitest';
import { Notebook } from '../../core/notebook/schemas.js';
import { NotebookSession } from '../../core/notebook/session.js';

/**
 * Staleness follows the dependencies a cell has now, not the ones it had: data chosen so that a
 * session remembering the old graph (an analysis not recomputed after an edit or a deletion) gives
 * a different answer (#30).
 */
const sessions: NotebookSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

function open(cells: Array<{ id: string; source: string }>) {
  const session = new NotebookSession(Notebook.parse({ name: 't', cells }), {});
  sessions.push(session);
  return session;
}

const value = (session: NotebookSession, id: string) =>
  session
    .cell(id)
    .outputs.map((o) =>
      o.output_type === 'execute_result' ? String(o.data['text/plain']) : o.output_type === 'error' ? `!${o.evalue}` : '',
    )
    .join('');

describe('notebook staleness after a dependency goes away', () => {
  it('a cell whose dependency was deleted, then edited not to need it, runs and is no longer stale', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'a + 1' },
    ]);
    await s.runAll();
    expect(value(s, 'b')).toBe('2');

    await s.deleteCell('a');
    expect(s.state('b')).toBe('stale');
    await s.updateCell('b', { source: '41 + 1' });
    await s.runCell('b');

    expect(s.state('b')).toBe('success');
    expect(value(s, 'b')).toBe('42');
    expect((await s.dependencies()).stale).toEqual([]);
  });

  it('a cell edited to drop a stale dependency runs without it, and the old upstream neither runs first nor re-runs it', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'a + 1' },
    ]);
    await s.runAll();
    await s.updateCell('a', { source: 'const a = 10' });
    expect([s.state('a'), s.state('b')]).toEqual(['stale', 'stale']);
    const aCount = s.cell('a').execution_count;

    await s.updateCell('b', { source: '7' });
    await s.runCell('b');
    expect(s.state('b')).toBe('success');
    expect(value(s, 'b')).toBe('7');
    // `a` is no longer upstream of `b`: not run for it, and still stale on its own account.
    expect(s.cell('a').execution_count).toBe(aCount);
    expect((await s.dependencies()).stale).toEqual(['a']);

    const bCount = s.cell('b').execution_count;
    await s.runCell('a');
    expect(s.cell('b').execution_count).toBe(bCount);
    expect([s.state('a'), s.state('b')]).toEqual(['success', 'success']);
  });

  it('running the stale cells after a deleted name is defined again leaves nothing stale and uses the new value', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'const b = a * 2' },
      { id: 'c', source: 'b + 1' },
    ]);
    await s.runAll();
    await s.deleteCell('a');
    expect([s.state('b'), s.state('c')]).toEqual(['stale', 'stale']);

    await s.addCell({ source: 'const a = 5', index: 0 });
    await s.runStale();
    expect(value(s, 'c')).toBe('11');
    expect((await s.dependencies()).stale).toEqual([]);
  });
});

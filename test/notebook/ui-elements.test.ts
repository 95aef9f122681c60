/**
 * Interactive elements (#23, marimo's mo.ui): a cell reading an element's `.value` re-runs when the
 * value is set, the defining cell does not, and the value survives a re-run of the defining cell.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Notebook } from '../../core/notebook/schemas.js';
import { NotebookSession } from '../../core/notebook/session.js';
import { UI_MIME } from '../../core/notebook/ui-elements.js';

const sessions: NotebookSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

async function open(sources: string[]) {
  const cells = sources.map((source, i) => ({ id: `cell${i}`, source }));
  const session = new NotebookSession(Notebook.parse({ name: 't', cells }));
  sessions.push(session);
  await session.runAll();
  return session;
}

const plain = (s: NotebookSession, id: string) =>
  s
    .cell(id)
    .outputs.map((o) => ('data' in o ? String(o.data['text/plain']) : ''))
    .join('');
const payload = (s: NotebookSession, id: string) =>
  (s.cell(id).outputs.find((o) => 'data' in o && UI_MIME in o.data) as { data: Record<string, { id: string; value: unknown }> }).data[
    UI_MIME
  ];

describe('ui elements', () => {
  it('a slider shows as a control, and setting it re-runs its readers only', async () => {
    const s = await open(['const n = ui.slider({ min: 1, max: 10, value: 3, label: "n" });\nn', 'n.value * 100']);
    const slider = payload(s, 'cell0');
    expect(slider).toMatchObject({ id: 'cell0:0', kind: 'slider', value: 3 });
    expect(plain(s, 'cell1')).toBe('300');
    const before = s.cell('cell0').execution_count;
    await s.setUiValue(slider.id, 7);
    expect(plain(s, 'cell1')).toBe('700');
    expect(s.cell('cell0').execution_count).toBe(before);
    expect(payload(s, 'cell0').value).toBe(7);
    // Re-running the defining cell keeps the value the user chose.
    await s.runCell('cell0');
    expect(payload(s, 'cell0').value).toBe(7);
    expect(plain(s, 'cell1')).toBe('700');
  });

  it('every kind of element gives its reader a value', async () => {
    const s = await open([
      [
        'const t = ui.text({ value: "hi" });',
        'const d = ui.dropdown({ options: ["a", "b"] });',
        'const c = ui.checkbox();',
        'const b = ui.button({ label: "Go" });',
        'const tab = ui.table([{ x: 1 }, { x: 2 }]);',
        'const day = ui.date({ value: "2026-01-02" });',
        'const f = ui.form(ui.number({ value: 4 }));',
        'const num = ui.number({ value: 5 });',
      ].join('\n'),
      'JSON.stringify([t.value, d.value, c.value, b.value, tab.value, day.value, f.value, num.value])',
    ]);
    expect(JSON.parse(plain(s, 'cell1').replace(/^'|'$/g, ''))).toEqual(['hi', 'a', false, 0, [], '2026-01-02', 4, 5]);
    await s.setUiValue('cell0:4', [{ x: 2 }]);
    await s.setUiValue('cell0:3', 1);
    expect(plain(s, 'cell1')).toContain('1,[{"x":2}]');
  });
});

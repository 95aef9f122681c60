import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningNotebookServer, startAppServer } from '../../core/notebook/server.js';

/**
 * #23: `notebook app` keeps a live session: its report draws interactive elements as controls, and
 * `POST /ui/:element` (what the page sends for the sandboxed frame) sets a value, re-runs the
 * cells that read it and answers their new outputs. Ids and bodies are checked; other origins are
 * refused. The browser side is test/e2e/notebook-app.test.ts.
 */

const notebook = [
  '// %% [code] id=knob0001 name="knob"',
  'const n = ui.slider({ min: 1, max: 10, value: 3, label: "Bars" })',
  'n',
  '// %% [code] id=label001 name="label"',
  '`${n.value} bars`',
  '// %% [code] id=others01 name="others"',
  'const kind = ui.dropdown({ options: ["tea", 2], label: "Kind" })',
  'const agree = ui.checkbox({ label: "Agree" })',
  'const go = ui.button({ label: "Go" })',
  'const rows = ui.table([{ a: 1 }, { a: 2 }], { label: "Rows" })',
  'const day = ui.date({ value: "2026-01-02", label: "Day" })',
  'const note = ui.form(ui.text({ label: "Note" }), { submit: "Send" })',
  'const count = ui.number({ value: 4, label: "Count" })',
  'display(kind); display(agree); display(go); display(rows); display(day); display(note); display(count)',
  '// %% [code] id=picked01 name="picked"',
  '`picked ${JSON.stringify(kind.value)}, ${rows.value.length} rows`',
  '',
].join('\n');

let dir: string;
let app: RunningNotebookServer;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-nb-app-api-'));
  const file = path.join(dir, 'knobs.nb.ts');
  await writeFile(file, notebook);
  app = await startAppServer({ file, port: 0, layout: 'linear' });
}, 60_000);
afterAll(async () => {
  await app?.close();
  await rm(dir, { recursive: true, force: true });
});

const setUi = (element: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${app.url}/ui/${encodeURIComponent(element)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('notebook app: a live session behind the report', () => {
  it('draws every kind of element as a live control, and the frame script with them', async () => {
    const report = await (await fetch(`${app.url}/report`)).text();
    expect(report).toContain('<input type="range" data-ui-id="knob0001:0" data-ui-kind="slider" min="1" max="10" step="1" value="3">');
    expect(report).toContain('data-ui-kind="dropdown" data-ui-options="[&quot;tea&quot;,2]"');
    expect(report).toContain('<input type="checkbox" data-ui-id="others01:1" data-ui-kind="checkbox">');
    expect(report).toContain('<button type="button" data-ui-id="others01:2" data-ui-kind="button" data-count="0">Go</button>');
    expect(report).toContain('<table class="ui-table" data-ui-id="others01:3" data-ui-kind="table">');
    expect(report).toContain('<input type="date" data-ui-id="others01:4" data-ui-kind="date" value="2026-01-02">');
    expect(report).toMatch(/data-ui-id="others01:6" data-ui-kind="form".*data-ui-field data-ui-kind="text".*data-ui-submit>Send</);
    expect(report).toContain('<input type="number" data-ui-id="others01:7" data-ui-kind="number"');
    expect(report).toContain('hangar-app-outputs');
    expect(report).toContain('<div class="outputs" data-cell-outputs="label001"><pre class="output-text">3 bars</pre></div>');
    const shell = await fetch(app.url);
    expect(shell.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await shell.text()).toContain('<iframe src="report" sandbox="allow-scripts"');
    const script = await fetch(`${app.url}/app.js`);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await script.text()).toContain('e.source !== frame.contentWindow');
  });

  it('a new value re-runs the readers and answers only the outputs that changed', async () => {
    const res = await setUi('knob0001:0', { value: 7 });
    expect(res.status).toBe(200);
    const { cells } = (await res.json()) as { cells: Array<{ id: string; html: string }> };
    expect(cells).toEqual([{ id: 'label001', html: '<pre class="output-text">7 bars</pre>' }]);
    // The page reloaded shows the value and what it made.
    const report = await (await fetch(`${app.url}/report`)).text();
    expect(report).toContain('data-ui-kind="slider" min="1" max="10" step="1" value="7"');
    expect(report).toContain('7 bars');

    const picked = (await (await setUi('others01:0', { value: 2 })).json()) as { cells: Array<{ id: string; html: string }> };
    expect(picked.cells).toEqual([{ id: 'picked01', html: '<pre class="output-text">picked 2, 0 rows</pre>' }]);
    const rows = (await (await setUi('others01:3', { value: [{ a: 2 }] })).json()) as { cells: Array<{ id: string; html: string }> };
    expect(rows.cells[0]!.html).toContain('picked 2, 1 rows');
  });

  it('Re-run takes the file again and keeps the values set', async () => {
    const res = await fetch(`${app.url}/rerun`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      redirect: 'manual',
    });
    expect(res.status).toBe(303);
    const report = await (await fetch(`${app.url}/report`)).text();
    expect(report).toContain('7 bars');
    expect(report).toContain('picked 2, 1 rows');
  });

  it('refuses bad element ids, unknown cells, bad bodies and other origins with {detail}', async () => {
    const badId = await setUi('../rerun', { value: 1 });
    expect(badId.status).toBe(422);
    expect(((await badId.json()) as { detail: string }).detail).toMatch(/element/);
    const unknown = await setUi('nothere1:0', { value: 1 });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { detail: string }).detail).toBe('cell nothere1 not found');
    const notJson = await fetch(`${app.url}/ui/knob0001%3A0`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{',
    });
    expect(notJson.status).toBe(400);
    // The sandboxed frame's own requests carry Origin: null; they never reach the kernel.
    const framed = await setUi('knob0001:0', { value: 2 }, { origin: 'null' });
    expect(framed.status).toBe(403);
    expect(await (await fetch(`${app.url}/report`)).text()).toContain('7 bars');
  });
});

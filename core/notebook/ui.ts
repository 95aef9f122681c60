/**
 * The editor page served by `notebook start` and `notebook dev`: one HTML file (no CDN) that lists
 * notebooks, edits cells, runs them and follows states and outputs over the ws channel. Outputs
 * are rendered by the server (`outputs.html`) with the same code as the HTML export. The desktop
 * app's richer notebook view lives in `desktop/views/`; its CodeMirror cell editor is this page's
 * too, loaded as a module from the page's own origin (`editorScript`). The page keeps working with
 * text areas when the editor is not served or fails to load.
 *
 * Edits are saved to the session shortly after typing stops (as in the UI's notebook view) and
 * before anything that reads them (run, run all, save, add cell); Shift+Enter or Ctrl/Cmd+Enter
 * runs a cell. Cells keep their view across re-renders, so another cell's change does not take the
 * focus, the selection or the undo history from the one being typed in.
 *
 * Outputs are the notebook's own markup, so they never enter this page's DOM: each cell's outputs
 * are a frame with `sandbox="allow-scripts"` (no `allow-same-origin`) and `srcdoc`, as Jupyter and
 * marimo isolate rich outputs. Their scripts run in an opaque origin that cannot reach this page
 * or read the API; the frame reports its height with postMessage and nothing else is accepted.
 */
import { escapeHtml } from './render.js';

export interface EditorPageOptions {
  /** API base URL; '' = same origin. */
  api: string;
  initial?: string;
  /** ws path on the page's own origin that announces file changes (dev hot reload). */
  hotReload?: string;
  /**
   * Path on the page's own origin of the cell editor's bundle, an ES module exporting
   * `mountCodeEditor` (desktop/views/notebook/editor.ts). Without it cells are text areas.
   */
  editorScript?: string;
}

export function editorPageHtml(options: EditorPageOptions): string {
  const config = JSON.stringify({
    api: options.api,
    initial: options.initial ?? null,
    hotReload: options.hotReload ?? null,
    editor: options.editorScript ?? null,
  }).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hangar notebooks</title><link rel="icon" href="data:,">
${options.editorScript ? `<link rel="modulepreload" href="${escapeHtml(options.editorScript)}">` : ''}
<style>
body{font-family:system-ui,sans-serif;margin:0;display:flex;height:100vh;color:#1f2328}
nav{width:220px;border-right:1px solid #d0d7de;padding:1rem;overflow:auto;background:#f6f8fa}
nav a{display:block;padding:.2rem 0;color:#0969da;cursor:pointer}
main{flex:1;overflow:auto;padding:1rem 2rem}
.toolbar button,.cell button{margin-right:.3rem}
.cell{border:1px solid #d0d7de;border-left:4px solid #d0d7de;border-radius:6px;margin:.75rem 0;padding:.5rem}
.cell[data-state=running]{border-left-color:#bf8700}.cell[data-state=queued]{border-left-color:#8c959f}
.cell[data-state=success]{border-left-color:#1a7f37}.cell[data-state=error]{border-left-color:#cf222e}
.cell[data-state=stale]{border-left-color:#9a6700;opacity:.8}
.editor{border:1px solid #d0d7de;border-radius:4px;overflow:hidden}
.editor .cm-editor{font-size:13px}.editor .cm-editor.cm-focused{outline:2px solid #0969da;outline-offset:1px}
.editor .cm-gutters{background:#f6f8fa;color:#57606a;border-right:1px solid #d0d7de}
textarea{width:100%;box-sizing:border-box;font:13px/1.45 ui-monospace,monospace;border:1px solid #e5e7eb;border-radius:4px;padding:.4rem;min-height:3em}
.meta{font:12px ui-monospace,monospace;color:#57606a}
.out iframe{width:100%;height:2em;border:0;display:block}
</style></head><body>
<nav><strong>Notebooks</strong><div id="list"></div><p><button id="new">New notebook</button></p></nav>
<main><div class="toolbar"><strong id="title"></strong>
<button id="runall">Run all</button><button id="interrupt">Interrupt</button><button id="restart">Restart</button>
<button id="save">Save</button><button id="add">Add cell</button></div><div id="cells"></div></main>
<script type="module">
const config = ${config};
const api = (path, init) => fetch(config.api + path, init ? { ...init, headers: { 'content-type': 'application/json' } } : undefined)
  .then(async (r) => { const body = r.status === 204 ? null : await r.json(); if (!r.ok) throw new Error(body.detail); return body; });
// The UI notebook view's CodeMirror editor, from this page's own origin; text areas when it is not served or does not load.
const editors = config.editor ? await import(config.editor).catch((err) => (console.warn('cell editor did not load, using text areas:', err), null)) : null;
let current = null, socket = null;
const nb = () => '/api/notebooks/' + encodeURIComponent(current);
async function loadList() {
  const { notebooks } = await api('/api/notebooks');
  const list = document.getElementById('list'); list.textContent = '';
  for (const n of notebooks) { const a = document.createElement('a'); a.textContent = n.id; a.onclick = () => open(n.id); list.append(a); }
}
const SIZE_REPORTER = '<script>new ResizeObserver(() => parent.postMessage({ hangarOutputHeight: document.body.scrollHeight }, "*")).observe(document.body)<\\/script>';
addEventListener('message', (e) => {
  for (const frame of document.querySelectorAll('iframe.out-frame')) {
    if (frame.contentWindow === e.source && typeof e.data?.hangarOutputHeight === 'number') frame.style.height = Math.min(Math.ceil(e.data.hangarOutputHeight), 5000) + 'px';
  }
});
async function refreshOutputs(id) {
  const el = document.querySelector('[data-id="' + id + '"] .out'); if (!el) return;
  const markup = await fetch(config.api + nb() + '/cells/' + id + '/outputs.html').then((r) => r.text());
  el.textContent = '';
  if (!markup) return;
  const frame = document.createElement('iframe');
  frame.className = 'out-frame'; frame.title = 'cell output';
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.srcdoc = '<!doctype html><meta charset="utf-8"><style>body{margin:0;display:flow-root;font:13px system-ui,sans-serif}pre{white-space:pre-wrap;font:13px ui-monospace,monospace}.output-error{color:#cf222e}table.hangar-table{border-collapse:collapse}table.hangar-table td,table.hangar-table th{border:1px solid #d0d7de;padding:.2rem .4rem}</style>' + markup + SIZE_REPORTER;
  el.append(frame);
}
// Edits are saved shortly after typing stops (as in the UI's notebook view), and before any action that reads them.
const SAVE_DELAY_MS = 400;
const drafts = new Map();
async function flush(id) {
  const draft = drafts.get(id); if (!draft) return;
  clearTimeout(draft.timer); drafts.delete(id);
  await api(nb() + '/cells/' + id, { method: 'PATCH', body: JSON.stringify({ source: draft.source }) });
}
async function flushAll() { for (const id of [...drafts.keys()]) await flush(id); }
function edited(id, source) {
  clearTimeout(drafts.get(id)?.timer);
  drafts.set(id, { source, timer: setTimeout(() => flush(id).catch((err) => console.error(err)), SAVE_DELAY_MS) });
}
const run = (id) => flushAll().then(() => api(nb() + '/cells/' + id + '/run?wait=false', { method: 'POST' }));
// One view per cell id, kept across re-renders so an editor keeps its focus, selection and undo history.
const views = new Map();
function cellView(cell, index) {
  const div = document.createElement('div'); div.className = 'cell'; div.dataset.id = cell.id;
  div.innerHTML = '<div class="meta"></div><div class="source"></div><div><button class="run">Run</button><button class="del">Delete</button></div><div class="out"></div>';
  const view = { div, editor: null, textarea: null, outputs: null };
  const host = div.querySelector('.source');
  if (editors) view.editor = editors.mountCodeEditor(host, editorProps(cell, index));
  else {
    const ta = view.textarea = document.createElement('textarea'); ta.spellcheck = false; host.append(ta);
    ta.oninput = () => edited(cell.id, ta.value);
    ta.onkeydown = (e) => { if (e.key === 'Enter' && (e.shiftKey || e.ctrlKey || e.metaKey)) { e.preventDefault(); run(cell.id); } };
  }
  div.querySelector('.run').onclick = () => run(cell.id);
  div.querySelector('.del').onclick = () => { clearTimeout(drafts.get(cell.id)?.timer); drafts.delete(cell.id); api(nb() + '/cells/' + cell.id, { method: 'DELETE' }).then(render); };
  return view;
}
// The label is read when the editor is made (the component sets it once, as in the UI).
function editorProps(cell, index) {
  const label = 'Source of ' + (cell.name || 'cell ' + (index + 1));
  return { value: drafts.get(cell.id)?.source ?? cell.source, language: cell.cell_type === 'markdown' ? 'markdown' : 'javascript', label, onChange: (source) => edited(cell.id, source), onRun: () => void run(cell.id) };
}
function updateView(view, cell, index) {
  view.div.dataset.state = cell.state;
  view.div.querySelector('.meta').textContent = '[' + (cell.execution_count || ' ') + '] ' + cell.cell_type + ' ' + cell.id + (cell.name ? ' · ' + cell.name : '') + ' · ' + cell.state;
  const source = drafts.get(cell.id)?.source ?? cell.source;
  if (view.editor) view.editor.update(editorProps(cell, index));
  else if (document.activeElement !== view.textarea) { view.textarea.value = source; view.textarea.rows = Math.max(2, source.split('\\n').length); }
  // Output frames are rebuilt only when the outputs changed: an edit re-renders every cell.
  const outputs = JSON.stringify([cell.execution_count, cell.state, cell.outputs]);
  if (outputs !== view.outputs) { view.outputs = outputs; refreshOutputs(cell.id); }
}
function clearViews() { for (const view of views.values()) { view.editor?.destroy(); view.div.remove(); } views.clear(); }
let renders = 0;
async function render() {
  const ticket = ++renders;
  const data = await api(nb());
  if (ticket !== renders) return; // a later render is on its way with newer cells
  document.getElementById('title').textContent = data.name;
  const box = document.getElementById('cells');
  const ids = new Set(data.cells.map((c) => c.id));
  for (const [id, view] of views) if (!ids.has(id)) { view.editor?.destroy(); view.div.remove(); views.delete(id); }
  data.cells.forEach((cell, index) => {
    let view = views.get(cell.id);
    if (!view) views.set(cell.id, (view = cellView(cell, index)));
    // Moved only when out of place: moving a node takes the focus out of its editor.
    if (box.children[index] !== view.div) box.insertBefore(view.div, box.children[index] ?? null);
    updateView(view, cell, index);
  });
}
async function open(id) {
  await flushAll().catch((err) => console.error(err));
  current = id; history.replaceState(null, '', '?notebook=' + encodeURIComponent(id)); clearViews(); await render();
  socket?.close();
  const base = (config.api || location.origin).replace(/^http/, 'ws');
  socket = new WebSocket(base + '/api/notebooks/ws?notebook=' + encodeURIComponent(id));
  socket.onmessage = (m) => {
    const e = JSON.parse(m.data);
    if (e.type === 'cell-state') { const el = document.querySelector('[data-id="' + e.cellId + '"]'); if (el) { el.dataset.state = e.state; const meta = el.querySelector('.meta'); meta.textContent = meta.textContent.replace(/ · \\w+$/, ' · ' + e.state); } if (e.state === 'success' || e.state === 'error') render(); }
    if (e.type === 'cells-changed' || e.type === 'kernel') render();
  };
}
document.getElementById('runall').onclick = () => flushAll().then(() => api(nb() + '/run?wait=false', { method: 'POST' }));
document.getElementById('interrupt').onclick = () => api(nb() + '/interrupt', { method: 'POST' });
document.getElementById('restart').onclick = () => api(nb() + '/restart', { method: 'POST' });
document.getElementById('save').onclick = () => flushAll().then(() => api(nb() + '/save', { method: 'POST' }));
document.getElementById('add').onclick = () => flushAll().then(() => api(nb() + '/cells', { method: 'POST', body: JSON.stringify({}) })).then(render);
document.getElementById('new').onclick = async () => { const name = prompt('Notebook name'); if (!name) return; const n = await api('/api/notebooks', { method: 'POST', body: JSON.stringify({ name }) }); await loadList(); open(n.id); };
if (config.hotReload) { const ws = new WebSocket(location.origin.replace(/^http/, 'ws') + config.hotReload); ws.onmessage = () => flushAll().finally(() => location.reload()); }
await loadList();
const wanted = new URLSearchParams(location.search).get('notebook') || config.initial;
if (wanted) open(wanted);
</script>
<noscript>${escapeHtml('This page needs JavaScript.')}</noscript>
</body></html>
`;
}

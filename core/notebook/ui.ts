/**
 * The editor page served by `notebook start` and `notebook dev`: one self-contained HTML file (no
 * build step, no CDN) that lists notebooks, edits cells, runs them and follows states and outputs
 * over the ws channel. Outputs are rendered by the server (`outputs.html`) with the same code as
 * the HTML export. The desktop app's richer notebook view lives in `desktop/views/`.
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
}

export function editorPageHtml(options: EditorPageOptions): string {
  const config = JSON.stringify({ api: options.api, initial: options.initial ?? null, hotReload: options.hotReload ?? null }).replace(
    /</g,
    '\\u003c',
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hangar notebooks</title>
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
textarea{width:100%;font:13px/1.45 ui-monospace,monospace;border:1px solid #e5e7eb;border-radius:4px;padding:.4rem;min-height:3em}
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
function cellView(cell) {
  const div = document.createElement('div'); div.className = 'cell'; div.dataset.id = cell.id; div.dataset.state = cell.state;
  div.innerHTML = '<div class="meta"></div><textarea spellcheck="false"></textarea><div><button class="run">Run</button><button class="del">Delete</button></div><div class="out"></div>';
  div.querySelector('.meta').textContent = '[' + (cell.execution_count || ' ') + '] ' + cell.cell_type + ' ' + cell.id + (cell.name ? ' · ' + cell.name : '') + ' · ' + cell.state;
  const ta = div.querySelector('textarea'); ta.value = cell.source; ta.rows = Math.max(2, cell.source.split('\\n').length);
  ta.onchange = () => api(nb() + '/cells/' + cell.id, { method: 'PATCH', body: JSON.stringify({ source: ta.value }) });
  ta.onkeydown = (e) => { if (e.key === 'Enter' && e.shiftKey) { e.preventDefault(); ta.onchange().then(() => run(cell.id)); } };
  div.querySelector('.run').onclick = () => api(nb() + '/cells/' + cell.id, { method: 'PATCH', body: JSON.stringify({ source: ta.value }) }).then(() => run(cell.id));
  div.querySelector('.del').onclick = () => api(nb() + '/cells/' + cell.id, { method: 'DELETE' }).then(render);
  return div;
}
const run = (id) => api(nb() + '/cells/' + id + '/run?wait=false', { method: 'POST' });
async function render() {
  const data = await api(nb()); document.getElementById('title').textContent = data.name;
  const box = document.getElementById('cells'); box.textContent = '';
  for (const cell of data.cells) { box.append(cellView(cell)); refreshOutputs(cell.id); }
}
async function open(id) {
  current = id; history.replaceState(null, '', '?notebook=' + encodeURIComponent(id)); await render();
  socket?.close();
  const base = (config.api || location.origin).replace(/^http/, 'ws');
  socket = new WebSocket(base + '/api/notebooks/ws?notebook=' + encodeURIComponent(id));
  socket.onmessage = (m) => {
    const e = JSON.parse(m.data);
    if (e.type === 'cell-state') { const el = document.querySelector('[data-id="' + e.cellId + '"]'); if (el) { el.dataset.state = e.state; const meta = el.querySelector('.meta'); meta.textContent = meta.textContent.replace(/ · \\w+$/, ' · ' + e.state); } if (e.state === 'success' || e.state === 'error') refreshOutputs(e.cellId); }
    if (e.type === 'cells-changed' || e.type === 'kernel') render();
  };
}
document.getElementById('runall').onclick = () => api(nb() + '/run?wait=false', { method: 'POST' });
document.getElementById('interrupt').onclick = () => api(nb() + '/interrupt', { method: 'POST' });
document.getElementById('restart').onclick = () => api(nb() + '/restart', { method: 'POST' });
document.getElementById('save').onclick = () => api(nb() + '/save', { method: 'POST' });
document.getElementById('add').onclick = () => api(nb() + '/cells', { method: 'POST', body: JSON.stringify({}) }).then(render);
document.getElementById('new').onclick = async () => { const name = prompt('Notebook name'); if (!name) return; const n = await api('/api/notebooks', { method: 'POST', body: JSON.stringify({ name }) }); await loadList(); open(n.id); };
if (config.hotReload) { const ws = new WebSocket(location.origin.replace(/^http/, 'ws') + config.hotReload); ws.onmessage = () => location.reload(); }
await loadList();
const wanted = new URLSearchParams(location.search).get('notebook') || config.initial;
if (wanted) open(wanted);
</script>
<noscript>${escapeHtml('This page needs JavaScript.')}</noscript>
</body></html>
`;
}

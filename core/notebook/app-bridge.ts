/**
 * `notebook app` as an interactive app: its interactive elements (`ui.slider` …) drive the kernel
 * while the report stays in its sandbox.
 *
 * The report is the notebook's own HTML (an `.ipynb` can carry any script), so it runs in a frame
 * with `sandbox="allow-scripts"` and no `allow-same-origin`: an opaque origin that can read no
 * answer of the app server and whose requests are refused by the cross-site guard. Widening the
 * sandbox to let the controls call the server would hand the same power to every script in every
 * output. Instead, as Jupyter's and marimo's frames talk to their pages, by messages:
 *
 *   frame (controls)  ──postMessage {type: 'hangar-ui-set', id, value}──▶  page of ours (app.js)
 *   page  ──POST ui/<element> {value}──▶  server: sets the value, re-runs the cells that read it
 *   page  ──postMessage {type: 'hangar-app-outputs', cells: [{id, html}]}──▶  frame swaps those outputs
 *
 * Each side accepts only messages from the other window (`event.source`) and of the exact shape;
 * the page sends no more than an element id and a JSON value to the server, which checks both
 * again. The frame learns nothing it did not already show: the new outputs of its own notebook.
 * Updates are coalesced per element and sent one at a time, so a slider dragged across its range
 * runs its readers for the values the server can keep up with, ending at the last one.
 */
import { escapeHtml } from './render.js';
import { ELEMENT_ID } from './schemas.js';

/** An element's output (`application/vnd.hangar.ui+json`, core/notebook/ui-elements.ts). */
export interface UiPayload {
  id: string;
  kind: string;
  props: Record<string, unknown>;
  value: unknown;
}

const attr = (value: unknown) => escapeHtml(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));
const num = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? String(value) : '');

/** The input of one field; `mark` names it (`data-ui-id` for an element, `data-ui-field` inside a form). */
function fieldHtml(kind: string, props: Record<string, unknown>, value: unknown, mark: string): string {
  const common = `${mark} data-ui-kind="${escapeHtml(kind)}"`;
  switch (kind) {
    case 'slider':
      return `<input type="range" ${common} min="${num(props.min)}" max="${num(props.max)}" step="${num(props.step)}" value="${num(value)}"><output>${escapeHtml(num(value))}</output>`;
    case 'number':
      return `<input type="number" ${common} min="${num(props.min)}" max="${num(props.max)}" step="${num(props.step)}" value="${num(value)}">`;
    case 'text':
      return `<input type="text" ${common} placeholder="${attr(props.placeholder ?? '')}" value="${attr(value ?? '')}">`;
    case 'date':
      return `<input type="date" ${common} value="${attr(value ?? '')}">`;
    case 'checkbox':
      return `<input type="checkbox" ${common}${value ? ' checked' : ''}>`;
    case 'dropdown': {
      // Options by index, so a number option comes back a number.
      const options = Array.isArray(props.options) ? props.options : [];
      const items = options
        .map((o, i) => `<option value="${i}"${o === value ? ' selected' : ''}>${escapeHtml(String(o))}</option>`)
        .join('');
      return `<select ${common} data-ui-options="${attr(options)}">${items}</select>`;
    }
    default:
      return `<span>unknown control ${escapeHtml(kind)}</span>`;
  }
}

/**
 * An element as live HTML controls for the app's frame: native, labelled inputs (keyboard and
 * screen readers work as the browser makes them), read by the frame's script (`APP_FRAME_SCRIPT`).
 * No `<form>`: a sandbox without `allow-forms` never fires submit, so `ui.form` is a group with a
 * button.
 */
export function uiControlHtml(payload: UiPayload): string {
  const id = `data-ui-id="${escapeHtml(payload.id)}"`;
  const label = escapeHtml(String(payload.props.label ?? ''));
  switch (payload.kind) {
    case 'button':
      return `<div class="ui-control"><button type="button" ${id} data-ui-kind="button" data-count="${num(payload.value) || '0'}">${label || 'Run'}</button></div>`;
    case 'table': {
      const rows = Array.isArray(payload.props.rows) ? (payload.props.rows as Array<Record<string, unknown>>) : [];
      const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
      const chosen = new Set((Array.isArray(payload.value) ? payload.value : []).map((r) => JSON.stringify(r)));
      const type = payload.props.selection === 'single' ? 'radio' : 'checkbox';
      const body = rows
        .map((row, i) => {
          const json = JSON.stringify(row);
          const cells = columns.map((c) => `<td>${escapeHtml(String(row[c] ?? ''))}</td>`).join('');
          return `<tr><td><input type="${type}" name="${escapeHtml(payload.id)}" data-row="${escapeHtml(json)}" aria-label="Select row ${i + 1}"${chosen.has(json) ? ' checked' : ''}></td>${cells}</tr>`;
        })
        .join('');
      const head = columns.map((c) => `<th scope="col">${escapeHtml(c)}</th>`).join('');
      return `<div class="ui-control">${label ? `<div>${label}</div>` : ''}<table class="ui-table" ${id} data-ui-kind="table"><thead><tr><th scope="col">Select</th>${head}</tr></thead><tbody>${body}</tbody></table></div>`;
    }
    case 'form': {
      const inner = (payload.props.inner ?? {}) as { kind?: string; props?: Record<string, unknown> };
      const submit = escapeHtml(String(payload.props.submit ?? 'Submit'));
      return `<div class="ui-control" role="group" ${id} data-ui-kind="form" aria-label="${label || 'form'}"><label>${label} ${fieldHtml(inner.kind ?? 'text', inner.props ?? {}, payload.value, 'data-ui-field')}</label> <button type="button" data-ui-submit>${submit}</button></div>`;
    }
    default:
      return `<div class="ui-control"><label>${label} ${fieldHtml(payload.kind, payload.props, payload.value, id)}</label></div>`;
  }
}

/**
 * Runs in the report's sandboxed frame: sends the controls' new values to the page, and swaps in
 * the outputs the page sends back (re-creating their scripts, which innerHTML leaves inert, so a
 * chart library in an output draws again as on first load).
 */
export const APP_FRAME_SCRIPT = `(function(){
  if (window.parent === window) return;
  function post(id, value){ window.parent.postMessage({ type: 'hangar-ui-set', id: id, value: value }, '*'); }
  function fieldValue(el){
    var kind = el.getAttribute('data-ui-kind');
    if (kind === 'slider' || kind === 'number') return Number(el.value);
    if (kind === 'checkbox') return el.checked;
    if (kind === 'dropdown'){ var options = JSON.parse(el.getAttribute('data-ui-options') || '[]'); var v = options[Number(el.value)]; return v === undefined ? null : v; }
    return el.value;
  }
  function submitForm(group){ var field = group.querySelector('[data-ui-field]'); if (field) post(group.getAttribute('data-ui-id'), fieldValue(field)); }
  document.addEventListener('input', function(e){
    var el = e.target;
    if (el && el.matches && el.matches('input[type=range][data-ui-kind]')){ var out = el.parentNode.querySelector('output'); if (out) out.textContent = el.value; }
  });
  document.addEventListener('change', function(e){
    var el = e.target;
    if (!el || !el.closest || el.closest('[data-ui-kind=form]')) return;
    var table = el.closest('table[data-ui-kind=table]');
    if (table){
      var rows = [];
      table.querySelectorAll('input[data-row]').forEach(function(box){ if (box.checked) rows.push(JSON.parse(box.getAttribute('data-row'))); });
      post(table.getAttribute('data-ui-id'), rows);
      return;
    }
    if (el.hasAttribute('data-ui-id')) post(el.getAttribute('data-ui-id'), fieldValue(el));
  });
  document.addEventListener('click', function(e){
    var target = e.target; if (!target || !target.closest) return;
    var button = target.closest('button[data-ui-kind=button]');
    if (button){ var n = Number(button.getAttribute('data-count') || 0) + 1; button.setAttribute('data-count', String(n)); post(button.getAttribute('data-ui-id'), n); return; }
    var submit = target.closest('[data-ui-submit]');
    if (submit) submitForm(submit.closest('[data-ui-kind=form]'));
  });
  document.addEventListener('keydown', function(e){
    if (e.key !== 'Enter' || !e.target || !e.target.closest) return;
    var group = e.target.closest('[data-ui-kind=form]');
    if (group && e.target.hasAttribute('data-ui-field')){ e.preventDefault(); submitForm(group); }
  });
  window.addEventListener('message', function(e){
    if (e.source !== window.parent) return;
    var d = e.data;
    if (!d || d.type !== 'hangar-app-outputs' || !Array.isArray(d.cells)) return;
    d.cells.forEach(function(cell){
      if (!cell || typeof cell.id !== 'string' || typeof cell.html !== 'string') return;
      var box = document.querySelector('[data-cell-outputs="' + CSS.escape(cell.id) + '"]');
      if (!box) return;
      box.innerHTML = cell.html;
      box.querySelectorAll('script').forEach(function(old){
        var s = document.createElement('script');
        for (var i = 0; i < old.attributes.length; i++) s.setAttribute(old.attributes[i].name, old.attributes[i].value);
        s.textContent = old.textContent;
        old.replaceWith(s);
      });
    });
  });
})();`;

/**
 * The page around the frame (served as `app.js`, so the page's CSP allows scripts from 'self'
 * only): takes the frame's messages, asks the server, hands the new outputs back.
 */
export const APP_SHELL_SCRIPT = `(function(){
  var frame = document.querySelector('iframe');
  var status = document.getElementById('app-status');
  var ID = ${ELEMENT_ID.toString()};
  var pending = new Map();
  var busy = false;
  window.addEventListener('message', function(e){
    if (!frame || e.source !== frame.contentWindow) return;
    var d = e.data;
    if (!d || typeof d !== 'object' || d.type !== 'hangar-ui-set' || typeof d.id !== 'string' || !ID.test(d.id) || !('value' in d)) return;
    pending.delete(d.id);
    pending.set(d.id, d.value);
    pump();
  });
  function pump(){
    if (busy || pending.size === 0) return;
    var next = pending.entries().next().value;
    pending.delete(next[0]);
    busy = true;
    document.body.setAttribute('aria-busy', 'true');
    status.textContent = 'Running…';
    fetch('ui/' + encodeURIComponent(next[0]), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: next[1] }) })
      .then(function(r){ return r.json().then(function(body){ if (!r.ok) throw new Error(body.detail || ('HTTP ' + r.status)); return body; }); })
      .then(function(body){
        frame.contentWindow.postMessage({ type: 'hangar-app-outputs', cells: body.cells }, '*');
        status.textContent = '';
      }, function(err){ status.textContent = 'Could not update: ' + err.message; })
      .finally(function(){ busy = false; if (pending.size === 0) document.body.removeAttribute('aria-busy'); pump(); });
  }
})();`;

export const APP_SHELL_POLICY =
  "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

export const APP_SHELL = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>Notebook app</title>
<style>html,body{margin:0;height:100%}iframe{display:block;border:0;width:100%;height:100%}form{position:fixed;right:1rem;bottom:1rem;display:flex;gap:.5rem;align-items:center}#app-status{font:13px system-ui,sans-serif;color:#57606a}</style></head>
<body><iframe src="report" sandbox="allow-scripts" title="Notebook"></iframe><form method="post" action="rerun"><span id="app-status" role="status"></span><button>Re-run</button></form><script src="app.js"></script></body></html>
`;

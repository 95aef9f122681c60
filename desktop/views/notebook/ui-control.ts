/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';

/**
 * The control for an interactive element's output (`application/vnd.hangar.ui+json`, made by
 * core/notebook/ui-elements.ts). Native inputs, each with a label, so keyboard use and screen
 * readers work as the browser makes them. A change is sent with `onChange`; the server re-runs
 * the cells that read the element. Sliders and text send on `change` (release, blur or Enter),
 * not per keystroke, so a drag does not queue a run per pixel.
 */
export interface UiPayload {
  id: string;
  kind: string;
  props: Record<string, unknown>;
  value: unknown;
}

export const UI_MIME = 'application/vnd.hangar.ui+json';

type Send = (id: string, value: unknown) => void;

function Field({
  kind,
  props,
  value,
  onValue,
}: {
  kind: string;
  props: Record<string, unknown>;
  value: unknown;
  onValue: (v: unknown) => void;
}) {
  const [draft, setDraft] = useState(value);
  useEffect(() => setDraft(value), [JSON.stringify(value)]);
  const input = (e: Event) => e.target as HTMLInputElement;
  switch (kind) {
    case 'slider':
      return html`<input type="range" min=${props.min as number} max=${props.max as number} step=${props.step as number} value=${draft as number}
        onInput=${(e: Event) => setDraft(Number(input(e).value))} onChange=${(e: Event) => onValue(Number(input(e).value))} />
        <output>${String(draft)}</output>`;
    case 'number':
      return html`<input type="number" min=${props.min as number} max=${props.max as number} step=${props.step as number} value=${draft as number}
        onChange=${(e: Event) => onValue(Number(input(e).value))} />`;
    case 'text':
      return html`<input type="text" placeholder=${props.placeholder as string} value=${draft as string} onChange=${(e: Event) => onValue(input(e).value)} />`;
    case 'date':
      return html`<input type="date" value=${draft as string} onChange=${(e: Event) => onValue(input(e).value)} />`;
    case 'checkbox':
      return html`<input type="checkbox" checked=${Boolean(draft)} onChange=${(e: Event) => onValue(input(e).checked)} />`;
    case 'dropdown': {
      const options = (props.options as Array<string | number>) ?? [];
      return html`<select value=${String(draft)} onChange=${(e: Event) => {
        const chosen = options.find((o) => String(o) === (e.target as HTMLSelectElement).value);
        onValue(chosen ?? null);
      }}>${options.map((o) => html`<option value=${String(o)}>${String(o)}</option>`)}</select>`;
    }
    default:
      return html`<span class="muted">unknown control ${kind}</span>`;
  }
}

function Table({ payload, send }: { payload: UiPayload; send: Send }) {
  const rows = (payload.props.rows as Array<Record<string, unknown>>) ?? [];
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  // Kept here: the output is not redrawn when the value changes (that would take the focus).
  const [chosen, setChosen] = useState(payload.value as unknown[]);
  const selected = new Set(chosen.map((r) => JSON.stringify(r)));
  const single = payload.props.selection === 'single';
  const toggle = (row: Record<string, unknown>, on: boolean) => {
    const key = JSON.stringify(row);
    const next = single ? (on ? [row] : []) : rows.filter((r) => (JSON.stringify(r) === key ? on : selected.has(JSON.stringify(r))));
    setChosen(next);
    send(payload.id, next);
  };
  return html`<table class="ui-table">
    <thead><tr><th scope="col">Select</th>${columns.map((c) => html`<th scope="col">${c}</th>`)}</tr></thead>
    <tbody>${rows.map(
      (row, i) => html`<tr>
        <td><input type=${single ? 'radio' : 'checkbox'} name=${payload.id} aria-label=${`Select row ${i + 1}`} checked=${selected.has(JSON.stringify(row))}
          onChange=${(e: Event) => toggle(row, (e.target as HTMLInputElement).checked)} /></td>
        ${columns.map((c) => html`<td>${String(row[c] ?? '')}</td>`)}
      </tr>`,
    )}</tbody>
  </table>`;
}

function Form({ payload, send }: { payload: UiPayload; send: Send }) {
  const inner = payload.props.inner as { kind: string; props: Record<string, unknown> };
  const [draft, setDraft] = useState(payload.value);
  return html`<form class="ui-form" onSubmit=${(e: Event) => (e.preventDefault(), send(payload.id, draft))}>
    <label>${String(payload.props.label ?? '')} <${Field} kind=${inner.kind} props=${inner.props} value=${draft} onValue=${setDraft} /></label>
    <button type="submit" class="small">${String(payload.props.submit ?? 'Submit')}</button>
  </form>`;
}

/** A button whose value counts its clicks (counted here, as the output is not redrawn). */
function Clicks({ label, initial, onClick }: { label: string; initial: number; onClick: (n: number) => void }) {
  const [count, setCount] = useState(initial);
  return html`<button class="small" onClick=${() => (setCount(count + 1), onClick(count + 1))}>${label || 'Run'}</button>`;
}

export function UiControl({ payload, send }: { payload: UiPayload; send?: Send }) {
  const post: Send = send ?? (() => undefined);
  const label = String(payload.props.label ?? '');
  let control: unknown;
  if (payload.kind === 'button') {
    control = html`<${Clicks} label=${label} initial=${Number(payload.value ?? 0)} onClick=${(n: number) => post(payload.id, n)} />`;
  } else if (payload.kind === 'table') {
    control = html`<${Table} payload=${payload} send=${post} />`;
  } else if (payload.kind === 'form') {
    control = html`<${Form} payload=${payload} send=${post} />`;
  } else {
    control = html`<label>${label} <${Field} kind=${payload.kind} props=${payload.props} value=${payload.value} onValue=${(v: unknown) => post(payload.id, v)} /></label>`;
  }
  return html`<div class="ui-control" data-ui=${payload.kind} data-element=${payload.id}>${control}</div>`;
}

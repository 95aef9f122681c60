/**
 * Interactive elements, as marimo's `mo.ui` offers them: `ui.slider`, `ui.number`, `ui.text`,
 * `ui.dropdown`, `ui.checkbox`, `ui.button`, `ui.table`, `ui.date` and `ui.form`. This module runs
 * in the kernel (the `ui` global of every cell).
 *
 * How they work, marimo's way:
 * - A cell creates an element and keeps it in a variable (`const n = ui.slider({ min: 1, max: 10 })`);
 *   its output shows the control. Other cells read `n.value`.
 * - When the user changes the control, the server sets the element's value in the kernel and
 *   re-runs the cells downstream of the defining cell (those that read the variable) — not the
 *   defining cell itself, so the element keeps its identity.
 * - An element's id is `<cell id>:<n>`, its order of creation in that cell's run. The session keeps
 *   every id's last value and hands it back when the cell runs again, so values survive a re-run
 *   of the defining cell and a page reload.
 *
 * The output is a MIME bundle of our own type, `application/vnd.hangar.ui+json` ({id, kind, props,
 * value}), which the notebook view draws as a native control (keyboard accessible as the browser
 * makes it); plain text and static HTML come along for exports and other front ends.
 */
import { escapeHtml, JUPYTER_DISPLAY } from './render.js';

export const UI_MIME = 'application/vnd.hangar.ui+json';

export type UiKind = 'slider' | 'number' | 'text' | 'dropdown' | 'checkbox' | 'button' | 'table' | 'date' | 'form';

export class UiElement<T = unknown> {
  constructor(
    readonly id: string,
    readonly kind: UiKind,
    readonly props: Record<string, unknown>,
    public value: T,
  ) {}

  [JUPYTER_DISPLAY]() {
    const label = typeof this.props.label === 'string' ? this.props.label : this.kind;
    return {
      [UI_MIME]: { id: this.id, kind: this.kind, props: this.props, value: this.value },
      'text/plain': `${label}: ${JSON.stringify(this.value)}`,
      // Exports have no kernel: a disabled control shows the value the notebook had.
      'text/html': `<label class="ui-static">${escapeHtml(label)} <output>${escapeHtml(JSON.stringify(this.value) ?? '')}</output></label>`,
    };
  }

  toJSON() {
    return this.value;
  }
}

/** Where elements of the running cell get their ids and restored values. */
export interface UiContext {
  cellId(): string | undefined;
  /** The value the user last gave this element id, if any. */
  saved(id: string): unknown;
  register(element: UiElement): void;
}

type Common = { label?: string };

export function createUi(context: UiContext) {
  let counter = 0;
  let counting: string | undefined;
  const make = <T>(kind: UiKind, props: Record<string, unknown>, initial: T): UiElement<T> => {
    const cell = context.cellId() ?? 'detached';
    if (counting !== cell) {
      counting = cell;
      counter = 0;
    }
    const id = `${cell}:${counter++}`;
    const saved = context.saved(id);
    const element = new UiElement<T>(id, kind, props, saved === undefined ? initial : (saved as T));
    context.register(element);
    return element;
  };
  return {
    /** A new cell run starts numbering again (called by the kernel before each run). */
    reset() {
      counting = undefined;
    },
    slider: (o: Common & { min?: number; max?: number; step?: number; value?: number } = {}) => {
      const min = o.min ?? 0;
      const max = o.max ?? 100;
      return make('slider', { label: o.label, min, max, step: o.step ?? 1 }, o.value ?? min);
    },
    number: (o: Common & { min?: number; max?: number; step?: number; value?: number } = {}) =>
      make('number', { label: o.label, min: o.min, max: o.max, step: o.step ?? 1 }, o.value ?? o.min ?? 0),
    text: (o: Common & { value?: string; placeholder?: string } = {}) =>
      make('text', { label: o.label, placeholder: o.placeholder ?? '' }, o.value ?? ''),
    dropdown: (o: Common & { options: Array<string | number>; value?: string | number }) =>
      make('dropdown', { label: o.label, options: o.options }, o.value ?? o.options[0] ?? null),
    checkbox: (o: Common & { value?: boolean } = {}) => make('checkbox', { label: o.label }, o.value ?? false),
    /** Its value counts the clicks, so a cell that reads it re-runs on each click. */
    button: (o: Common = {}) => make('button', { label: o.label ?? 'Run' }, 0),
    /** Rows are plain objects; the value is the selected rows (checkboxes, one per row). */
    table: (rows: Array<Record<string, unknown>>, o: Common & { selection?: 'multi' | 'single' } = {}) =>
      make('table', { label: o.label, rows: rows.slice(0, 500), selection: o.selection ?? 'multi' }, [] as unknown[]),
    date: (o: Common & { value?: string } = {}) => make('date', { label: o.label }, o.value ?? new Date().toISOString().slice(0, 10)),
    /** Wraps an element: its value changes only when the form is submitted. */
    form: (inner: UiElement, o: Common & { submit?: string } = {}) =>
      make(
        'form',
        { label: o.label ?? inner.props.label, inner: { kind: inner.kind, props: inner.props }, submit: o.submit ?? 'Submit' },
        inner.value,
      ),
  };
}

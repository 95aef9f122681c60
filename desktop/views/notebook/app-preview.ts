/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { Output } from '../../../core/notebook/schemas.js';
import { type AppCell, arrangeApp, type Layout } from './app-layout.js';
import { Outputs, renderMarkdown } from './outputs.js';

/**
 * The notebook as an app: outputs and prose only, in one of the five layouts. Interactive elements
 * stay live (`onUi`), as in `notebook app`: a change re-runs the cells that read the element.
 */
type Cell = AppCell & { outputs: Output[] };
type OnUi = (elementId: string, value: unknown) => void;

function Block({ cell, onUi }: { cell: Cell; onUi?: OnUi }) {
  return cell.cell_type === 'markdown'
    ? html`<section class="app-cell markdown" dangerouslySetInnerHTML=${{ __html: renderMarkdown(cell.source) }}></section>`
    : html`<section class="app-cell" data-cell=${cell.id}><${Outputs} outputs=${cell.outputs} onUiChange=${onUi} /></section>`;
}

export function AppPreview({ cells, layout, onUi }: { cells: Cell[]; layout: Layout; onUi?: OnUi }) {
  const [tab, setTab] = useState(0);
  const { sidebar, main, titles } = arrangeApp(cells, layout);
  if (main.length + sidebar.length === 0) return html`<p class="muted">Nothing to show yet: run the notebook to produce outputs.</p>`;
  if (layout === 'tabs') {
    const current = Math.min(tab, main.length - 1);
    // Arrow keys move between tabs (WAI-ARIA tabs pattern); only the selected tab is in the tab order.
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
      const next = (current + (e.key === 'ArrowRight' ? 1 : main.length - 1)) % main.length;
      setTab(next);
      (e.currentTarget as HTMLElement).querySelectorAll<HTMLElement>('[role="tab"]')[next]?.focus();
    };
    return html`<div class="app layout-tabs" data-testid="app-preview">
      <div class="app-tabs" role="tablist" aria-label="Notebook sections" onKeyDown=${onKey}>
        ${titles.map(
          (title, i) =>
            html`<button role="tab" id=${`app-tab-${i}`} aria-selected=${i === current} aria-controls="app-tabpanel" tabindex=${i === current ? 0 : -1} onClick=${() => setTab(i)}>${title}</button>`,
        )}
      </div>
      <div id="app-tabpanel" role="tabpanel" aria-labelledby=${`app-tab-${current}`}><${Block} cell=${main[current]!} onUi=${onUi} /></div>
    </div>`;
  }
  if (layout === 'sidebar') {
    return html`<div class="app layout-sidebar" data-testid="app-preview">
      <aside>${sidebar.map((c) => html`<${Block} cell=${c} key=${c.id} onUi=${onUi} />`)}</aside>
      <div class="app-main">${main.map((c) => html`<${Block} cell=${c} key=${c.id} onUi=${onUi} />`)}</div>
    </div>`;
  }
  return html`<div class=${`app layout-${layout}`} data-testid="app-preview">${main.map((c) => html`<${Block} cell=${c} key=${c.id} onUi=${onUi} />`)}</div>`;
}

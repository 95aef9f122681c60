/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { CellState, Cell as StoredCell } from '../../../core/notebook/schemas.js';
import type { DependencyReport, SessionEvent } from '../../../core/notebook/session.js';
import { ApiError, getJson, postJson, request } from '../api.js';
import { connectLive, type LiveState } from '../live.js';
import { href } from '../router.js';
import { LAYOUTS, type Layout } from './app-layout.js';
import { AppPreview } from './app-preview.js';
import { type DiskConflict, DiskConflictBanner } from './disk-conflict.js';
import { CodeEditor } from './editor.js';
import { Outputs, renderMarkdown } from './outputs.js';
import { ToolsPanel } from './tools-panel.js';

type CellProblem = DependencyReport['cells'][number]['problems'][number];

/**
 * The notebook editor on /api/notebooks: cells with a code editor, run (the cell and, reactively,
 * every cell that depends on it), stale marks on cells whose inputs changed, rich outputs, and the
 * dependency view, and the tools panel. States and outputs arrive over the notebook's ws channel
 * while cells run.
 */

/** A cell as the session answers it: the stored cell, its run state, and whether its outputs are the file's (an earlier run). */
type Cell = StoredCell & { state: CellState; stale_outputs?: boolean };

function staleTitle(cell: Cell): string {
  if (cell.stale_outputs) return 'these outputs were saved by an earlier run: run the cell to update them';
  return cell.state === 'stale' ? 'an input changed since this cell ran: run it to update' : '';
}

interface NotebookDoc {
  id: string;
  name: string;
  kernel_generation: number;
  cells: Cell[];
}

/** GET /dependencies, or why it could not be fetched. */
type Dependencies = DependencyReport & { error?: string };

/** What the notebook's ws channel sends: the current states on connecting, then the session's events. */
type NotebookEvent = { type: 'hello'; cells: { id: string; state: CellState }[] } | SessionEvent;

const STATE_LABEL: Record<CellState, string> = {
  idle: 'not run',
  queued: 'queued',
  running: 'running',
  success: 'ok',
  error: 'error',
  stale: 'stale',
};
const SAVE_DELAY_MS = 400;

function NotebookList() {
  const [notebooks, setNotebooks] = useState<{ id: string; name: string; format: string; modified: string }[] | null>(null);
  const [name, setName] = useState('');
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    getJson<{ notebooks: typeof notebooks & object }>('/api/notebooks').then(
      (r) => setNotebooks(r.notebooks),
      (err: unknown) => setError(String(err)),
    );
  }, []);
  const create = async (e: Event) => {
    e.preventDefault();
    try {
      const doc = await postJson<NotebookDoc>('/api/notebooks', { name: name.trim() || 'untitled', cells: [{ source: '' }] });
      location.hash = href('notebook', doc.id);
    } catch (err) {
      setError(err instanceof ApiError ? String(err.detail) : String(err));
    }
  };
  return html`<div>
    ${
      notebooks === null
        ? html`<p class="muted">Loading…</p>`
        : notebooks.length === 0
          ? html`<p class="muted">No notebooks yet in <code>notebooks/</code>.</p>`
          : html`<ul class="agent-grid">
            ${notebooks.map(
              (nb) =>
                html`<li class="card"><h2><a href=${href('notebook', nb.id)}>${nb.name}</a></h2><p class="muted mono">${nb.id}</p></li>`,
            )}
          </ul>`
    }
    <form class="card inline-form" onSubmit=${create}>
      <label>New notebook <input value=${name} placeholder="name" onInput=${(e: Event) => setName((e.target as HTMLInputElement).value)} /></label>
      <button class="primary" type="submit">Create</button>
    </form>
    ${error && html`<p class="alert" role="alert">${error}</p>`}
  </div>`;
}

function CellView({
  cell,
  index,
  count,
  onSource,
  onRun,
  onDelete,
  onMove,
  onRename,
  onUi,
  problems,
  onFix,
}: {
  cell: Cell;
  index: number;
  count: number;
  onSource: (source: string) => void;
  onRun: () => void;
  onDelete: () => void;
  onMove: (delta: number) => void;
  onRename: (name: string) => void;
  onUi: (elementId: string, value: unknown) => void;
  /** This cell's analysis problems (GET /dependencies); those with fixes get their buttons. */
  problems: CellProblem[];
  onFix: (name: string, action: string) => void;
}) {
  const [editingMarkdown, setEditingMarkdown] = useState(cell.source === '');
  const label = cell.name || `cell ${index + 1}`;
  const markdown = cell.cell_type === 'markdown';
  return html`<li class=${`cell ${cell.cell_type}`} data-state=${cell.state} data-cell=${cell.id} aria-label=${label}>
    <div class="cell-bar">
      <span class=${`cell-state ${cell.state}`} title=${staleTitle(cell)}>${markdown ? 'markdown' : STATE_LABEL[cell.state]}</span>
      ${!markdown && html`<span class="muted mono">[${cell.execution_count || ' '}]</span>`}
      <input class="cell-name" aria-label="Cell name" value=${cell.name} placeholder="name" onChange=${(e: Event) => onRename((e.target as HTMLInputElement).value)} />
      <span class="cell-actions">
        ${
          markdown
            ? html`<button class="small" onClick=${() => setEditingMarkdown(!editingMarkdown)}>${editingMarkdown ? 'Done' : 'Edit'}</button>`
            : html`<button class="small primary" aria-label=${`Run ${label}`} onClick=${onRun}>Run</button>`
        }
        <button class="small" aria-label=${`Move ${label} up`} disabled=${index === 0} onClick=${() => onMove(-1)}>↑</button>
        <button class="small" aria-label=${`Move ${label} down`} disabled=${index === count - 1} onClick=${() => onMove(1)}>↓</button>
        <button class="small danger" aria-label=${`Delete ${label}`} onClick=${onDelete}>✕</button>
      </span>
    </div>
    ${
      markdown && !editingMarkdown
        ? html`<div class="markdown" onDblClick=${() => setEditingMarkdown(true)} dangerouslySetInnerHTML=${{ __html: renderMarkdown(cell.source) }}></div>`
        : html`<${CodeEditor}
          value=${cell.source}
          language=${markdown ? 'markdown' : 'javascript'}
          label=${`Source of ${label}`}
          onChange=${onSource}
          onRun=${markdown ? () => setEditingMarkdown(false) : onRun}
        />`
    }
    ${cell.stale_outputs && cell.outputs.length > 0 && html`<p class="stale-note" role="note">stale: outputs from an earlier run</p>`}
    <${Outputs} outputs=${cell.outputs} onUiChange=${onUi} />
    ${problems
      .filter((p) => p.fixes?.length)
      .map(
        (p) => html`<div class="cell-fixes" role="group" aria-label=${`Fixes for ${p.name}`}>
          <span class="muted">Fix <code>${p.name}</code>:</span>
          ${p.fixes!.map((f) => html`<button class="small" onClick=${() => onFix(p.name!, f.action)}>${f.label.replace(/`/g, '')}</button>`)}
        </div>`,
      )}
  </li>`;
}

function DependencyView({ deps, cells }: { deps: Dependencies | null; cells: Cell[] }) {
  if (!deps) return html`<p class="muted">Analysing…</p>`;
  if (deps.error) return html`<p class="alert">Dependencies unavailable: ${deps.error}</p>`;
  const nameOf = (id: string) => {
    const i = cells.findIndex((c) => c.id === id);
    return cells[i]?.name || `cell ${i + 1}`;
  };
  return html`<div data-testid="dependencies">
    ${deps.cycles.length > 0 && html`<p class="alert">Cycle: ${deps.cycles.map((c) => c.map(nameOf).join(' → ')).join('; ')}</p>`}
    ${
      deps.edges.length === 0
        ? html`<p class="muted">No cell reads what another defines.</p>`
        : html`<ul class="plain deps">
          ${deps.edges.map((e) => html`<li><strong>${nameOf(e.from)}</strong> → <strong>${nameOf(e.to)}</strong> <small class="muted mono">${e.names.join(', ')}</small></li>`)}
        </ul>`
    }
    <h3>Defines</h3>
    <ul class="plain deps">
      ${deps.cells.filter((c) => c.writes.length).map((c) => html`<li>${nameOf(c.id)}: <span class="mono">${c.writes.join(', ')}</span></li>`)}
    </ul>
  </div>`;
}

function NotebookEditor({ id }: { id: string }) {
  const base = `/api/notebooks/${encodeURIComponent(id)}`;
  const [doc, setDoc] = useState<NotebookDoc | null>(null);
  const [deps, setDeps] = useState<Dependencies | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [live, setLive] = useState<LiveState>('connecting');
  const [notice, setNotice] = useState<string | null>(null);
  const [conflict, setConflict] = useState<DiskConflict | null>(null);
  const [version, setVersion] = useState(0);
  const [mode, setMode] = useState<'edit' | 'app'>('edit');
  const [layout, setLayout] = useState<Layout>('linear');
  const pending = useRef(new Map<string, { source: string; timer: number }>());
  /**
   * The newest source typed here per cell, until the server's copy shows it. A reload that was
   * answered before a save landed must not put the older text back (and then save that).
   */
  const local = useRef(new Map<string, string>());
  /**
   * Per cell typed here, the server's source the typing started from, sent with the edit: if a
   * reload from disk changed the cell before the edit arrived, the server keeps the edit and makes
   * the next save show the conflict instead of overwriting the disk's edit.
   */
  const origin = useRef(new Map<string, string>());
  /** The server's sources are the truth again (after a reload, merge or fix it was sent everything typed). */
  const forgetTyped = () => {
    local.current.clear();
    origin.current.clear();
  };
  /**
   * Live events so far, and the number of the newest per cell. A reload answered before some of a
   * cell's events (an edit's `cells-changed` reload racing the run it started) must not put that
   * cell's older outputs and state back: the events are newer than the server's answer.
   */
  const liveEvents = useRef(0);
  const lastEvent = useRef(new Map<string, number>());

  const reload = async () => {
    const asked = liveEvents.current;
    try {
      const fresh = await getJson<NotebookDoc>(base);
      // A link without the suffix (`#/notebook/sales`) opened `sales.nb.ts`: show the file's own link.
      if (fresh.id !== id) history.replaceState(null, '', href('notebook', fresh.id));
      // Keep what was typed here until the server has it; then its copy is the truth again.
      for (const cell of fresh.cells) {
        const typed = local.current.get(cell.id);
        if (typed === undefined) continue;
        if (typed === cell.source && !pending.current.has(cell.id)) {
          local.current.delete(cell.id);
          origin.current.delete(cell.id);
        } else cell.source = typed;
      }
      setDoc((current) => {
        if (!current) return fresh;
        const cells = fresh.cells.map((cell) => {
          const shown = current.cells.find((c) => c.id === cell.id);
          if (!shown || (lastEvent.current.get(cell.id) ?? 0) <= asked) return cell;
          return {
            ...cell,
            outputs: shown.outputs,
            state: shown.state,
            execution_count: Math.max(cell.execution_count, shown.execution_count),
          };
        });
        return { ...fresh, cells };
      });
      setError(null);
    } catch (err) {
      setError(err instanceof ApiError ? `${err.status}: ${String(err.detail)}` : String(err));
    }
  };

  useEffect(() => {
    void reload();
    return connectLive<NotebookEvent>({
      path: `/api/notebooks/ws?notebook=${encodeURIComponent(id)}`,
      onState: setLive,
      onMessage: (event) => {
        const patch = (cellId: string, change: (cell: Cell) => Cell) => {
          lastEvent.current.set(cellId, ++liveEvents.current);
          setDoc((d) => (d ? { ...d, cells: d.cells.map((c) => (c.id === cellId ? change(c) : c)) } : d));
        };
        switch (event.type) {
          case 'hello':
            setDoc((d) =>
              d ? { ...d, cells: d.cells.map((c) => ({ ...c, state: event.cells.find((s) => s.id === c.id)?.state ?? c.state })) } : d,
            );
            break;
          case 'cell-state':
            patch(event.cellId, (c) => ({ ...c, state: event.state, execution_count: event.execution_count ?? c.execution_count }));
            // A finished cell changes what is stale and its execution count: refresh both.
            if (event.state === 'success' || event.state === 'error' || event.state === 'stale') setVersion((v) => v + 1);
            break;
          case 'output':
            patch(event.cellId, (c) => ({ ...c, outputs: [...c.outputs, event.output] }));
            break;
          case 'outputs-cleared':
            // Cleared for a run here: whatever follows is current, no longer the file's.
            patch(event.cellId, (c) => ({ ...c, outputs: [], stale_outputs: false }));
            break;
          case 'cells-changed':
            void reload();
            break;
          case 'disk-changed':
            // Shown already (a refused save, a merge's cells to pick): the diff is the new one and
            // the rest stays, picks included; the merge is checked against the disk again when sent.
            setConflict((shown) => (shown ? { ...shown, diff: event.diff } : { diff: event.diff, why: 'disk' }));
            break;
          case 'reloaded':
            setConflict(null);
            setNotice(`Reloaded from disk${event.rerun.length ? `; re-running ${event.rerun.length} changed cell(s)` : ''}.`);
            void reload();
            break;
          case 'kernel':
            setNotice(`Kernel ${event.status}${event.status === 'restarted' ? '' : ': the kernel was restarted'}.`);
            void reload();
            break;
        }
      },
    });
  }, [id]);

  useEffect(() => {
    const timer = setTimeout(
      () =>
        getJson<Dependencies>(`${base}/dependencies`).then(setDeps, (err: unknown) =>
          setDeps({ cells: [], edges: [], order: [], stale: [], cycles: [], error: String(err) }),
        ),
      150,
    );
    return () => clearTimeout(timer);
  }, [base, version, doc?.cells.length]);

  const flush = async (cellId: string) => {
    const draft = pending.current.get(cellId);
    if (!draft) return;
    clearTimeout(draft.timer);
    pending.current.delete(cellId);
    await request('PATCH', `${base}/cells/${cellId}`, { source: draft.source, base_source: origin.current.get(cellId) });
    origin.current.set(cellId, draft.source);
    setVersion((v) => v + 1);
  };
  const onSource = (cellId: string, source: string) => {
    const previous = pending.current.get(cellId);
    if (previous) clearTimeout(previous.timer);
    // Saved shortly after typing stops; the server then marks dependent cells stale.
    const timer = window.setTimeout(() => void flush(cellId).catch((err: unknown) => setError(String(err))), SAVE_DELAY_MS);
    pending.current.set(cellId, { source, timer });
    if (!origin.current.has(cellId)) origin.current.set(cellId, doc?.cells.find((c) => c.id === cellId)?.source ?? '');
    local.current.set(cellId, source);
    setDoc((d) => (d ? { ...d, cells: d.cells.map((c) => (c.id === cellId ? { ...c, source } : c)) } : d));
  };
  const act = async (action: () => Promise<unknown>) => {
    try {
      for (const cellId of [...pending.current.keys()]) await flush(cellId);
      await action();
    } catch (err) {
      setError(err instanceof ApiError ? `${err.status}: ${String(err.detail)}` : String(err));
    }
  };
  const runCell = (cellId: string) => act(() => request('POST', `${base}/cells/${cellId}/run?wait=false`));
  const add = (cell_type: 'code' | 'markdown') => act(async () => (await request('POST', `${base}/cells`, { cell_type }), reload()));
  const move = (cellId: string, delta: number) =>
    act(async () => {
      const order = doc!.cells.map((c) => c.id);
      const i = order.indexOf(cellId);
      [order[i], order[i + delta]] = [order[i + delta]!, order[i]!];
      await request('PUT', `${base}/order`, { order });
      await reload();
    });

  const save = (force: boolean) =>
    act(async () => {
      try {
        await request('POST', `${base}/save${force ? '?force=true' : ''}`);
        setConflict(null);
        setNotice('Saved.');
      } catch (err) {
        if (!(err instanceof ApiError) || err.body.code !== 'HANGAR_NOTEBOOK_SAVE_CONFLICT') throw err;
        setConflict({ diff: String(err.body.diff ?? ''), why: 'save' });
      }
    });
  /**
   * Merge with the file on disk and save: the server takes the disk's edits to cells not edited
   * here. Cells edited on both sides come back as conflicts for the banner to show side by side.
   */
  const merge = (resolutions: Record<string, 'ours' | 'theirs'>) =>
    act(async () => {
      try {
        const answer = await request<{ from_disk: string[] }>('POST', `${base}/save`, { strategy: 'merge', resolutions });
        // Everything typed was sent first (act); the merged sources on the server are the truth now.
        forgetTyped();
        setConflict(null);
        setNotice(
          `Merged with the file on disk and saved${answer.from_disk.length ? ` (${answer.from_disk.length} cell(s) from disk)` : ''}.`,
        );
        await reload();
      } catch (err) {
        if (!(err instanceof ApiError) || err.body.code !== 'HANGAR_NOTEBOOK_MERGE_CONFLICT') throw err;
        const { diff, conflicts } = err.body as { diff?: string; conflicts: DiskConflict['conflicts'] };
        setConflict((c) => ({ diff: String(diff ?? c?.diff ?? ''), why: c?.why ?? 'save', conflicts }));
      }
    });
  // An interactive element changed: the server keeps the value and re-runs the cells that read it.
  const setUi = (elementId: string, value: unknown) =>
    void act(() => request('POST', `${base}/ui/${encodeURIComponent(elementId)}?wait=false`, { value }));
  // A problem's one-click fix: the server edits the cells and runs what is stale (outputs follow over ws).
  const applyFix = (cellId: string, name: string, action: string) =>
    act(async () => {
      await request('POST', `${base}/cells/${cellId}/fix?wait=false`, { name, action });
      // Everything typed was sent before the fix (act); the server's sources are the truth now.
      forgetTyped();
      setVersion((v) => v + 1);
      await reload();
    });
  const reloadFromDisk = () =>
    act(async () => {
      // act() has sent what was typed; the disk version replaces it, so nothing typed is kept.
      forgetTyped();
      await request('POST', `${base}/reload`);
      setConflict(null);
      setNotice('Reloaded from disk.');
      await reload();
    });

  if (error && !doc) return html`<p class="alert" role="alert">${error}</p>`;
  if (!doc) return html`<p class="muted">Opening…</p>`;
  const stale = doc.cells.filter((c) => c.state === 'stale').length;
  const variables = [...new Set((deps?.cells ?? []).flatMap((c) => c.writes))].sort();
  return html`<div class="notebook-grid">
    <div>
      <div class="toolbar" role="toolbar" aria-label="Notebook">
        <button class="primary" onClick=${() => act(() => request('POST', `${base}/run?wait=false`))}>Run all</button>
        <button disabled=${stale === 0} onClick=${() => act(() => request('POST', `${base}/run-stale?wait=false`))}>Run stale${stale ? ` (${stale})` : ''}</button>
        <button onClick=${() => act(() => request('POST', `${base}/interrupt`))}>Interrupt</button>
        <button onClick=${() => act(() => request('POST', `${base}/restart`))}>Restart</button>
        <button onClick=${() => void save(false)}>Save</button>
        <button onClick=${() => add('code')}>+ Code</button>
        <button onClick=${() => add('markdown')}>+ Markdown</button>
        <span class="mode" role="group" aria-label="Mode">
          <button aria-pressed=${mode === 'edit'} onClick=${() => setMode('edit')}>Edit</button>
          <button aria-pressed=${mode === 'app'} onClick=${() => setMode('app')}>App preview</button>
        </span>
        ${
          mode === 'app' &&
          html`<label>Layout <select value=${layout} onChange=${(e: Event) => setLayout((e.target as HTMLSelectElement).value as Layout)}>
          ${LAYOUTS.map((l) => html`<option value=${l}>${l}</option>`)}
        </select></label>`
        }
        <span class=${`live ${live}`} role="status">${live === 'live' ? 'kernel connected' : live}</span>
      </div>
      ${notice && html`<p class="notice" role="status">${notice}</p>`}
      ${
        conflict &&
        html`<${DiskConflictBanner}
          conflict=${conflict}
          onReload=${() => void reloadFromDisk()}
          onOverwrite=${() => void save(true)}
          onMerge=${(resolutions: Record<string, 'ours' | 'theirs'>) => void merge(resolutions)}
          label=${(cellId: string) => {
            const at = doc.cells.findIndex((c) => c.id === cellId);
            return doc.cells[at]?.name || (at >= 0 ? `cell ${at + 1}` : `cell ${cellId} (not in this notebook)`);
          }}
          onDismiss=${() => setConflict(null)}
        />`
      }
      ${error && html`<p class="alert" role="alert">${error}</p>`}
      ${
        mode === 'app'
          ? html`<${AppPreview} cells=${doc.cells} layout=${layout} onUi=${setUi} />`
          : html`<ol class="cells" aria-label="Cells">
        ${doc.cells.map(
          (cell, index) => html`<${CellView}
            key=${cell.id}
            cell=${cell}
            index=${index}
            count=${doc.cells.length}
            onSource=${(source: string) => onSource(cell.id, source)}
            onRun=${() => void runCell(cell.id)}
            onDelete=${() => act(async () => (await request('DELETE', `${base}/cells/${cell.id}`), reload()))}
            onMove=${(delta: number) => void move(cell.id, delta)}
            onRename=${(name: string) => act(async () => (await request('PATCH', `${base}/cells/${cell.id}`, { name }), reload()))}
            onUi=${setUi}
            problems=${deps?.cells.find((c) => c.id === cell.id)?.problems ?? []}
            onFix=${(name: string, action: string) => void applyFix(cell.id, name, action)}
          />`,
        )}
      </ol>`
      }
    </div>
    <div class="side-panels">
      <aside class="card" aria-labelledby="deps-title">
        <h2 id="deps-title">Dependencies</h2>
        <${DependencyView} deps=${deps} cells=${doc.cells} />
      </aside>
      <aside class="card" aria-labelledby="tools-title">
        <h2 id="tools-title">Tools</h2>
        <${ToolsPanel} notebook=${id} variables=${variables} onInserted=${reload} />
      </aside>
    </div>
  </div>`;
}

export function NotebookView({ id }: { id?: string }) {
  return html`<section class="view notebook-view" aria-labelledby="notebook-title">
    <h1 id="notebook-title" tabindex="-1">${id ? `Notebook · ${id}` : 'Notebooks'}</h1>
    ${id ? html`<${NotebookEditor} id=${id} key=${id} />` : html`<${NotebookList} />`}
  </section>`;
}

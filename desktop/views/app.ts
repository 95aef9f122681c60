/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { LiveMessage, TaskMessage } from '../../core/ui/events.js';
import type { WorkspaceSnapshot } from '../../core/ui/workspace.js';
import { codeSession, getJson, loginProblem, onUnauthorized, setBrowserToken } from './api.js';
import { EndpointsView } from './endpoints/index.js';
import { connectLive, type LiveState } from './live.js';
import { NotebookView } from './notebook/index.js';
import { PipelinesView } from './pipelines/index.js';
import { PluginsView } from './plugins/index.js';
import { href, useRoute } from './router.js';
import { CodeRunView } from './runs/index.js';
import { StatusView } from './status.js';
import { StudioView } from './studio/index.js';
import { type ThemeChoice, useTheme } from './theme.js';

/** The frame of every view: header, workspace sidebar (live), the current view, connection state. */

const KIND_LABELS: Record<string, string> = {
  agent: 'Agents',
  endpoint: 'Endpoints',
  plugin: 'Plugins',
  ingestor: 'Ingestors',
  pipeline: 'Pipelines',
  notebook: 'Notebooks',
  run: 'Runs',
  team: 'Teams',
};

const VIEWS = [
  { view: 'status', label: 'Status' },
  { view: 'studio', label: 'Studio' },
  { view: 'endpoints', label: 'Endpoints' },
  { view: 'plugins', label: 'Plugins', also: ['ingestors'] },
  { view: 'pipelines', label: 'Pipelines' },
  { view: 'notebook', label: 'Notebooks' },
  { view: 'runs', label: 'Runs', also: ['teams', 'settings'] },
];

/** Where a sidebar item leads, by kind (kinds without a view are listed, not linked). */
const ITEM_VIEW: Record<string, string> = {
  agent: 'studio',
  endpoint: 'endpoints',
  plugin: 'plugins',
  ingestor: 'ingestors',
  pipeline: 'pipelines',
  notebook: 'notebook',
  run: 'runs',
  team: 'teams',
};

/**
 * Notebooks and coding runs are not registry drop-ins: they come from their own routes and are
 * merged into the sidebar's sections. Refreshed with every workspace update and view change.
 */
async function extraItems(): Promise<Record<string, WorkspaceSnapshot['kinds'][string]>> {
  const item = (name: string, file: string, description: string | null = null) => ({ name, file, version: '', loadedAt: '', description });
  // Runs need the coding-run session token; without one the section stays empty (no 401 noise).
  const session = await codeSession();
  const [notebooks, runs] = await Promise.all([
    getJson<{ notebooks: { id: string; name: string }[] }>('/api/notebooks').then(
      (r) => r.notebooks.map((n) => item(n.id, `notebooks/${n.id}`, n.name)),
      () => null,
    ),
    session
      ? getJson<{ runs: { id: string; request: string; status: string }[] }>('/api/runs').then(
          (r) => r.runs.slice(0, 20).map((run) => item(run.id, run.status, run.request)),
          () => null,
        )
      : null,
  ]);
  const extra: Record<string, WorkspaceSnapshot['kinds'][string]> = {};
  if (notebooks) extra.notebook = notebooks;
  if (runs) extra.run = runs;
  return extra;
}

/** ↑/↓ move between the links of a list, Home/End jump to its ends (WAI-ARIA listbox habits). */
function arrowKeys(event: KeyboardEvent): void {
  if (!['ArrowDown', 'ArrowUp', 'Home', 'End'].includes(event.key)) return;
  const container = event.currentTarget as HTMLElement;
  const links = Array.from(container.querySelectorAll<HTMLElement>('a[href], button:not([disabled])'));
  const index = links.indexOf(document.activeElement as HTMLElement);
  if (index < 0) return;
  event.preventDefault();
  const next = event.key === 'Home' ? 0 : event.key === 'End' ? links.length - 1 : index + (event.key === 'ArrowDown' ? 1 : -1);
  links[Math.max(0, Math.min(links.length - 1, next))]?.focus();
}

function Sidebar({ workspace, current }: { workspace: WorkspaceSnapshot | null; current: string }) {
  if (!workspace) return html`<p class="muted pad">Loading workspace…</p>`;
  const problemsByKind = new Map<string, number>();
  for (const p of workspace.problems) problemsByKind.set(p.kind, (problemsByKind.get(p.kind) ?? 0) + 1);
  return html`<div onKeyDown=${arrowKeys}>
    ${Object.entries(workspace.kinds).map(([kind, items]) => {
      const id = `side-${kind}`;
      const problems = problemsByKind.get(kind) ?? 0;
      return html`<section class="side-section" aria-labelledby=${id} data-kind=${kind}>
        <h2 id=${id}>
          ${KIND_LABELS[kind] ?? kind} <span class="count" aria-label=${`${items.length} loaded`}>${items.length}</span>
          ${problems > 0 && html`<a class="badge error" href=${href('status')} title="Broken drop-ins: see Status">${problems} broken</a>`}
        </h2>
        ${
          items.length === 0
            ? html`<p class="muted empty">none</p>`
            : html`<ul>
              ${items.map((item) =>
                ITEM_VIEW[kind]
                  ? html`<li>
                      <a href=${href(ITEM_VIEW[kind]!, item.name)} aria-current=${current === item.name ? 'page' : undefined} title=${item.description ?? item.file}
                        >${kind === 'notebook' ? (item.description ?? item.name) : item.name}</a
                      >
                    </li>`
                  : html`<li><span class="item" title=${item.file}>${item.name}</span></li>`,
              )}
            </ul>`
        }
      </section>`;
    })}
  </div>`;
}

function TokenPrompt({ onDone }: { onDone: () => void }) {
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  return html`<form
    class="token-prompt card"
    onSubmit=${(e: Event) => {
      e.preventDefault();
      if (input.current?.value) {
        setBrowserToken(input.current.value.trim());
        onDone();
      }
    }}
  >
    <h2>This server needs an API token</h2>
    <p class="muted">It is kept for this tab only (sessionStorage) and sent as a bearer token.</p>
    <label>API token <input ref=${input} type="password" autocomplete="off" required /></label>
    <button type="submit">Use token</button>
  </form>`;
}

export function App() {
  const route = useRoute();
  const [theme, setTheme] = useTheme();
  const [workspace, setWorkspace] = useState<WorkspaceSnapshot | null>(null);
  const [taskChange, setTaskChange] = useState<TaskMessage | null>(null);
  const [live, setLive] = useState<LiveState>('connecting');
  const [needsToken, setNeedsToken] = useState(false);
  const [generation, setGeneration] = useState(0);
  const [extra, setExtra] = useState<Record<string, WorkspaceSnapshot['kinds'][string]>>({});
  const main = useRef<HTMLElement>(null);
  const [loginIssue, setLoginIssue] = useState<string | null>(null);

  useEffect(() => onUnauthorized(() => setNeedsToken(true)), []);
  useEffect(() => void loginProblem().then(setLoginIssue), []);
  useEffect(
    () =>
      connectLive<LiveMessage>({
        // Team mode also sends tasks changed on any instance; the board merges them in.
        onMessage: (message) => (message.type === 'task' ? setTaskChange(message) : setWorkspace(message.workspace)),
        onState: setLive,
      }),
    [generation],
  );
  useEffect(() => {
    let cancelled = false;
    void extraItems().then((items) => !cancelled && setExtra(items));
    return () => {
      cancelled = true;
    };
  }, [workspace, route.view, route.params[0], generation]);
  // Moving to another view puts keyboard focus on its heading, as a page load would.
  useEffect(() => main.current?.querySelector<HTMLElement>('h1')?.focus(), [route.view, route.params[0]]);

  const view =
    route.view === 'studio'
      ? html`<${StudioView} agent=${route.params[0]} workspace=${workspace} key=${generation} />`
      : route.view === 'notebook'
        ? html`<${NotebookView} id=${route.params[0]} key=${`${generation}:${route.params[0] ?? ''}`} />`
        : route.view === 'endpoints'
          ? html`<${EndpointsView} name=${route.params[0]} workspace=${workspace} key=${generation} />`
          : route.view === 'plugins' || route.view === 'ingestors'
            ? html`<${PluginsView} view=${route.view} name=${route.params[0]} workspace=${workspace} key=${generation} />`
            : route.view === 'pipelines'
              ? html`<${PipelinesView} name=${route.params[0]} workspace=${workspace} key=${generation} />`
              : ['runs', 'teams', 'settings'].includes(route.view)
                ? html`<${CodeRunView} view=${route.view} id=${route.params[0]} key=${generation} />`
                : html`<${StatusView} workspace=${workspace} taskChange=${taskChange} key=${generation} />`;
  const shown = workspace
    ? {
        ...workspace,
        kinds: { ...workspace.kinds, ...Object.fromEntries(Object.entries(extra).filter(([k]) => !workspace.kinds[k]?.length)) },
      }
    : null;

  return html`
    <a class="skip" href="#main" onClick=${(e: Event) => (e.preventDefault(), main.current?.focus())}>Skip to content</a>
    <header class="top">
      <span class="brand">Hangar</span>
      <nav aria-label="Views">
        ${VIEWS.map((v) => html`<a href=${href(v.view)} aria-current=${route.view === v.view || v.also?.includes(route.view) ? 'page' : undefined}>${v.label}</a>`)}
      </nav>
      <span class=${`live ${live}`} role="status" aria-live="polite" data-testid="live-state">${live === 'live' ? 'Live' : live === 'connecting' ? 'Connecting…' : 'Offline — reconnecting'}</span>
      <label class="theme">
        Theme
        <select value=${theme} onChange=${(e: Event) => setTheme((e.target as HTMLSelectElement).value as ThemeChoice)}>
          <option value="system">System</option>
          <option value="light">Light</option>
          <option value="dark">Dark</option>
        </select>
      </label>
    </header>
    <div class="layout">
      <nav class="sidebar" aria-label="Workspace">${html`<${Sidebar} workspace=${shown} current=${route.params[0] ?? ''} />`}</nav>
      <main id="main" ref=${main} tabindex="-1">
        ${loginIssue && html`<p class="alert" role="alert" data-testid="login-problem">${loginIssue}</p>`}
        ${
          needsToken
            ? html`<${TokenPrompt}
              onDone=${() => {
                setNeedsToken(false);
                setGeneration((g) => g + 1);
              }}
            />`
            : view
        }
      </main>
    </div>
  `;
}

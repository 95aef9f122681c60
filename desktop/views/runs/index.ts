/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { READ_ONLY_CONFIG_KEYS } from '../../../core/coderun/config-keys.js';
import type { RunEvent, RunRecord, RunTask } from '../../../core/coderun/schemas.js';
import type { Team } from '../../../core/coderun/team-schema.js';
import { ApiError, codeSession, getJson, getStream, request, setCodeSession } from '../api.js';
import { href } from '../router.js';
import { ModelSettings } from './model-settings.js';
import { PlanEditor } from './plan-editor.js';

/**
 * The coding-run views on /api/runs, /api/teams and /api/config: the runs with a start form; one
 * run live (status, waves, the board by task state with the review queue and its
 * `review_pending` badge, fixes (tickets), gates, the plan edited and approved at the gate); the
 * teams page; and the settings, with the keys the server keeps read-only shown read-only.
 */

const TASK_COLUMNS = [
  { state: 'ready_to_dev', label: 'Ready to dev' },
  { state: 'in_progress', label: 'In progress' },
  { state: 'in_review', label: 'In review' },
  { state: 'to_scope', label: 'To scope' },
  { state: 'done', label: 'Done' },
] as const;

/** A card on the board: a task of the run, or one of the plan waiting for approval. */
type Card = Pick<RunTask, 'id' | 'title' | 'state' | 'squad' | 'role' | 'assignee' | 'attempts' | 'needs_human' | 'ticket'> & {
  planned?: boolean;
};

const describe = (err: unknown) =>
  err instanceof ApiError ? `${err.status}: ${typeof err.detail === 'string' ? err.detail : JSON.stringify(err.detail)}` : String(err);

function SessionPrompt({ onDone }: { onDone: () => void }) {
  const [value, setValue] = useState('');
  return html`<form
    class="card token-prompt"
    onSubmit=${(e: Event) => {
      e.preventDefault();
      if (!value.trim()) return;
      setCodeSession(value.trim());
      onDone();
    }}
  >
    <h2>Coding runs need the session token</h2>
    <p class="muted">Open the login link Hangar printed at start (<code>hangar login</code> prints a fresh one), or paste the token stored in <code>.hangar/code-session.json</code> of the workspace.</p>
    <label>Session token <input type="password" autocomplete="off" value=${value} onInput=${(e: Event) => setValue((e.target as HTMLInputElement).value)} /></label>
    <button class="primary" type="submit">Use token</button>
  </form>`;
}

function RunList() {
  const [runs, setRuns] = useState<RunRecord[] | null>(null);
  const [text, setText] = useState('');
  const [approval, setApproval] = useState(true);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    getJson<{ runs: RunRecord[] }>('/api/runs').then(
      (r) => setRuns(r.runs),
      (err: unknown) => setError(describe(err)),
    );
  }, []);
  const start = async (e: Event) => {
    e.preventDefault();
    try {
      const run = await request<RunRecord>('POST', '/api/runs', { request: text, require_approval: approval });
      location.hash = href('runs', run.id);
    } catch (err) {
      setError(describe(err));
    }
  };
  return html`<div>
    <form class="card start-run" onSubmit=${start}>
      <label for="run-request">What should the teams build?</label>
      <textarea id="run-request" rows="2" value=${text} onInput=${(e: Event) => setText((e.target as HTMLTextAreaElement).value)}></textarea>
      <label class="check"><input type="checkbox" checked=${approval} onChange=${(e: Event) => setApproval((e.target as HTMLInputElement).checked)} /> Stop for my approval after planning</label>
      <button class="primary" type="submit" disabled=${!text.trim()}>Start run</button>
    </form>
    ${error && html`<p class="alert" role="alert">${error}</p>`}
    ${
      runs === null
        ? html`<p class="muted">Loading…</p>`
        : runs.length === 0
          ? html`<p class="muted">No runs yet.</p>`
          : html`<table>
            <thead><tr><th scope="col">Run</th><th scope="col">Request</th><th scope="col">Status</th><th scope="col">Started</th></tr></thead>
            <tbody>
              ${runs.map(
                (r) => html`<tr>
                  <td><a class="mono" href=${href('runs', r.id)}>${r.id}</a></td>
                  <td>${r.request}</td>
                  <td><span class=${`pill ${r.status}`}>${r.status}</span></td>
                  <td>${new Date(r.created_at).toLocaleString()}</td>
                </tr>`,
              )}
            </tbody>
          </table>`
    }
  </div>`;
}

/**
 * The board's cards: the run's tasks, or — while the plan waits for approval and no task exists
 * yet — the planned ones, in "ready to dev" where they will start.
 */
function boardTasks(run: RunRecord): Card[] {
  if (run.tasks.length > 0 || !run.plan) return run.tasks;
  return run.plan.tasks.map((t) => ({
    ...t,
    state: 'ready_to_dev',
    assignee: null,
    attempts: 0,
    needs_human: false,
    ticket: null,
    planned: true,
  }));
}

function Board({ run, pendingReviews }: { run: RunRecord; pendingReviews: Map<string, string> }) {
  const all = boardTasks(run);
  return html`<div class="board" data-testid="run-board">
    ${TASK_COLUMNS.map((column) => {
      const tasks = all.filter((t) => t.state === column.state);
      const reviewing = column.state === 'in_review' ? tasks.filter((t) => pendingReviews.has(t.id)).length : 0;
      return html`<section class="column" aria-label=${`${column.label}: ${tasks.length}`} data-column=${column.state}>
        <h3>
          ${column.label} <span class="count">${tasks.length}</span>
          ${reviewing > 0 && html`<span class="badge warn-badge" data-testid="review-pending" title="review_pending">${reviewing} review pending</span>`}
        </h3>
        <ul>
          ${tasks.map(
            (t) => html`<li class="task" tabindex="0" data-task=${t.id}>
              <strong>${t.id}</strong> ${t.title}
              <small class="muted">${[t.squad, t.assignee ?? t.role].filter(Boolean).join(' · ')}${t.attempts > 1 ? ` · attempt ${t.attempts}` : ''}</small>
              ${t.planned && html`<small class="chip">planned</small>`}
              ${t.ticket && html`<small class="chip">fix ${t.ticket}</small>`}
              ${t.needs_human && html`<small class="bad">needs a person</small>`}
              ${pendingReviews.has(t.id) && html`<small class="chip">review: ${pendingReviews.get(t.id)}</small>`}
            </li>`,
          )}
        </ul>
      </section>`;
    })}
  </div>`;
}

function RunPage({ id }: { id: string }) {
  const [run, setRun] = useState<RunRecord | null>(null);
  const [waves, setWaves] = useState<{ wave: number; tasks: string[]; teams: string[] }[]>([]);
  const [pendingReviews, setPendingReviews] = useState(new Map<string, string>());
  const [error, setError] = useState<string | null>(null);
  const [planDirty, setPlanDirty] = useState(false);
  const refresh = useRef<number | undefined>(undefined);
  const base = `/api/runs/${encodeURIComponent(id)}`;

  const load = () => getJson<RunRecord>(base).then(setRun, (err: unknown) => setError(describe(err)));
  useEffect(() => {
    void load();
    const abort = new AbortController();
    // Stored events first (waves and reviews so far), then live ones until the run ends.
    void getStream<RunEvent>(
      `${base}/events`,
      (event) => {
        if (event.type === 'wave') {
          setWaves((list) => [...list.filter((w) => w.wave !== event.wave), { wave: event.wave, tasks: event.tasks, teams: event.teams }]);
        } else if (event.type === 'review_pending') {
          setPendingReviews((m) => new Map(m).set(event.task, event.reviewer));
        } else if (event.type === 'task_update') {
          if (event.state !== 'in_review') setPendingReviews((m) => (m.has(event.task) ? (m.delete(event.task), new Map(m)) : m));
        }
        // The record is the truth for the board; events only say when to read it again.
        clearTimeout(refresh.current);
        refresh.current = window.setTimeout(() => void load(), 150);
      },
      abort.signal,
    )
      .then(() => load())
      .catch((err: unknown) => !abort.signal.aborted && setError(describe(err)));
    return () => {
      abort.abort();
      clearTimeout(refresh.current);
    };
  }, [id]);

  const act = (path: string) => request('POST', path).then(load, (err: unknown) => setError(describe(err)));

  if (!run) return error ? html`<p class="alert" role="alert">${error}</p>` : html`<p class="muted">Loading run…</p>`;
  const active = ['planning', 'awaiting_approval', 'running'].includes(run.status);
  return html`<div class="run-page">
    <div class="card">
      <p><span class=${`pill ${run.status}`} data-testid="run-status">${run.status}</span> ${run.request}</p>
      ${run.plan?.summary && html`<p class="muted">Plan: ${run.plan.summary}</p>`}
      ${
        run.plan_cut &&
        run.plan_cut.dropped.length > 0 &&
        html`<div class="notice" data-testid="plan-cut">
        <p>The plan size cap (${run.plan_cut.cap}) dropped ${run.plan_cut.dropped.length} of ${run.plan_cut.proposed} proposed tasks:</p>
        <ul class="plain">${run.plan_cut.dropped.map((t) => html`<li><strong>${t.id}</strong> ${t.title} <small class="muted">${t.team ?? 'no team'}</small></li>`)}</ul>
        ${run.plan_cut.teams_without_work.length > 0 && html`<p>Teams left without work: ${run.plan_cut.teams_without_work.join(', ')}</p>`}
      </div>`
      }
      ${(run.plan_problems ?? []).map((p) => html`<p class="alert" role="alert" data-testid="plan-problem">${p}</p>`)}
      ${run.summary && html`<p data-testid="run-summary">${run.summary}</p>`}
      ${run.error && html`<p class="alert">${run.error}</p>`}
      ${run.branch && html`<p class="muted">Branch <code>${run.branch}</code></p>`}
      <div class="actions">
        ${
          run.status === 'awaiting_approval' &&
          html`<button class="primary" disabled=${planDirty || (run.plan_problems ?? []).length > 0} title=${planDirty ? 'save or discard the plan edits first' : (run.plan_problems ?? []).length > 0 ? 'solve the plan problems first' : ''} onClick=${() => act(`${base}/approve`)}>Approve plan and start</button>`
        }
        ${active && html`<button class="danger" onClick=${() => act(`${base}/cancel`)}>Cancel run</button>`}
        ${planDirty && html`<small class="muted">Save or discard the plan edits before approving.</small>`}
      </div>
    </div>
    ${error && html`<p class="alert" role="alert">${error}</p>`}
    ${
      run.status === 'awaiting_approval' &&
      html`<section class="card" aria-labelledby="plan-title">
      <h2 id="plan-title">Plan awaiting approval</h2>
      <${PlanEditor} runId=${run.id} revision=${JSON.stringify(run.plan)} onDirty=${setPlanDirty} onSaved=${() => void load()} />
    </section>`
    }
    ${
      waves.length > 0 &&
      html`<section class="card" aria-labelledby="waves-title">
      <h2 id="waves-title">Waves</h2>
      <ol class="plain" data-testid="waves">
        ${waves.sort((a, b) => a.wave - b.wave).map((w) => html`<li>Wave ${w.wave}: <span class="mono">${w.tasks.join(', ')}</span> <small class="muted">teams ${w.teams.join(', ')}</small></li>`)}
      </ol>
    </section>`
    }
    <section class="card" aria-labelledby="board-title">
      <h2 id="board-title">Board</h2>
      <${Board} run=${run} pendingReviews=${pendingReviews} />
    </section>
    <section class="card" aria-labelledby="review-title">
      <h2 id="review-title">Review queue <span class="count">${pendingReviews.size}</span></h2>
      ${
        pendingReviews.size === 0
          ? html`<p class="muted">Nothing waits for review.</p>`
          : html`<ul class="plain">${[...pendingReviews].map(([task, reviewer]) => html`<li><strong>${task}</strong> — ${reviewer}</li>`)}</ul>`
      }
    </section>
    <section class="card" aria-labelledby="fixes-title">
      <h2 id="fixes-title">Fixes <span class="count">${run.tickets.length}</span></h2>
      <p class="muted">Repairs: found ${run.repairs.found}, resolved ${run.repairs.resolved}, restaffed ${run.repairs.restaffed}, needs a person ${run.repairs.needs_human}</p>
      ${
        run.tickets.length > 0 &&
        html`<table>
        <thead><tr><th scope="col">Ticket</th><th scope="col">Team</th><th scope="col">Status</th><th scope="col">Seen</th><th scope="col">Failing check</th></tr></thead>
        <tbody>${run.tickets.map((t) => html`<tr><td class="mono">${t.id}</td><td>${t.team}</td><td>${t.status}</td><td>${t.count}×</td><td><code>${t.command}</code><pre class="error-text">${t.output_tail}</pre></td></tr>`)}</tbody>
      </table>`
      }
    </section>
    <section class="card" aria-labelledby="gates-title">
      <h2 id="gates-title">Gates</h2>
      ${
        run.gates.length === 0
          ? html`<p class="muted">No gate has run yet.</p>`
          : html`<ul class="plain" data-testid="gates">
            ${run.gates.map((g) => html`<li><span class=${`pill gate-${g.outcome}`}>${g.outcome}</span> ${g.team} <code>${g.command}</code> <small class="muted">${g.reason}</small></li>`)}
            ${run.integration && html`<li><span class=${`pill gate-${run.integration.outcome}`}>${run.integration.outcome}</span> integration <small class="muted">${run.integration.reason}</small></li>`}
          </ul>`
      }
    </section>
  </div>`;
}

function Teams() {
  const [data, setData] = useState<{ repo: string; teams: (Team & { source: string })[] } | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    getJson<typeof data & object>('/api/teams').then(setData, (err: unknown) => setError(describe(err)));
  }, []);
  if (error) return html`<p class="alert" role="alert">${error}</p>`;
  if (!data) return html`<p class="muted">Loading…</p>`;
  return html`<div>
    <p class="muted">Repository <code>${data.repo}</code></p>
    ${data.teams.length === 0 && html`<p class="muted">No teams yet: add one under <code>teams/</code>.</p>`}
    <ul class="agent-grid" data-testid="teams">
      ${data.teams.map(
        (t) => html`<li class="card">
          <h2>${t.id} <small class="muted">${t.source}</small></h2>
          <p>${t.charter}</p>
          <p class="muted">owns <span class="mono">${t.owns.join(', ')}</span></p>
          ${t.acceptance && html`<p class="muted">proves with <code>${t.acceptance}</code></p>`}
          ${t.agents.length > 0 && html`<ul class="chips">${t.agents.map((a) => html`<li class="chip">${a.name} · ${a.role}</li>`)}</ul>`}
        </li>`,
      )}
    </ul>
  </div>`;
}

function Settings() {
  const [config, setConfig] = useState<Record<string, unknown> | null>(null);
  const [draft, setDraft] = useState<Record<string, string>>({});
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  useEffect(() => {
    getJson<Record<string, unknown>>('/api/config').then(setConfig, (err: unknown) => setMessage({ ok: false, text: describe(err) }));
  }, []);
  if (!config) return message ? html`<p class="alert">${message.text}</p>` : html`<p class="muted">Loading…</p>`;
  const shown = (key: string) => draft[key] ?? (typeof config[key] === 'string' ? String(config[key]) : JSON.stringify(config[key]));
  const save = async (e: Event) => {
    e.preventDefault();
    try {
      const body: Record<string, unknown> = {};
      for (const [key, raw] of Object.entries(draft))
        body[key] = typeof config[key] === 'string' || config[key] === undefined ? raw : JSON.parse(raw);
      setConfig(await request<Record<string, unknown>>('PUT', '/api/config', body));
      setDraft({});
      setMessage({ ok: true, text: 'Saved.' });
    } catch (err) {
      setMessage({ ok: false, text: err instanceof SyntaxError ? `not valid JSON: ${err.message}` : describe(err) });
    }
  };
  return html`<form class="card settings" onSubmit=${save} data-testid="settings">
    ${Object.keys(config)
      .sort()
      .map((key) => {
        const readOnly = (READ_ONLY_CONFIG_KEYS as readonly string[]).includes(key);
        const value = config[key];
        const id = `setting-${key}`;
        return html`<div class="setting">
        <label for=${id}>${key}${readOnly && html` <small class="muted">read-only — set under "code" in hangar.config.json</small>`}</label>
        ${
          typeof value === 'boolean'
            ? html`<input id=${id} type="checkbox" checked=${draft[key] ? draft[key] === 'true' : value} disabled=${readOnly}
              onChange=${(e: Event) => setDraft({ ...draft, [key]: String((e.target as HTMLInputElement).checked) })} />`
            : html`<input id=${id} value=${shown(key)} readOnly=${readOnly} aria-readonly=${readOnly} class=${readOnly ? 'readonly' : ''}
              onInput=${(e: Event) => setDraft({ ...draft, [key]: (e.target as HTMLInputElement).value })} />`
        }
      </div>`;
      })}
    <div class="actions"><button class="primary" type="submit" disabled=${Object.keys(draft).length === 0}>Save settings</button></div>
    ${message && html`<p class=${message.ok ? 'notice' : 'alert'} role="status">${message.text}</p>`}
  </form>`;
}

const TABS = [
  { view: 'runs', label: 'Runs' },
  { view: 'teams', label: 'Teams' },
  { view: 'settings', label: 'Settings' },
];

export function CodeRunView({ view, id }: { view: string; id?: string }) {
  const [session, setSession] = useState<string | null | undefined>(undefined);
  const [refused, setRefused] = useState(false);
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    void (async () => {
      const token = await codeSession();
      if (token) {
        // A stale token (from an earlier launch) is refused: ask again instead of failing every panel.
        try {
          await getJson('/api/config');
        } catch (err) {
          if (err instanceof ApiError && err.status === 401) {
            setRefused(true);
            setSession(null);
            return;
          }
        }
      }
      setSession(token);
    })();
  }, [generation]);
  const title = view === 'runs' ? (id ? `Run ${id}` : 'Coding runs') : view === 'teams' ? 'Teams' : 'Coding-run settings';
  return html`<section class="view runs-view" aria-labelledby="runs-title">
    <h1 id="runs-title" tabindex="-1">${title}</h1>
    <nav class="tabs" aria-label="Coding runs">
      ${TABS.map((t) => html`<a href=${href(t.view)} aria-current=${view === t.view ? 'page' : undefined}>${t.label}</a>`)}
    </nav>
    ${
      session === undefined
        ? html`<p class="muted">…</p>`
        : session === null
          ? html`${refused && html`<p class="alert" role="alert">The server refused that session token: it is the workspace's while a Hangar runs on it, and new once none runs (read <code>.hangar/code-session.json</code> again, or run <code>hangar login</code>).</p>`}
            <${SessionPrompt} onDone=${() => setGeneration((g) => g + 1)} />`
          : view === 'teams'
            ? html`<${Teams} key=${generation} />`
            : view === 'settings'
              ? html`<${ModelSettings} key=${`model-${generation}`} /><${Settings} key=${generation} />`
              : id
                ? html`<${RunPage} id=${id} key=${id} />`
                : html`<${RunList} key=${generation} />`
    }
  </section>`;
}

/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import type { z } from 'zod';
import type { PlatformStatus as PlatformStatusSchema } from '../../core/platform/schemas.js';
import type { Task } from '../../core/tasks/schemas.js';
import type { TaskMessage } from '../../core/ui/events.js';
import type { WorkspaceSnapshot } from '../../core/ui/workspace.js';
import { ApiError, getJson, getText } from './api.js';
import { type Glance, glance, parsePrometheus } from './metrics.js';

/**
 * The status dashboard: resources of the running platform, drop-in errors with file and line, the
 * metrics at a glance and the task board. It refreshes when the workspace changes (live channel)
 * and every few seconds for the counters.
 */

/** GET /api/v1/status. */
type PlatformStatus = z.output<typeof PlatformStatusSchema>;

const TASK_COLUMNS = [
  { status: 'submitted', label: 'Submitted' },
  { status: 'working', label: 'Working' },
  // Stopped for a person's answer (a human approval); it moves on once decided.
  { status: 'input-required', label: 'Input required' },
  { status: 'completed', label: 'Completed' },
  { status: 'failed', label: 'Failed' },
  { status: 'canceled', label: 'Canceled' },
];

const REFRESH_MS = 5000;

function duration(seconds: number): string {
  const s = Math.floor(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

const fmt = (n: number | null, digits = 0) => (n === null ? '—' : n.toLocaleString(undefined, { maximumFractionDigits: digits }));

export function StatusView({ workspace, taskChange = null }: { workspace: WorkspaceSnapshot | null; taskChange?: TaskMessage | null }) {
  const [status, setStatus] = useState<PlatformStatus | null>(null);
  const [metrics, setMetrics] = useState<Glance | null>(null);
  const [tasks, setTasks] = useState<Task[] | null | 'disabled'>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);

  useEffect(() => {
    const timer = setInterval(() => setTick((t) => t + 1), REFRESH_MS);
    return () => clearInterval(timer);
  }, []);

  useEffect(() => {
    let cancelled = false;
    void (async () => {
      try {
        const [s, m] = await Promise.all([getJson<PlatformStatus>('/api/v1/status'), getText('/metrics')]);
        if (cancelled) return;
        setStatus(s);
        setMetrics(glance(parsePrometheus(m)));
        setError(null);
      } catch (err) {
        if (!cancelled) setError(err instanceof Error ? err.message : String(err));
      }
      try {
        const page = await getJson<{ tasks: Task[] }>('/api/v1/tasks?limit=100');
        if (!cancelled) setTasks(page.tasks);
      } catch (err) {
        // 404: no task subsystem in this build; 501: tasks.enabled is off. Either way, no board.
        if (!cancelled && err instanceof ApiError && (err.status === 404 || err.status === 501)) setTasks('disabled');
      }
    })();
    return () => {
      cancelled = true;
    };
  }, [workspace, tick]);

  // A task changed (team mode: on any instance): merged in at once rather than at the next refresh.
  useEffect(() => {
    const changed = taskChange?.task;
    if (!changed) return;
    setTasks((current) =>
      Array.isArray(current)
        ? current.some((t) => t.id === changed.id)
          ? current.map((t) => (t.id === changed.id ? changed : t))
          : [changed, ...current]
        : current,
    );
  }, [taskChange]);

  const problems = workspace?.problems ?? status?.errors ?? [];

  return html`<section class="view status-view" aria-labelledby="status-title">
    <h1 id="status-title" tabindex="-1">Status</h1>
    ${error && html`<p class="alert" role="alert">Could not load the status: ${error}</p>`}
    <div class="cards">
      <section class="card" aria-labelledby="res-title" data-testid="resources">
        <h2 id="res-title">Resources</h2>
        ${
          status
            ? html`<dl class="facts">
              <dt>Platform</dt><dd><span class=${`pill ${status.status}`}>${status.status}</span> ${status.ready ? 'ready' : 'not ready'}</dd>
              <dt>Version</dt><dd>${status.version}</dd>
              <dt>Uptime</dt><dd>${duration(status.uptime_seconds)}</dd>
              <dt>Workspace</dt><dd class="mono">${status.workspace}</dd>
              <dt>Drop-ins</dt><dd>${
                Object.entries(status.dropins)
                  .map(([k, n]) => `${n} ${k}${n === 1 ? '' : 's'}`)
                  .join(', ') || 'none'
              }</dd>
              <dt>Memory</dt><dd>${metrics?.residentMemoryMb != null ? `${fmt(metrics.residentMemoryMb, 1)} MB resident` : '—'}</dd>
              ${
                status.store &&
                html`<dt>Store</dt>
                <dd data-testid="store">
                  <span class="mono">${status.store.path}</span> (${status.store.backend})
                  ${status.store.writable ? '' : html`<div class="bad" role="alert">cannot write: ${status.store.problem}</div>`}
                  ${
                    status.store.recovered &&
                    html`<div class="bad" role="alert">
                    the database was damaged (${status.store.recovered.problem}); it was moved to <span class="mono">${status.store.recovered.moved_to}</span> and an
                    empty store started
                  </div>`
                  }
                </dd>`
              }
            </dl>`
            : html`<p class="muted">Loading…</p>`
        }
      </section>
      <section class="card" aria-labelledby="metrics-title" data-testid="metrics">
        <h2 id="metrics-title">Metrics at a glance</h2>
        ${
          metrics
            ? html`<dl class="figures">
              <div><dt>Requests</dt><dd>${fmt(metrics.requests)}</dd></div>
              <div><dt>Server errors</dt><dd class=${metrics.serverErrors > 0 ? 'bad' : ''}>${fmt(metrics.serverErrors)}</dd></div>
              <div><dt>Mean latency</dt><dd>${metrics.meanLatencyMs === null ? '—' : `${fmt(metrics.meanLatencyMs, 1)} ms`}</dd></div>
              <div><dt>Agent runs</dt><dd>${fmt(metrics.invocations)}</dd></div>
              <div><dt>Reloads</dt><dd>${fmt(metrics.reloads)}${metrics.failedReloads > 0 ? html` <small class="bad">(${metrics.failedReloads} failed)</small>` : ''}</dd></div>
              <div><dt>Event-loop lag</dt><dd>${metrics.eventLoopLagMs === null ? '—' : `${fmt(metrics.eventLoopLagMs, 1)} ms`}</dd></div>
            </dl>`
            : html`<p class="muted">Loading…</p>`
        }
      </section>
    </div>
    <section class="card" aria-labelledby="errors-title" data-testid="dropin-errors">
      <h2 id="errors-title">Drop-in errors <span class="count">${problems.length}</span></h2>
      ${
        problems.length === 0
          ? html`<p class="muted">Every drop-in loaded.</p>`
          : html`<table>
            <thead><tr><th scope="col">Kind</th><th scope="col">Where</th><th scope="col">Error</th></tr></thead>
            <tbody>
              ${problems.map(
                (p) => html`<tr>
                  <td>${p.kind}</td>
                  <td class="mono">${p.file}${p.line != null ? `:${p.line}` : ''}${p.column != null ? `:${p.column}` : ''}${p.entry !== p.file ? html`<br /><small class="muted">via ${p.entry}</small>` : ''}</td>
                  <td><pre class="error-text">${p.message}</pre></td>
                </tr>`,
              )}
            </tbody>
          </table>`
      }
    </section>
    ${
      status &&
      status.mcp_servers.length > 0 &&
      html`<section class="card" aria-labelledby="mcp-title" data-testid="mcp-servers">
        <h2 id="mcp-title">MCP servers <span class="count">${status.mcp_servers.length}</span></h2>
        <table>
          <thead><tr><th scope="col">Server</th><th scope="col">State</th><th scope="col">Tools</th></tr></thead>
          <tbody>
            ${status.mcp_servers.map(
              (m) => html`<tr data-server=${m.name}>
                <td><strong>${m.name}</strong> <small class="muted">${m.transport}${m.pid ? ` · pid ${m.pid}` : ''}</small></td>
                <td class=${m.state === 'failed' ? 'bad' : ''}>${m.state}${m.restarts ? ` (restarted ${m.restarts}×)` : ''}${m.error ? html`<br /><small>${m.error}</small>` : ''}</td>
                <td class="mono">${m.tools.length ? m.tools.join(', ') : m.state === 'idle' ? html`<small class="muted">started on first use</small>` : '—'}</td>
              </tr>`,
            )}
          </tbody>
        </table>
      </section>`
    }
    ${
      status &&
      status.hosts.length > 0 &&
      html`<section class="card" aria-labelledby="hosts-title" data-testid="dropin-hosts">
        <h2 id="hosts-title">Drop-in hosts <span class="count">${status.hosts.length}</span></h2>
        <p class="muted">Each drop-in's code runs in its own thread with a heap cap; a loop, a memory hog or a hung call restarts that host only.</p>
        <table>
          <thead><tr><th scope="col">Drop-in</th><th scope="col">Heap cap</th><th scope="col">Running</th><th scope="col">Restarts</th></tr></thead>
          <tbody>
            ${status.hosts.map(
              (h) => html`<tr data-host=${`${h.kind}:${h.name}`}>
                <td><strong>${h.name}</strong> <small class="muted">${h.kind}${h.ready ? '' : ' · not started'}</small></td>
                <td>${h.heap_mb} MB</td>
                <td>${h.running}</td>
                <td class=${h.restarts ? 'bad' : ''}>${h.restarts}${h.out_of_memory ? ` (${h.out_of_memory} out of memory)` : ''}${
                  h.last_restart ? html`<br /><small title=${h.last_restart.at}>${h.last_restart.detail}</small>` : ''
                }</td>
              </tr>`,
            )}
          </tbody>
        </table>
      </section>`
    }
    <section class="card" aria-labelledby="tasks-title" data-testid="task-board">
      <h2 id="tasks-title">Task board</h2>
      ${
        tasks === 'disabled'
          ? html`<p class="muted">The task board is turned off on this server (tasks.enabled).</p>`
          : tasks === null
            ? html`<p class="muted">Loading…</p>`
            : html`<div class="board">
              ${TASK_COLUMNS.map((col) => {
                const inColumn = tasks.filter((t) => t.status === col.status);
                return html`<section class="column" aria-label=${`${col.label}: ${inColumn.length}`}>
                  <h3>${col.label} <span class="count">${inColumn.length}</span></h3>
                  <ul>
                    ${inColumn.map(
                      (t) => html`<li class="task" tabindex="0" title=${t.id}>
                        <strong>${t.target}</strong> <small class="muted">${t.kind}</small>
                        ${t.status === 'working' && html`<progress max="100" value=${t.progress.percent} aria-label="progress"></progress>`}
                        ${t.progress.message && html`<small>${t.progress.message}</small>`}
                        ${t.error && html`<small class="bad">${t.error}</small>`}
                      </li>`,
                    )}
                  </ul>
                </section>`;
              })}
            </div>`
      }
    </section>
  </section>`;
}

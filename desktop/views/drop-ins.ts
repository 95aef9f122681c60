/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import type { DropInProblem } from '../../core/kernel/registry.js';
import type { InvocationRecord, LogPage } from '../../core/logs/schemas.js';
import { ApiError, getJson } from './api.js';

/**
 * Pieces every drop-in view shares: the banner of a drop-in that failed to load (with its code
 * frame, as Vite's overlay shows one), the last calls of a drop-in from the invocation log, and
 * reading a health route that answers 503 with a body.
 */

/** One line for a failed call: the API's `detail` with its status, or the error's message. */
export function describeFailure(err: unknown): string {
  if (err instanceof ApiError) return `${err.status}: ${typeof err.detail === 'string' ? err.detail : JSON.stringify(err.detail)}`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * A banner per failing drop-in: where (file, line, column, and the entry that imports it), the
 * error, and the lines around it with a caret. The problems come with the live workspace, so a
 * banner appears on the save that broke the file and goes on the save that fixes it.
 */
export function ProblemBanners({ problems }: { problems: readonly DropInProblem[] }) {
  if (problems.length === 0) return null;
  return html`<div class="problem-banners">
    ${problems.map(
      (
        p,
      ) => html`<section class="problem-banner" role="alert" data-testid="problem" data-entry=${p.entry} aria-label=${`${p.entry} failed to load`}>
        <h2>
          <span class="chip">${p.kind}</span> <span class="mono">${p.entry}</span> failed to load
          ${p.file !== p.entry && html` <small class="muted">(the error is in ${p.file})</small>`}
        </h2>
        <p class="mono where">${p.file}${p.line != null ? `:${p.line}` : ''}${p.column != null ? `:${p.column}` : ''}</p>
        <pre class="error-text">${p.message}</pre>
        ${p.excerpt && html`<pre class="code-frame" data-testid="code-frame">${p.excerpt}</pre>`}
        <p class="muted">Fix the file and save: this banner goes away on its own.</p>
      </section>`,
    )}
  </div>`;
}

/**
 * A health route's report, whether it answered 200 or 503 (unhealthy is an answer, not a failure).
 * A 503 body without `detail` reaches us as the body's text.
 */
export async function healthReport<T>(path: string): Promise<T> {
  try {
    return await getJson<T>(path);
  } catch (err) {
    if (err instanceof ApiError && err.status === 503) {
      if (typeof err.detail === 'string') {
        try {
          return JSON.parse(err.detail) as T;
        } catch {
          return { detail: err.detail } as T;
        }
      }
      return err.detail as T;
    }
    throw err;
  }
}

const time = (iso: string) => new Date(iso).toLocaleTimeString();

/**
 * The newest calls to one drop-in from the invocation log (`GET /api/v1/logs`). The log is off
 * unless `logs.enabled` is set; the table then says so and how to turn it on, instead of an error.
 * `probes` are operations left out (an endpoint's `GET /health`, which this very view asks): the
 * table is about what callers did, not about the views looking at it.
 */
export function LastCalls({
  resource,
  name,
  refresh = 0,
  limit = 10,
  probes = [],
}: {
  resource: string;
  name: string;
  refresh?: number | string;
  limit?: number;
  probes?: readonly string[];
}) {
  const [calls, setCalls] = useState<InvocationRecord[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    let cancelled = false;
    // Probes are left out after the fact (the log filters by one operation, not by several left out).
    const query = new URLSearchParams({ resource, name, limit: String(probes.length > 0 ? limit * 5 : limit) });
    getJson<LogPage>(`/api/v1/logs?${query}`).then(
      (page) => !cancelled && (setCalls(page.logs.filter((c) => !probes.includes(c.operation)).slice(0, limit)), setProblem(null)),
      (err: unknown) =>
        !cancelled &&
        setProblem(
          err instanceof ApiError && err.status === 501
            ? 'Calls are not recorded: the invocation log is off (set "logs": { "enabled": true } in hangar.config.json).'
            : describeFailure(err),
        ),
    );
    return () => {
      cancelled = true;
    };
  }, [resource, name, refresh, limit, probes.join()]);
  if (problem) return html`<p class="muted" data-testid="last-calls-off">${problem}</p>`;
  if (!calls) return html`<p class="muted">Loading…</p>`;
  if (calls.length === 0) return html`<p class="muted" data-testid="last-calls">No calls yet.</p>`;
  return html`<table class="last-calls" data-testid="last-calls">
    <thead><tr><th scope="col">When</th><th scope="col">Call</th><th scope="col">Status</th><th scope="col">Time</th><th scope="col">Error</th></tr></thead>
    <tbody>
      ${calls.map(
        (c) => html`<tr data-status=${c.status}>
          <td title=${c.started_at}>${time(c.started_at)}</td>
          <td class="mono">${c.operation}</td>
          <td><span class=${`pill ${c.status === 'ok' ? 'healthy' : 'degraded'}`}>${c.status}</span>${c.http_status != null ? ` ${c.http_status}` : ''}</td>
          <td>${Math.round(c.duration_ms)} ms</td>
          <td>${c.error && html`<span class="bad">${c.error}</span>`}</td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}

/** JSON for people: two-space indented, or the text itself when it is a string. */
export function pretty(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}

/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import type { z } from 'zod';
import type { EndpointList } from '../../../core/endpoints/schemas.js';
import type { EndpointHealth } from '../../../core/endpoints/service.js';
import type { WorkspaceSnapshot } from '../../../core/ui/workspace.js';
import { ApiError, getJson, request } from '../api.js';
import { describeFailure, healthReport, LastCalls, ProblemBanners, pretty } from '../drop-ins.js';
import { href } from '../router.js';

/**
 * Custom endpoints (`endpoints/`): every endpoint with its route and methods; for one endpoint its
 * routes, upstreams (credentials never leave the server), health, the last calls from the
 * invocation log, and a try-it form that calls the real route with the method, URL and body given.
 */

type EndpointSummary = z.output<typeof EndpointList>['endpoints'][number];

/** GET /api/v1/endpoints/{name}/info (core/endpoints/describe.ts `endpointInfo`). */
interface EndpointInfo extends Omit<EndpointSummary, 'upstreams' | 'url' | 'router'> {
  routes: { main: string; health: string; info: string };
  env: string[];
  upstreams: Array<{
    name: string;
    base_url: string;
    path: string;
    method: string | null;
    timeout_ms: number;
    auth: { type: string } | null;
  }>;
  input_schema: unknown;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** What this view itself asks of an endpoint: not calls worth listing. */
const ENDPOINT_PROBES = ['GET /health', 'GET /info', 'HEAD /health'];

function EndpointCards({ endpoints }: { endpoints: EndpointSummary[] }) {
  if (endpoints.length === 0)
    return html`<p class="muted">No endpoints in this workspace yet. Drop a file into <code>endpoints/</code> (<code>defineEndpoint</code>).</p>`;
  return html`<ul class="agent-grid" data-testid="endpoint-list">
    ${endpoints.map(
      (e) => html`<li class="card" data-endpoint=${e.name}>
        <h2><a href=${href('endpoints', e.name)}>${e.name}</a> <small class="muted">v${e.version}</small></h2>
        <p>${e.description}</p>
        <p class="mono">${e.methods.join(' | ')} ${e.url}</p>
        <ul class="chips">
          ${e.router ? html`<li class="chip">router</li>` : e.aggregation && html`<li class="chip">${e.aggregation}</li>`}
          ${e.upstreams.map((u) => html`<li class="chip alt">${u}</li>`)}
        </ul>
      </li>`,
    )}
  </ul>`;
}

function TryIt({ summary, onCalled }: { summary: EndpointSummary; onCalled: () => void }) {
  const [method, setMethod] = useState(summary.methods[0] ?? 'GET');
  const [url, setUrl] = useState(summary.url);
  const [body, setBody] = useState('{}');
  const [busy, setBusy] = useState(false);
  const [answer, setAnswer] = useState<{ ok: boolean; status: string; text: string } | null>(null);
  const send = async (e: Event) => {
    e.preventDefault();
    let parsed: unknown;
    if (BODY_METHODS.has(method)) {
      try {
        parsed = body.trim() ? JSON.parse(body) : undefined;
      } catch (err) {
        setAnswer({ ok: false, status: 'not sent', text: `The body is not valid JSON: ${(err as Error).message}` });
        return;
      }
    }
    setBusy(true);
    try {
      const result = await request(method, url, parsed);
      setAnswer({ ok: true, status: 'OK', text: pretty(result) });
    } catch (err) {
      setAnswer({
        ok: false,
        status: err instanceof ApiError ? `HTTP ${err.status}` : 'failed',
        text: err instanceof ApiError ? pretty(err.detail) : describeFailure(err),
      });
    } finally {
      setBusy(false);
      onCalled();
    }
  };
  return html`<form class="try-it" onSubmit=${send} data-testid="try-it">
    <div class="try-line">
      <label>Method
        <select value=${method} onChange=${(e: Event) => setMethod((e.target as HTMLSelectElement).value)}>
          ${summary.methods.map((m) => html`<option value=${m}>${m}</option>`)}
        </select>
      </label>
      <label class="grow">URL <input class="mono" value=${url} onInput=${(e: Event) => setUrl((e.target as HTMLInputElement).value)} /></label>
    </div>
    ${
      BODY_METHODS.has(method)
        ? html`<label>Body (JSON) <textarea class="mono" rows="5" value=${body} onInput=${(e: Event) => setBody((e.target as HTMLTextAreaElement).value)}></textarea></label>`
        : html`<p class="muted">${method} sends its input as query parameters: add them to the URL (<code>?city=Paris</code>).</p>`
    }
    <div class="actions"><button class="primary" type="submit" disabled=${busy}>${busy ? 'Sending…' : 'Send'}</button></div>
    ${
      answer &&
      html`<div class="try-answer" data-testid="try-answer" data-ok=${String(answer.ok)}>
        <p><span class=${`pill ${answer.ok ? 'healthy' : 'degraded'}`}>${answer.status}</span></p>
        <pre class="json">${answer.text}</pre>
      </div>`
    }
  </form>`;
}

function EndpointDetail({ summary }: { summary: EndpointSummary }) {
  const base = `/api/v1/endpoints/${encodeURIComponent(summary.name)}`;
  const [info, setInfo] = useState<EndpointInfo | null>(null);
  const [health, setHealth] = useState<EndpointHealth | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [calls, setCalls] = useState(0);
  useEffect(() => {
    // A router endpoint owns its whole subtree, /info and /health included: nothing to ask it.
    if (summary.router) return;
    getJson<EndpointInfo>(`${base}/info`).then(setInfo, (err: unknown) => setError(describeFailure(err)));
  }, [base, summary.version]);
  useEffect(() => {
    if (summary.router) return;
    healthReport<EndpointHealth>(`${base}/health`).then(setHealth, (err: unknown) => setError(describeFailure(err)));
  }, [base, summary.version, calls]);

  return html`<div class="drop-in-detail">
    ${error && html`<p class="alert" role="alert">${error}</p>`}
    <div class="cards">
      <section class="card" aria-labelledby="ep-routes">
        <h2 id="ep-routes">Routes</h2>
        <dl class="facts" data-testid="endpoint-routes">
          <dt>Call</dt><dd class="mono">${summary.methods.join(' | ')} ${summary.url}</dd>
          ${info && html`<dt>Health</dt><dd class="mono">GET ${info.routes.health}</dd><dt>Info</dt><dd class="mono">GET ${info.routes.info}</dd>`}
          ${!summary.router && html`<dt>On the task board</dt><dd class="mono">POST ${summary.url}/async · POST ${summary.url}/batch</dd>`}
          ${info && info.env.length > 0 && html`<dt>Needs</dt><dd class="mono">${info.env.join(', ')}</dd>`}
        </dl>
      </section>
      <section class="card" aria-labelledby="ep-health">
        <h2 id="ep-health">Health</h2>
        ${
          summary.router
            ? html`<p class="muted">A router endpoint answers its own routes, health included.</p>`
            : health
              ? html`<p data-testid="endpoint-health"><span class=${`pill ${health.ready ? 'healthy' : 'degraded'}`}>${health.ready ? 'ready' : 'not ready'}</span> <small class="muted">${health.rule}</small></p>
                <ul class="plain">
                  ${health.upstreams.map(
                    (u) =>
                      html`<li><strong>${u.name}</strong> ${u.ready ? '✓' : '✗'} ${u.status ?? ''} <small class="muted">${Math.round(u.duration_ms)} ms</small> ${u.error && html`<span class="bad">${u.error}</span>`}</li>`,
                  )}
                </ul>`
              : html`<p class="muted">Checking…</p>`
        }
      </section>
    </div>
    ${
      info &&
      info.upstreams.length > 0 &&
      html`<section class="card" aria-labelledby="ep-upstreams">
        <h2 id="ep-upstreams">Upstreams</h2>
        <table>
          <thead><tr><th scope="col">Name</th><th scope="col">URL</th><th scope="col">Method</th><th scope="col">Auth</th><th scope="col">Timeout</th></tr></thead>
          <tbody>${info.upstreams.map((u) => html`<tr><td>${u.name}</td><td class="mono">${u.base_url}${u.path}</td><td>${u.method ?? 'as called'}</td><td>${u.auth?.type ?? 'none'}</td><td>${u.timeout_ms} ms</td></tr>`)}</tbody>
        </table>
      </section>`
    }
    <section class="card" aria-labelledby="ep-try">
      <h2 id="ep-try">Try it</h2>
      <${TryIt} summary=${summary} onCalled=${() => setCalls((n) => n + 1)} />
    </section>
    <section class="card" aria-labelledby="ep-calls">
      <h2 id="ep-calls">Last calls</h2>
      <${LastCalls} resource="endpoint" name=${summary.name} refresh=${calls} probes=${ENDPOINT_PROBES} />
    </section>
  </div>`;
}

export function EndpointsView({ name, workspace }: { name?: string; workspace: WorkspaceSnapshot | null }) {
  const [endpoints, setEndpoints] = useState<EndpointSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Follows the workspace: a saved, added or removed endpoint file refreshes the list.
  const versions = (workspace?.kinds.endpoint ?? []).map((e) => `${e.name}@${e.version}`).join(',');
  useEffect(() => {
    getJson<{ endpoints: EndpointSummary[] }>('/api/v1/endpoints').then(
      (r) => (setEndpoints(r.endpoints), setError(null)),
      (err: unknown) => setError(describeFailure(err)),
    );
  }, [versions]);
  const entry = name ? endpoints?.find((e) => e.name === name) : undefined;
  const problems = (workspace?.problems ?? []).filter((p) => p.kind === 'endpoint' && (!name || p.name === name));
  return html`<section class="view endpoints-view" aria-labelledby="endpoints-title">
    <h1 id="endpoints-title" tabindex="-1">${name ? `Endpoint · ${name}` : 'Endpoints'}</h1>
    <${ProblemBanners} problems=${problems} />
    ${error && html`<p class="alert" role="alert">${error}</p>`}
    ${!name && endpoints && html`<${EndpointCards} endpoints=${endpoints} />`}
    ${name && endpoints && !entry && problems.length === 0 && html`<p class="alert" role="alert">No endpoint named “${name}” in this workspace. <a href=${href('endpoints')}>All endpoints</a></p>`}
    ${entry && html`<p>${entry.description} <small class="muted">v${entry.version}</small></p><${EndpointDetail} summary=${entry} key=${entry.name} />`}
  </section>`;
}

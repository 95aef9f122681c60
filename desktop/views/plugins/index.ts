/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import type { z } from 'zod';
import type { IngestorHealthResponse, IngestorInfo, IngestorSummary, RunResult } from '../../../core/ingestion/schemas.js';
import type { PluginHealth, PluginSummary } from '../../../core/predictors/schemas.js';
import type { WorkspaceSnapshot } from '../../../core/ui/workspace.js';
import { getJson, postJson } from '../api.js';
import { describeFailure, healthReport, LastCalls, ProblemBanners } from '../drop-ins.js';
import { href } from '../router.js';

/**
 * ML plugins (`plugins/`) and ingestors (`ingestors/`): for each its load state and health (why it
 * is not ready, in the server's words), and its last runs — predictions from the invocation log,
 * ingestion runs with what they created, updated and deleted. `#/plugins/<name>` and
 * `#/ingestors/<name>` show one; `#/plugins` shows both lists.
 */

type Ingestor = z.output<typeof IngestorSummary>;
type IngestorDetails = z.output<typeof IngestorInfo>;
type IngestorHealth = z.output<typeof IngestorHealthResponse>;
type IngestionRun = z.output<typeof RunResult>;

const statusClass = (ok: boolean) => `pill ${ok ? 'healthy' : 'degraded'}`;

function PluginCard({ plugin, version }: { plugin: PluginSummary; version: string }) {
  const [health, setHealth] = useState<PluginHealth | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    // A drop-in that failed to load has no model to ask: its error is the whole story.
    if (plugin.status === 'error') return;
    healthReport<PluginHealth>(`/api/v1/plugins/${encodeURIComponent(plugin.name)}/health`).then(setHealth, (err: unknown) =>
      setError(describeFailure(err)),
    );
  }, [plugin.name, plugin.status, version]);
  const status = health?.status ?? plugin.status;
  return html`<li class="card" data-plugin=${plugin.name}>
    <h2><a href=${href('plugins', plugin.name)}>${plugin.name}</a> <small class="muted">v${plugin.version}</small></h2>
    ${plugin.description && html`<p>${plugin.description}</p>`}
    <dl class="facts" data-testid="plugin-health">
      <dt>Health</dt><dd><span class=${statusClass(status === 'ready')}>${status}</span></dd>
      ${plugin.task && html`<dt>Task</dt><dd>${plugin.task}</dd>`}
      ${health?.loaded_at && html`<dt>Loaded</dt><dd>${new Date(health.loaded_at).toLocaleTimeString()} in ${Math.round(health.load_ms ?? 0)} ms (${health.loads}×)</dd>`}
      <dt>File</dt><dd class="mono">${plugin.file}</dd>
    </dl>
    ${(health?.error ?? plugin.error) && html`<pre class="error-text">${health?.error ?? plugin.error}</pre>`}
    ${error && html`<p class="alert" role="alert">${error}</p>`}
    <h3>Last runs</h3>
    <${LastCalls} resource="plugin" name=${plugin.name} refresh=${version} limit=${5} />
  </li>`;
}

function IngestionRunLine({ run }: { run: IngestionRun }) {
  const d = run.documents;
  return html`<p data-testid="ingestion-run">
    <span class=${statusClass(run.status === 'completed')}>${run.status}</span>
    ${new Date(run.started_at).toLocaleTimeString()} · ${run.resources} resources · ${d.created} created, ${d.updated} updated, ${d.unchanged} unchanged, ${d.deleted} deleted
    <small class="muted">${Math.round(run.duration_ms)} ms</small>
    ${run.failures.length > 0 && html`<ul class="plain">${run.failures.map((f) => html`<li class="bad"><span class="mono">${f.resource}</span>: ${f.error}</li>`)}</ul>`}
  </p>`;
}

function IngestorCard({ ingestor, version }: { ingestor: Ingestor; version: string }) {
  const base = `/api/v1/ingestion/${encodeURIComponent(ingestor.name)}`;
  const [info, setInfo] = useState<IngestorDetails | null>(null);
  const [health, setHealth] = useState<IngestorHealth | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [runs, setRuns] = useState(0);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (ingestor.status === 'error') return;
    getJson<IngestorDetails>(base).then(setInfo, (err: unknown) => setError(describeFailure(err)));
    healthReport<IngestorHealth>(`${base}/health`).then(setHealth, (err: unknown) => setError(describeFailure(err)));
  }, [base, ingestor.status, version, runs]);
  const runNow = async () => {
    setBusy(true);
    try {
      await postJson<IngestionRun>(`${base}/run`, {});
      setError(null);
    } catch (err) {
      setError(`the run failed: ${describeFailure(err)}`);
    } finally {
      setBusy(false);
      setRuns((n) => n + 1);
    }
  };
  return html`<li class="card" data-ingestor=${ingestor.name}>
    <h2><a href=${href('ingestors', ingestor.name)}>${ingestor.name}</a> <small class="muted">v${ingestor.version}</small></h2>
    ${ingestor.description && html`<p>${ingestor.description}</p>`}
    <dl class="facts" data-testid="ingestor-health">
      <dt>Health</dt>
      <dd>${
        ingestor.status === 'error'
          ? html`<span class=${statusClass(false)}>failed to load</span>`
          : health
            ? html`<span class=${statusClass(health.ok)}>${health.ok ? 'healthy' : 'unhealthy'}</span> ${health.detail && html`<small>${health.detail}</small>`}`
            : '…'
      }</dd>
      <dt>Collection</dt><dd class="mono">${ingestor.collection}</dd>
      ${info && html`<dt>Documents</dt><dd>${info.documents} from ${info.resources.length} resources</dd>`}
      <dt>File</dt><dd class="mono">${ingestor.file}</dd>
    </dl>
    ${ingestor.error && html`<pre class="error-text">${ingestor.error}</pre>`}
    ${error && html`<p class="alert" role="alert">${error}</p>`}
    <h3>Last run</h3>
    ${info?.last_run ? html`<${IngestionRunLine} run=${info.last_run} />` : html`<p class="muted">Not run yet.</p>`}
    ${ingestor.status !== 'error' && html`<div class="actions"><button disabled=${busy} onClick=${runNow}>${busy ? 'Running…' : 'Run now'}</button></div>`}
    <h3>Last calls</h3>
    <${LastCalls} resource="ingestor" name=${ingestor.name} refresh=${`${version}:${runs}`} limit=${5} />
  </li>`;
}

export function PluginsView({
  view,
  name,
  workspace,
}: {
  view: 'plugins' | 'ingestors';
  name?: string;
  workspace: WorkspaceSnapshot | null;
}) {
  const [plugins, setPlugins] = useState<PluginSummary[] | null>(null);
  const [ingestors, setIngestors] = useState<Ingestor[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const versionOf = (kind: string, item: string) => workspace?.kinds[kind]?.find((e) => e.name === item)?.version ?? '';
  // A saved, added or removed plugin or ingestor file (or a newly broken one) refreshes the lists.
  const changes = JSON.stringify([workspace?.kinds.plugin, workspace?.kinds.ingestor, workspace?.problems.length]);
  useEffect(() => {
    Promise.all([
      getJson<{ plugins: PluginSummary[] }>('/api/v1/plugins').then((r) => r.plugins),
      getJson<{ ingestors: Ingestor[] }>('/api/v1/ingestors').then((r) => r.ingestors),
    ]).then(
      ([p, i]) => (setPlugins(p), setIngestors(i), setError(null)),
      (err: unknown) => setError(describeFailure(err)),
    );
  }, [changes]);

  const showPlugins = !name || view === 'plugins';
  const showIngestors = !name || view === 'ingestors';
  const shownPlugins = (plugins ?? []).filter((p) => !name || p.name === name);
  const shownIngestors = (ingestors ?? []).filter((i) => !name || i.name === name);
  const kinds = [showPlugins && 'plugin', showIngestors && 'ingestor'].filter(Boolean);
  const problems = (workspace?.problems ?? []).filter((p) => kinds.includes(p.kind) && (!name || p.name === name));
  const title = name ? `${view === 'plugins' ? 'Plugin' : 'Ingestor'} · ${name}` : 'Plugins and ingestors';

  return html`<section class="view plugins-view" aria-labelledby="plugins-title">
    <h1 id="plugins-title" tabindex="-1">${title}</h1>
    <${ProblemBanners} problems=${problems} />
    ${error && html`<p class="alert" role="alert">${error}</p>`}
    ${
      showPlugins &&
      html`<section aria-labelledby="ml-title" data-testid="plugins">
        ${!name && html`<h2 id="ml-title">ML plugins</h2>`}
        ${
          plugins === null
            ? html`<p class="muted">Loading…</p>`
            : shownPlugins.length === 0
              ? html`<p class="muted">${name ? `No plugin named “${name}”.` : html`No ML plugins yet. Drop a file into <code>plugins/</code> (<code>definePlugin</code>).`}</p>`
              : html`<ul class="agent-grid">${shownPlugins.map((p) => html`<${PluginCard} plugin=${p} version=${versionOf('plugin', p.name)} key=${p.name} />`)}</ul>`
        }
      </section>`
    }
    ${
      showIngestors &&
      html`<section aria-labelledby="ing-title" data-testid="ingestors">
        ${!name && html`<h2 id="ing-title">Ingestors</h2>`}
        ${
          ingestors === null
            ? html`<p class="muted">Loading…</p>`
            : shownIngestors.length === 0
              ? html`<p class="muted">${name ? `No ingestor named “${name}”.` : html`No ingestors yet. Drop a file into <code>ingestors/</code> (<code>defineIngestor</code>).`}</p>`
              : html`<ul class="agent-grid">${shownIngestors.map((i) => html`<${IngestorCard} ingestor=${i} version=${versionOf('ingestor', i.name)} key=${i.name} />`)}</ul>`
        }
      </section>`
    }
  </section>`;
}

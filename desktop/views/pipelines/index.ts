/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import type { GraphView as PipelineGraph } from '../../../core/pipelines/graph.js';
import type { RunRecord } from '../../../core/pipelines/schemas.js';
import type { PipelineSummary } from '../../../core/pipelines/service.js';
import type { WorkspaceSnapshot } from '../../../core/ui/workspace.js';
import { ApiError, getJson, postJson } from '../api.js';
import { describeFailure, ProblemBanners, pretty } from '../drop-ins.js';
import { href } from '../router.js';
import { type AgentGraph, GraphView } from '../studio/graph.js';
import { idleRun, type RunView } from '../studio/run-state.js';

/**
 * Pipelines (`pipelines/*.json`): every pipeline with its validation; for one, its step graph (the
 * studio's graph drawing: input → steps → output, lit by the run shown), a form to run it with a
 * JSON input, and its recent runs with each step's status, duration and error.
 */

interface Inspection {
  definition: { description?: string; version?: string };
  validation: { valid: boolean; errors: Array<{ step: string | null; field: string; message: string }> };
  graph: PipelineGraph | null;
  file: string;
}

const START = '__start__';
const END = '__end__';

/** The pipeline's graph in the shape the studio draws: steps typed by kind, input and output as the terminals. */
export function asDrawnGraph(name: string, graph: PipelineGraph): AgentGraph {
  const nodes: AgentGraph['nodes'] = [
    { id: START, name: 'input', type: 'start', metadata: {} },
    ...graph.nodes.map((n) => ({ id: n.id, name: n.id, type: n.kind, metadata: { description: `${n.kind}: ${n.target}` } })),
    { id: END, name: 'output', type: 'end', metadata: {} },
  ];
  const edges: AgentGraph['edges'] = graph.edges.map((e) => {
    const source = e.from === '$input' ? START : e.from;
    return { id: `${source}->${e.to}`, source, target: e.to, condition: e.label === '*' ? null : e.label };
  });
  // Steps nothing leads into start from the input; steps nothing depends on lead to the output.
  for (const node of graph.nodes) {
    if (!edges.some((e) => e.target === node.id))
      edges.push({ id: `${START}->${node.id}`, source: START, target: node.id, condition: null });
    if (!edges.some((e) => e.source === node.id)) edges.push({ id: `${node.id}->${END}`, source: node.id, target: END, condition: null });
  }
  return { agent_name: name, nodes, edges, entry_point: START, end_points: [END] };
}

/** A pipeline run as the graph lights a run: finished steps filled, the failed one red. */
function asRunView(run: RunRecord | null): RunView {
  if (!run) return idleRun;
  const failed = run.steps.find((s) => s.status === 'failed');
  return {
    ...idleRun,
    runId: run.id,
    status:
      run.status === 'completed' ? 'completed' : run.status === 'failed' ? 'error' : run.status === 'canceled' ? 'cancelled' : 'running',
    active: run.steps.find((s) => s.status === 'running')?.name ?? null,
    visited: run.steps.filter((s) => s.status === 'completed').map((s) => s.name),
    error: failed ? { node: failed.name, message: failed.error ?? 'failed' } : null,
  };
}

function PipelineList({ pipelines }: { pipelines: PipelineSummary[] }) {
  if (pipelines.length === 0)
    return html`<p class="muted">No pipelines in this workspace yet. Save a definition as <code>pipelines/&lt;name&gt;.json</code>, or POST it to <code>/api/v1/pipelines</code>.</p>`;
  return html`<ul class="agent-grid" data-testid="pipeline-list">
    ${pipelines.map(
      (p) => html`<li class="card" data-pipeline=${p.name}>
        <h2><a href=${href('pipelines', p.name)}>${p.name}</a> ${p.version && html`<small class="muted">v${p.version}</small>`}</h2>
        <p>${p.description}</p>
        <p><span class=${`pill ${p.valid ? 'healthy' : 'degraded'}`}>${p.valid ? 'valid' : 'invalid'}</span> ${p.steps} steps</p>
        ${p.errors.length > 0 && html`<ul class="plain">${p.errors.map((e) => html`<li class="bad">${e.step ? `${e.step}.` : ''}${e.field}: ${e.message}</li>`)}</ul>`}
      </li>`,
    )}
  </ul>`;
}

function RunDetail({ run }: { run: RunRecord }) {
  return html`<div class="pipeline-run" data-testid="pipeline-run" data-status=${run.status}>
    <p>
      <span class=${`pill ${run.status === 'completed' ? 'healthy' : 'degraded'}`}>${run.status}</span>
      ${run.duration_ms !== null && html` <small class="muted">${Math.round(run.duration_ms)} ms</small>`}
      ${run.error && html` <span class="bad">${run.failed_step ? `${run.failed_step}: ` : ''}${run.error}</span>`}
    </p>
    <table>
      <thead><tr><th scope="col">Step</th><th scope="col">Target</th><th scope="col">Status</th><th scope="col">Time</th><th scope="col">Output or error</th></tr></thead>
      <tbody>
        ${run.steps.map(
          (s) => html`<tr data-step=${s.name} data-status=${s.status}>
            <td>${s.name}</td>
            <td class="mono">${s.kind}: ${s.target}</td>
            <td>${s.status}</td>
            <td>${s.duration_ms !== null ? `${Math.round(s.duration_ms)} ms` : ''}</td>
            <td>${s.error ? html`<span class="bad">${s.error}</span>` : html`<pre class="json">${pretty(s.output ?? null).slice(0, 600)}</pre>`}</td>
          </tr>`,
        )}
      </tbody>
    </table>
    ${run.status === 'completed' && html`<h3>Output</h3><pre class="json" data-testid="pipeline-output">${pretty(run.output ?? null)}</pre>`}
  </div>`;
}

function PipelineDetail({ name, version }: { name: string; version: string }) {
  const base = `/api/v1/pipelines/${encodeURIComponent(name)}`;
  const [inspection, setInspection] = useState<Inspection | null>(null);
  const [runs, setRuns] = useState<RunRecord[]>([]);
  const [shown, setShown] = useState<RunRecord | null>(null);
  const [input, setInput] = useState('{}');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [refresh, setRefresh] = useState(0);
  useEffect(() => {
    getJson<Inspection>(base).then(setInspection, (err: unknown) => setError(describeFailure(err)));
  }, [base, version]);
  useEffect(() => {
    getJson<{ runs: RunRecord[] }>(`${base}/runs`).then(
      (r) => setRuns(r.runs),
      (err: unknown) => setError(describeFailure(err)),
    );
  }, [base, refresh]);

  const run = async (e: Event) => {
    e.preventDefault();
    let body: unknown;
    try {
      body = JSON.parse(input || '{}');
    } catch (err) {
      setError(`The input is not valid JSON: ${(err as Error).message}`);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      setShown(await postJson<RunRecord>(`${base}/run`, body));
    } catch (err) {
      // A failed step answers 502/504 with the run record beside `detail`; the run list has it.
      setError(describeFailure(err));
      if (err instanceof ApiError && (err.status === 502 || err.status === 504)) setShown(null);
    } finally {
      setBusy(false);
      setRefresh((n) => n + 1);
    }
  };
  // After a run, the newest record is the one to show (a failed run comes back only in the list).
  const current = shown ?? runs[0] ?? null;

  return html`<div class="drop-in-detail">
    ${error && html`<p class="alert" role="alert">${error}</p>`}
    ${
      inspection &&
      !inspection.validation.valid &&
      html`<div class="alert" role="alert" data-testid="pipeline-invalid">
        <strong>This pipeline cannot run:</strong>
        <ul class="plain">${inspection.validation.errors.map((e) => html`<li>${e.step ? `${e.step}.` : ''}${e.field}: ${e.message}</li>`)}</ul>
      </div>`
    }
    <div class="studio-grid pipeline-grid">
      <section class="card graph-panel" aria-labelledby="pl-graph">
        <h2 id="pl-graph">Graph</h2>
        ${
          inspection?.graph
            ? html`<${GraphView}
              graph=${asDrawnGraph(name, inspection.graph)}
              run=${asRunView(current)}
              breakpoints=${[]}
              onToggleBreakpoint=${() => {}}
              readOnly=${true}
              testId="pipeline-graph"
            />
            <p class="muted">Waves (steps of a wave run in parallel): ${inspection.graph.waves.map((w) => w.join(' + ')).join(' → ')}</p>`
            : html`<p class="muted">${inspection ? 'No graph: the definition is invalid.' : 'Loading graph…'}</p>`
        }
      </section>
      <section class="card" aria-labelledby="pl-run">
        <h2 id="pl-run">Run</h2>
        <form class="composer" onSubmit=${run}>
          <label for="pipeline-input">Input (JSON)</label>
          <textarea id="pipeline-input" class="mono" rows="4" value=${input} onInput=${(e: Event) => setInput((e.target as HTMLTextAreaElement).value)}></textarea>
          <button class="primary" type="submit" disabled=${busy}>${busy ? 'Running…' : 'Run pipeline'}</button>
        </form>
        ${current ? html`<${RunDetail} run=${current} />` : html`<p class="muted">No runs yet.</p>`}
      </section>
    </div>
    <section class="card" aria-labelledby="pl-runs">
      <h2 id="pl-runs">Runs</h2>
      ${
        runs.length === 0
          ? html`<p class="muted">No runs yet.</p>`
          : html`<table data-testid="pipeline-runs">
            <thead><tr><th scope="col">Started</th><th scope="col">Status</th><th scope="col">Time</th><th scope="col">Failed step</th><th scope="col"></th></tr></thead>
            <tbody>
              ${runs.map(
                (r) => html`<tr data-run=${r.id} aria-selected=${current?.id === r.id}>
                  <td title=${r.started_at}>${new Date(r.started_at).toLocaleTimeString()}</td>
                  <td><span class=${`pill ${r.status === 'completed' ? 'healthy' : 'degraded'}`}>${r.status}</span></td>
                  <td>${r.duration_ms !== null ? `${Math.round(r.duration_ms)} ms` : ''}</td>
                  <td>${r.failed_step ?? ''}</td>
                  <td><button class="small" onClick=${() => setShown(r)}>Show</button></td>
                </tr>`,
              )}
            </tbody>
          </table>`
      }
    </section>
  </div>`;
}

export function PipelinesView({ name, workspace }: { name?: string; workspace: WorkspaceSnapshot | null }) {
  const [pipelines, setPipelines] = useState<PipelineSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const changes = JSON.stringify([workspace?.kinds.pipeline, workspace?.problems.length]);
  useEffect(() => {
    getJson<{ pipelines: PipelineSummary[] }>('/api/v1/pipelines').then(
      (r) => (setPipelines(r.pipelines), setError(null)),
      (err: unknown) => setError(describeFailure(err)),
    );
  }, [changes]);
  const entry = name ? pipelines?.find((p) => p.name === name) : undefined;
  const version = (workspace?.kinds.pipeline ?? []).find((p) => p.name === name)?.version ?? '';
  const problems = (workspace?.problems ?? []).filter((p) => p.kind === 'pipeline' && (!name || p.name === name));
  return html`<section class="view pipelines-view" aria-labelledby="pipelines-title">
    <h1 id="pipelines-title" tabindex="-1">${name ? `Pipeline · ${name}` : 'Pipelines'}</h1>
    <${ProblemBanners} problems=${problems} />
    ${error && html`<p class="alert" role="alert">${error}</p>`}
    ${!name && pipelines && html`<${PipelineList} pipelines=${pipelines} />`}
    ${name && pipelines && !entry && problems.length === 0 && html`<p class="alert" role="alert">No pipeline named “${name}” in this workspace. <a href=${href('pipelines')}>All pipelines</a></p>`}
    ${entry && html`<p>${entry.description}</p><${PipelineDetail} name=${entry.name} version=${version} key=${entry.name} />`}
  </section>`;
}

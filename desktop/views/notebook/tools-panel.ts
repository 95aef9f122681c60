/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { z } from 'zod';
import type { AlgorithmMatchResponse, SmartPrepResponse } from '../../../core/notebook/intel/schemas.js';
import { ApiError, getJson, request } from '../api.js';

/**
 * The notebook's tools panel (spec 3, Part A, data intelligence; routes in
 * core/notebook/intel/routes.ts): for a variable the notebook defines, smart preprocessing
 * suggestions and algorithm-match recommendations, each with code that can be inserted as a new
 * cell; and the 13 built-in tools, the read-only ones openable here.
 *
 * Both analyses run inside the notebook's kernel on the variable's current value, so the cell that
 * defines it must have run; the server says so (404 with the defined names) and that detail is
 * shown as it is.
 */

/** GET /api/smartprep/{var}. */
type SmartPrep = z.output<typeof SmartPrepResponse>;

/** GET /api/algorithm-match/{var}. */
type AlgorithmMatch = z.output<typeof AlgorithmMatchResponse>;

const SCORE_NAME: Record<AlgorithmMatch['task_type'], string> = { classification: 'accuracy', regression: 'R²', clustering: 'silhouette' };

type Tool = {
  n: number;
  name: string;
  method: 'GET' | 'POST';
  /** The route; `{nb}` and `{variable}` are filled from the panel. */
  path: string;
  what: string;
  /** GET tools that need nothing more than the notebook (and, for lineage, the variable) open here. */
  opens: boolean;
};

/** The 13 tools as core/notebook/intel/routes.ts serves them, numbered as there. */
export const TOOLS: readonly Tool[] = [
  { n: 1, name: 'Profiler', method: 'GET', path: '/api/notebooks/{nb}/tools/profile', what: 'time and heap change per cell', opens: true },
  { n: 2, name: 'Benchmark', method: 'POST', path: '/api/notebooks/{nb}/tools/benchmark', what: 'run one cell N times', opens: false },
  { n: 3, name: 'Data validator', method: 'POST', path: '/api/notebooks/{nb}/tools/validate', what: 'rules on a data frame', opens: false },
  {
    n: 4,
    name: 'Code analyzer',
    method: 'GET',
    path: '/api/notebooks/{nb}/tools/analyze',
    what: 'undefined and unused names, complexity',
    opens: true,
  },
  {
    n: 5,
    name: 'Execution history',
    method: 'GET',
    path: '/api/notebooks/{nb}/tools/history',
    what: 'every run with duration and outcome',
    opens: true,
  },
  {
    n: 6,
    name: 'Lineage',
    method: 'GET',
    path: '/api/notebooks/{nb}/tools/lineage/{variable}',
    what: 'upstream and downstream of a variable',
    opens: true,
  },
  { n: 7, name: 'Environment', method: 'GET', path: '/api/tools/environment', what: 'Node, machine, packages', opens: true },
  { n: 8, name: 'Package installer', method: 'POST', path: '/api/tools/packages', what: 'npm install into notebooks/', opens: false },
  { n: 9, name: 'Converter', method: 'POST', path: '/api/tools/convert', what: '.nb.ts ↔ .ipynb', opens: false },
  { n: 10, name: 'Diff', method: 'POST', path: '/api/tools/diff', what: 'two notebooks cell by cell', opens: false },
  { n: 11, name: 'Snippets', method: 'GET', path: '/api/tools/snippets', what: 'the snippet library', opens: true },
  {
    n: 12,
    name: 'Cell dependencies',
    method: 'GET',
    path: '/api/notebooks/{nb}/tools/dependencies',
    what: 'the reactive graph',
    opens: true,
  },
  { n: 13, name: 'Search', method: 'GET', path: '/api/tools/search', what: 'names, sources and outputs across notebooks', opens: false },
];

/** JSON shown for an opened tool is cut here: an environment listing can run to megabytes. */
const TOOL_OUTPUT_LIMIT = 6000;

const describe = (err: unknown) =>
  err instanceof ApiError ? `${err.status}: ${typeof err.detail === 'string' ? err.detail : JSON.stringify(err.detail)}` : String(err);

function toolPath(tool: Tool, notebook: string, variable: string): string {
  return tool.path.replace('{nb}', encodeURIComponent(notebook)).replace('{variable}', encodeURIComponent(variable));
}

function InsertButton({ label, onInsert }: { label: string; onInsert: () => Promise<void> }) {
  const [busy, setBusy] = useState(false);
  return html`<button
    class="small"
    aria-label=${label}
    disabled=${busy}
    onClick=${async () => {
      setBusy(true);
      try {
        await onInsert();
      } finally {
        setBusy(false);
      }
    }}
  >
    Insert as cell
  </button>`;
}

function SmartPrepResult({ result, onInsert }: { result: SmartPrep; onInsert: (source: string, name: string) => Promise<void> }) {
  return html`<div data-testid="smartprep">
    <p class="muted">${result.rows} rows × ${result.columns} columns · ${result.total_issues} ${result.total_issues === 1 ? 'issue' : 'issues'}</p>
    ${
      result.suggestions.length === 0
        ? html`<p class="muted">Nothing to prepare: no issue found in ${result.variable}.</p>`
        : html`<ul class="plain suggestions">
          ${result.suggestions.map(
            (s) => html`<li class="suggestion" data-type=${s.type}>
              <div><span class=${`pill severity-${s.severity}`}>${s.severity}</span> <strong>${s.title}</strong></div>
              <p class="muted">${s.reason}</p>
              <details>
                <summary>Code (defines <code>${s.fixed_as}</code>)</summary>
                <pre class="code">${s.code}</pre>
              </details>
              <${InsertButton} label=${`Insert "${s.title}" as a cell`} onInsert=${() => onInsert(s.code, s.fixed_as)} />
            </li>`,
          )}
        </ul>`
    }
  </div>`;
}

function AlgorithmMatchResult({ result, onInsert }: { result: AlgorithmMatch; onInsert: (source: string, name: string) => Promise<void> }) {
  const { n_samples, n_features } = result.data_characteristics;
  return html`<div data-testid="algorithm-match">
    <p class="muted">${result.task_type} · ${n_samples} samples · ${n_features} features · score: ${SCORE_NAME[result.task_type]}</p>
    ${
      result.recommendations.length === 0
        ? html`<p class="muted">No candidate could be scored within the time budget.</p>`
        : html`<ol class="plain suggestions">
          ${result.recommendations.map(
            (r) => html`<li class="suggestion" data-algorithm=${r.name}>
              <div><strong>${r.name}</strong> <span class="mono">${r.score.toFixed(3)}</span></div>
              <small class="muted">${r.speed} · interpretability ${r.interpretability}</small>
              ${r.reasons.length > 0 && html`<ul class="reasons">${r.reasons.map((reason) => html`<li>${reason}</li>`)}</ul>`}
              <details>
                <summary>Code</summary>
                <pre class="code">${r.code}</pre>
              </details>
              <${InsertButton} label=${`Insert ${r.name} as a cell`} onInsert=${() => onInsert(r.code, '')} />
            </li>`,
          )}
        </ol>`
    }
  </div>`;
}

function ToolList({ notebook, variable }: { notebook: string; variable: string }) {
  const [open, setOpen] = useState<{ tool: Tool; text: string; failed: boolean } | null>(null);
  const outputRef = useRef<HTMLDivElement>(null);
  // The output is drawn below the list, past the side panel's fold: bring it on screen when it opens.
  useEffect(() => {
    if (open) outputRef.current?.scrollIntoView({ block: 'nearest' });
  }, [open?.tool, open?.text]);
  const show = async (tool: Tool) => {
    setOpen({ tool, text: 'Loading…', failed: false });
    try {
      const answer = await getJson<unknown>(toolPath(tool, notebook, variable));
      const text = JSON.stringify(answer, null, 2);
      setOpen({
        tool,
        text:
          text.length > TOOL_OUTPUT_LIMIT
            ? `${text.slice(0, TOOL_OUTPUT_LIMIT)}\n… (${text.length - TOOL_OUTPUT_LIMIT} more characters)`
            : text,
        failed: false,
      });
    } catch (err) {
      setOpen({ tool, text: describe(err), failed: true });
    }
  };
  return html`<div>
    <ol class="plain tool-list" data-testid="tool-list">
      ${TOOLS.map((tool) => {
        const needsVariable = tool.path.includes('{variable}');
        return html`<li data-tool=${tool.n}>
          <span class="tool-name">${tool.n}. ${tool.name}</span>
          ${
            tool.opens
              ? html`<button class="small" aria-label=${`Open ${tool.name}`} disabled=${needsVariable && !variable} onClick=${() => void show(tool)}>Open</button>`
              : html`<small class="muted mono">${tool.method}</small>`
          }
          <small class="muted">${tool.what}</small>
        </li>`;
      })}
    </ol>
    ${
      open &&
      html`<div class="tool-output" data-testid="tool-output" ref=${outputRef} tabindex="-1">
      <h4>${open.tool.name} <small class="muted mono">${toolPath(open.tool, notebook, variable)}</small></h4>
      <pre class=${open.failed ? 'error-text' : 'code'}>${open.text}</pre>
    </div>`
    }
  </div>`;
}

/**
 * @example
 * html`<${ToolsPanel} notebook="sales.nb.ts" variables=${['sales']} onInserted=${reload} />`
 */
export function ToolsPanel({
  notebook,
  variables,
  onInserted,
}: {
  notebook: string;
  variables: string[];
  onInserted: (cellId: string) => Promise<void> | void;
}) {
  const [variable, setVariable] = useState(variables[0] ?? '');
  const [target, setTarget] = useState('');
  const [busy, setBusy] = useState<'smartprep' | 'match' | null>(null);
  const [prep, setPrep] = useState<SmartPrep | null>(null);
  const [match, setMatch] = useState<AlgorithmMatch | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [inserted, setInserted] = useState<string | null>(null);

  // Cells come and go: keep the choice while its variable still exists, else take the first.
  useEffect(() => {
    if (!variables.includes(variable)) setVariable(variables[0] ?? '');
  }, [variables.join('\n')]);

  const query = () => {
    const params = new URLSearchParams({ notebook });
    if (target.trim()) params.set('target', target.trim());
    return params.toString();
  };
  const analyse = async (kind: 'smartprep' | 'match') => {
    setBusy(kind);
    setError(null);
    setInserted(null);
    try {
      if (kind === 'smartprep') setPrep(await getJson<SmartPrep>(`/api/smartprep/${encodeURIComponent(variable)}?${query()}`));
      else setMatch(await getJson<AlgorithmMatch>(`/api/algorithm-match/${encodeURIComponent(variable)}?${query()}`));
    } catch (err) {
      if (kind === 'smartprep') setPrep(null);
      else setMatch(null);
      setError(describe(err));
    } finally {
      setBusy(null);
    }
  };
  const insert = async (source: string, name: string) => {
    try {
      const cell = await request<{ id: string; name: string }>('POST', `/api/notebooks/${encodeURIComponent(notebook)}/cells`, {
        cell_type: 'code',
        source,
        name,
      });
      setInserted(cell.name || cell.id);
      await onInserted(cell.id);
    } catch (err) {
      setError(describe(err));
    }
  };

  return html`<div class="tools-panel" data-testid="tools-panel">
    <form class="tools-form" onSubmit=${(e: Event) => (e.preventDefault(), void analyse('smartprep'))}>
      <label>Variable
        <select value=${variable} disabled=${variables.length === 0} onChange=${(e: Event) => setVariable((e.target as HTMLSelectElement).value)}>
          ${variables.map((name) => html`<option value=${name}>${name}</option>`)}
        </select>
      </label>
      <label>Target <input value=${target} placeholder="column (optional)" onInput=${(e: Event) => setTarget((e.target as HTMLInputElement).value)} /></label>
      <div class="actions">
        <button type="submit" disabled=${!variable || busy !== null}>${busy === 'smartprep' ? 'Analysing…' : 'Suggest preparation'}</button>
        <button type="button" disabled=${!variable || busy !== null} onClick=${() => void analyse('match')}>${busy === 'match' ? 'Scoring…' : 'Match algorithms'}</button>
      </div>
    </form>
    ${variables.length === 0 && html`<p class="muted">No cell defines a variable yet.</p>`}
    ${error && html`<p class="alert" role="alert">${error}</p>`}
    ${inserted && html`<p class="notice" role="status">Inserted cell ${inserted}.</p>`}
    ${prep && html`<h3>Preparation · ${prep.variable}</h3><${SmartPrepResult} result=${prep} onInsert=${insert} />`}
    ${match && html`<h3>Algorithms · ${match.variable}</h3><${AlgorithmMatchResult} result=${match} onInsert=${insert} />`}
    <h3>Tools</h3>
    <${ToolList} notebook=${notebook} variable=${variable} />
  </div>`;
}

/**
 * Pipelines (spec document 1, resource table; document 2, "Pipeline step using an endpoint"): a named
 * list of steps, each calling an endpoint, an agent, an ML plugin or a notebook cell, with inputs
 * mapped from the pipeline's input and from earlier steps' results. Saved as `pipelines/<name>.json`
 * and loaded by discovery as the `pipeline` drop-in kind (see kind.ts).
 *
 * References (strings starting with `$.`):
 *   $.input, $.input.*           the pipeline's whole input
 *   $.input.<path>               a field of it (`.`-separated; numeric segments index arrays)
 *   $.steps.<step>.aggregated…   an endpoint step's aggregated value (and a path into it)
 *   $.steps.<step>.output…       an agent step's response object or a plugin step's prediction
 * A step's `input` is either one reference (the whole input of the step) or an object whose values
 * are references or literals, resolved recursively through nested objects and arrays. A literal
 * string that must start with `$` is written with `$$` (`"$$.5"` is the text `$.5`).
 *
 * Dependencies come only from `$.steps` references; steps that do not depend on each other run in
 * parallel.
 */
import { z } from 'zod';

export const PIPELINE_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const STEP_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

export const STEP_KINDS = ['endpoint', 'agent', 'plugin', 'notebook'] as const;
export type StepKind = (typeof STEP_KINDS)[number];

/**
 * Shape only; the meaning (targets exist, references resolve, no cycle) is checked by
 * `validatePipeline`, which reports every problem with its step and field.
 */
export const PipelineStep = z
  .object({
    /** Step name, used in `$.steps.<name>` references. */
    name: z.string().regex(STEP_NAME, 'step name must be letters, digits, _ or -, starting with a letter or _'),
    endpoint: z.string().optional(),
    agent: z.string().optional(),
    plugin: z.string().optional(),
    /** A workspace notebook, as a path inside `notebooks/` (`sales.nb.ts`, `team/q3.ipynb`). */
    notebook: z.string().optional(),
    /** Endpoint steps only: which declared method to run (default: the endpoint's first). */
    method: z.string().optional(),
    /** Notebook steps only (and required there): the code cell to run, by id or by unique name. */
    cell: z.string().min(1, 'cell must name a cell').optional(),
    input: z.union([z.string(), z.record(z.string(), z.unknown())]).default({}),
    /**
     * Steps that must complete before this one although it uses none of their results (the
     * notebook export lists a cell's upstream cells here). A failed one skips this step.
     */
    after: z.array(z.string()).optional(),
    /**
     * Longest the step may run, any kind; past it the step is stopped (its signal aborts: an agent
     * run is cancelled, an upstream call cut, a notebook cell's kernel interrupted) and fails the
     * run with "timed out after N ms". No default: a step runs as long as its own limits allow.
     */
    timeout_ms: z.number().int().positive().max(86_400_000, 'timeout_ms is at most one day').optional(),
    description: z.string().optional(),
  })
  .strict();
export type PipelineStep = z.output<typeof PipelineStep>;

export const PipelineDefinition = z
  .object({
    name: z.string().regex(PIPELINE_NAME, 'pipeline name must be lowercase letters, digits, - or _'),
    description: z.string().default(''),
    version: z.string().default('0.0.0'),
    /**
     * JSON Schema of the run input (pipelines are JSON files, so not zod). Checked before any step
     * runs: a failing input is a 422 naming the field, as for every other resource.
     */
    input_schema: z.record(z.string(), z.unknown()).optional(),
    steps: z.array(PipelineStep).min(1, 'a pipeline needs at least one step'),
    /** What the run returns (a reference or a mapping). Default: the value of every final step, by name. */
    output: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  })
  .strict();
export type PipelineDefinition = z.output<typeof PipelineDefinition>;
/** A definition as written (defaults not filled in): what the API accepts and files hold. */
export type PipelineDefinitionInput = z.input<typeof PipelineDefinition>;

/** One problem in a definition: which step (null for the pipeline itself), which field, what. */
export interface PipelineProblem {
  step: string | null;
  field: string;
  message: string;
}

export interface ValidationReport {
  valid: boolean;
  errors: PipelineProblem[];
  /** Steps grouped in waves that can run in parallel (only when valid). */
  waves: string[][];
}

/**
 * The value of a notebook step (`$.steps.<step>.output`): the cell in JSON form.
 * - `value`: the value of the cell's last expression as JSON — a data frame as all its rows, `md`,
 *   `html` and `chart` values as their JSON (a chart's spec) or text, anything else as
 *   `JSON.stringify` sees it (bigints as strings); null when the cell has no value.
 * - `outputs`: everything the cell printed and displayed, in Jupyter's nbformat 4 output shapes
 *   (the notebook's own rendering of the value included).
 */
export interface NotebookStepOutput {
  notebook: string;
  cell: string;
  /** The cell's name in the notebook ('' when unnamed). */
  name: string;
  value: unknown;
  outputs: unknown[];
}

export type RunStatus = 'running' | 'completed' | 'failed' | 'canceled';
export type StepStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped' | 'canceled';

export interface StepRecord {
  name: string;
  kind: StepKind;
  target: string;
  /** Notebook steps: the cell's id. */
  cell?: string;
  status: StepStatus;
  depends_on: string[];
  input: unknown;
  output: unknown;
  /** Endpoint steps: the per-upstream results. */
  upstreams?: unknown[];
  error: string | null;
  started_at: string | null;
  duration_ms: number | null;
}

export interface RunRecord {
  id: string;
  pipeline: string;
  version: string;
  status: RunStatus;
  principal: string;
  input: unknown;
  output: unknown;
  error: string | null;
  /** Name of the step that failed the run. */
  failed_step: string | null;
  started_at: string;
  finished_at: string | null;
  duration_ms: number | null;
  task_id: string | null;
  steps: StepRecord[];
}

// ---- what the routes take and answer, for the OpenAPI document ---------------------------------

export const PipelineParams = z.object({ name: z.string() });
export const PipelineRunParams = z.object({ name: z.string(), id: z.string() });

const ProblemView = z.object({ step: z.string().nullable(), field: z.string(), message: z.string() });

/**
 * A definition as a client writes it. The service checks a body itself (`validatePipeline`) so a
 * 422 lists every problem with its step and field, not only the first that zod finds: this schema
 * documents the shape, the handlers pass the body as sent.
 */
export const PipelineDraft = z
  .object({
    name: z.string(),
    description: z.string().optional(),
    version: z.string().optional(),
    steps: z.array(
      z
        .object({
          name: z.string(),
          endpoint: z.string().optional(),
          agent: z.string().optional(),
          plugin: z.string().optional(),
          notebook: z.string().optional().describe('A notebook path inside notebooks/; runs `cell` in a kernel of this run'),
          method: z.string().optional(),
          cell: z.string().optional().describe('Notebook steps: the code cell, by id or unique name'),
          input: z.unknown(),
          after: z.array(z.string()).optional().describe('Steps that must complete first without passing a value'),
        })
        .describe(
          'One of endpoint, agent, plugin or notebook; input values may be references: $.input, $.input.<field>, $.steps.<step>.aggregated|output[.<field>]. A notebook step hands its input to its cells as `pipelineInput`.',
        ),
    ),
    output: z.unknown().optional(),
  })
  .describe('A pipeline definition, saved as pipelines/<name>.json');

/** The views and bodies below are read only by the routes: built on first use (`z.lazy`, core/http/route.ts). */
export const ValidationReportView = z.lazy(() =>
  z.object({ valid: z.boolean(), errors: z.array(ProblemView), waves: z.array(z.array(z.string())) }),
);

/** A task of the board (core/tasks), as the async and batch routes answer it. */
export const PipelineTaskView = z.lazy(() =>
  z.object({ id: z.string(), kind: z.string(), target: z.string(), status: z.string() }).loose(),
);

/** `?format=mermaid`: the graph as text/plain instead of JSON. */
export const GraphQuery = z.lazy(() => z.object({ format: z.literal('mermaid').optional() }));

/** Body of `/run/batch`: one run per input (the service names a bad field itself). */
export const BatchRunBody = z.lazy(() => z.object({ inputs: z.array(z.unknown()).min(1) }));

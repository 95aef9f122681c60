/**
 * Every error code the server answers with: `HANGAR_<AREA>_<THING>`, its HTTP status and its message
 * template (`{name}` placeholders are filled by `fail(code, params)`, core/kernel/errors.ts). One
 * file, as Fastify keeps its `FST_ERR_*` codes, so a client author reads the whole contract in one
 * place. Codes are stable; messages may be reworded. Data only: this file imports nothing.
 *
 * Errors without an entry (Fastify's own, a status set by a drop-in) get a generic code by status
 * (`genericCode` in errors.ts). A test checks that every code here is well formed and used.
 */

export interface ErrorSpec {
  readonly status: number;
  readonly message: string;
}

export const ERROR_CATALOGUE = {
  // ── http: requests at the HTTP boundary: validation, auth, limits
  // (end http)
  // ── dropins: drop-ins that exist but do not load
  HANGAR_DROPIN_UNAVAILABLE: { status: 503, message: '{kind} "{name}" failed to load: {problem} ({where}); fix the file and it reloads' },
  // (end dropins)
  // ── agents: agents, runs, models, tools, approvals
  HANGAR_AGENT_NOT_FOUND: { status: 404, message: 'agent "{agent}" not found' },
  HANGAR_AGENT_PROMPT_NOT_FOUND: { status: 404, message: "prompt version '{version}' not found for agent '{agent}'; known versions: {known}" },
  HANGAR_AGENT_STREAM_NOT_FOUND: { status: 404, message: "stream '{stream}' not found" },
  HANGAR_AGENT_APPROVAL_NOT_FOUND: { status: 404, message: "no pending approval '{approval}' for thread '{thread}' of agent '{agent}'" },
  HANGAR_AGENT_TOOL_NOT_FOUND: { status: 404, message: 'tool "{tool}" not found' },
  HANGAR_AGENT_SUSPENDED: { status: 202, message: 'suspended at a human-approval step; approve or reject it on its thread' },
  HANGAR_AGENT_CANCELLED: { status: 499, message: 'the request was cancelled before the agent finished' },
  HANGAR_AGENT_FAILED: { status: 500, message: "agent '{agent}' failed{at}: {problem}" },
  HANGAR_AGENT_TIMEOUT: { status: 504, message: "agent '{agent}' did not finish within {ms} ms" },
  HANGAR_AGENT_MODEL_NOT_CONFIGURED: {
    status: 503,
    message:
      '{who} but none is configured: set model.baseUrl (and model.model, model.apiKey) in hangar.config.json, or the environment variables HANGAR_MODEL__BASE_URL, HANGAR_MODEL__MODEL and HANGAR_MODEL__API_KEY (e.g. http://127.0.0.1:11434/v1 for Ollama)',
  },
  HANGAR_AGENT_MODEL_API_KEY: { status: 503, message: 'model.apiKey: {problem}' },
  HANGAR_AGENT_MODEL_REFUSED: { status: 502, message: 'model endpoint answered {upstream}: {problem}' },
  HANGAR_AGENT_MODEL_UNREACHABLE: { status: 502, message: 'model endpoint unreachable: {problem}' },
  HANGAR_AGENT_MODEL_TIMEOUT: { status: 504, message: 'model endpoint timed out' },
  HANGAR_AGENT_MODEL_FAILED: { status: 502, message: 'model call failed: {problem}' },
  HANGAR_AGENT_MODEL_SCHEMA_MISMATCH: { status: 502, message: "the model's structured answer did not match the schema after one repair: {problem}" },
  // (end agents)
  // ── threads: threads and their messages
  HANGAR_THREAD_NOT_FOUND: { status: 404, message: "thread '{thread}' not found for agent '{agent}'" },
  HANGAR_THREAD_EXISTS: { status: 409, message: "thread '{thread}' already exists for agent '{agent}'" },
  HANGAR_THREAD_NO_CHANGES: { status: 400, message: 'no fields to update: give title and/or metadata' },
  HANGAR_THREAD_FORK_OUT_OF_RANGE: { status: 422, message: "body.message_index: {index} is out of range; thread '{thread}' has {count} message(s){valid}" },
  HANGAR_THREAD_STORAGE_UNCONFIGURED: { status: 400, message: 'thread storage is not configured' },
  // (end threads)
  // ── tasks: the task board
  HANGAR_TASK_DISABLED: { status: 501, message: 'the task subsystem is disabled (setting tasks.enabled); asynchronous work needs it' },
  HANGAR_TASK_NOT_FOUND: { status: 404, message: 'task {task} not found' },
  HANGAR_TASK_KIND_UNKNOWN: { status: 422, message: 'body.kind: no task handler is registered for kind "{kind}"' },
  HANGAR_TASK_STOPPING: { status: 503, message: 'Hangar is stopping; the task was not accepted' },
  HANGAR_TASK_NOT_FINISHED: { status: 409, message: 'task {task} is {status}; its result is available once it finishes' },
  HANGAR_TASK_NOT_WAITING: { status: 409, message: 'task {task} is {status}, not waiting for input' },
  HANGAR_TASK_BATCH_NOT_ARRAY: { status: 422, message: '{where}.inputs: expected an array of inputs' },
  HANGAR_TASK_BATCH_EMPTY: { status: 422, message: '{where}.inputs: at least one input is needed' },
  HANGAR_TASK_BATCH_TOO_LARGE: { status: 422, message: '{where}.inputs: at most {max} inputs per batch (got {count})' },
  // (end tasks)
  // ── a2a: A2A and MCP
  // (end a2a)
  // ── endpoints: custom endpoints and upstreams
  // (end endpoints)
  // ── pipelines: pipelines
  HANGAR_PIPELINE_NOT_FOUND: { status: 404, message: "pipeline '{pipeline}' not found" },
  HANGAR_PIPELINE_INVALID: { status: 422, message: '{problems}' },
  HANGAR_PIPELINE_FILE_BROKEN: { status: 422, message: '{file}: {problem}' },
  HANGAR_PIPELINE_FILE_ELSEWHERE: { status: 409, message: "pipeline '{pipeline}' is defined in {file}; change or delete that file" },
  HANGAR_PIPELINE_INPUT_INVALID: { status: 422, message: '{problems}' },
  HANGAR_PIPELINE_STEP_FAILED: { status: 502, message: "pipeline '{pipeline}' failed at step '{step}': {problem}" },
  HANGAR_PIPELINE_STEP_TIMEOUT: { status: 504, message: "pipeline '{pipeline}' failed at step '{step}': {problem}" },
  HANGAR_PIPELINE_OUTPUT_FAILED: { status: 502, message: "pipeline '{pipeline}' {problem}" },
  HANGAR_PIPELINE_RUN_CANCELED: { status: 499, message: 'pipeline run canceled' },
  HANGAR_PIPELINE_RUN_NOT_FOUND: { status: 404, message: "run '{run}' of pipeline '{pipeline}' not found" },
  HANGAR_PIPELINE_TASKS_DISABLED: { status: 501, message: 'async and batch runs need the task subsystem (tasks.enabled)' },
  // (end pipelines)
  // ── predictors: ML plugins
  // (end predictors)
  // ── ingestion: ingestors
  // (end ingestion)
  // ── logs: the invocation log
  HANGAR_LOG_DISABLED: { status: 501, message: 'invocation log history is off; turn it on with the setting logs.enabled (HANGAR_LOGS__ENABLED=true)' },
  HANGAR_LOG_NOT_FOUND: { status: 404, message: 'invocation log {id} not found' },
  HANGAR_LOG_NO_ANALYSIS: { status: 404, message: 'no analysis yet; POST /api/v1/logs/analyze computes one' },
  // (end logs)
  // ── control: the control plane
  HANGAR_CONTROL_DISABLED: { status: 404, message: 'the control plane is disabled (setting control.enabled)' },
  HANGAR_CONTROL_TOKEN_REQUIRED: { status: 401, message: 'the control plane needs its token in the X-Control-Token header' },
  HANGAR_CONTROL_RESOURCE_TYPE_UNKNOWN: { status: 404, message: 'unknown resource type "{resource}"; expected one of {expected}' },
  HANGAR_CONTROL_RESOURCE_NOT_FOUND: { status: 404, message: '{resource} {name} not found' },
  HANGAR_CONTROL_MAINTENANCE: { status: 503, message: 'Hangar is in maintenance{message}' },
  HANGAR_CONTROL_RESOURCE_DISABLED: { status: 503, message: '{resource} {name} is disabled by an operator{reason}' },
  HANGAR_CONTROL_RESOURCE_DRAINING: { status: 503, message: '{resource} {name} is draining and takes no new calls{reason}' },
  // (end control)
  // ── feedback: feedback
  // (end feedback)
  // ── platform: platform routes, status, metrics
  HANGAR_PLATFORM_STARTING: { status: 503, message: 'discovery in progress' },
  HANGAR_PLATFORM_STOPPING: { status: 503, message: 'shutting down' },
  HANGAR_PLATFORM_STORE_UNWRITABLE: { status: 503, message: '{problem}' },
  HANGAR_PLATFORM_MAINTENANCE: { status: 503, message: 'in maintenance{note}' },
  // (end platform)
  // ── storage: the store
  // (end storage)
  // ── studio: studio debug runs
  HANGAR_STUDIO_GRAPH_INVALID: { status: 500, message: "agent '{agent}' has an invalid graph: {problem}" },
  HANGAR_STUDIO_BREAKPOINTS_UNKNOWN: { status: 422, message: "{field}: {names} {verb} of agent '{agent}'; its nodes are: {nodes}" },
  HANGAR_STUDIO_THREAD_REQUIRED: { status: 422, message: 'body.thread_id: required when checkpoint_id is given (a checkpoint belongs to a thread)' },
  HANGAR_STUDIO_THREAD_NOT_FOUND: { status: 404, message: "thread '{thread}' not found for agent '{agent}' (it has no checkpoints)" },
  HANGAR_STUDIO_THREAD_BUSY: { status: 409, message: "thread '{thread}' of agent '{agent}' has a run in progress; wait for it, or cancel it ({cancel})" },
  HANGAR_STUDIO_THREAD_BUSY_DELETE: { status: 409, message: "thread '{thread}' of agent '{agent}' has a studio run in progress; cancel it ({cancel}), then delete the thread" },
  HANGAR_STUDIO_THREAD_PAUSED: { status: 409, message: "thread '{thread}' of agent '{agent}' is paused before node '{node}'; resume it ({resume}) or start from a checkpoint with checkpoint_id" },
  HANGAR_STUDIO_THREAD_NOT_PAUSED: {
    status: 409,
    message: "thread '{thread}' of agent '{agent}' is not paused: its latest checkpoint (step {step}, {source}) ended the run; start a new run on the thread, or re-run from an earlier checkpoint with checkpoint_id",
  },
  HANGAR_STUDIO_CHECKPOINT_NOT_FOUND: { status: 404, message: "checkpoint '{checkpoint}' not found in thread '{thread}' of agent '{agent}'" },
  HANGAR_STUDIO_RUN_NOT_FOUND: { status: 404, message: "run '{run}' not found for agent '{agent}'" },
  HANGAR_STUDIO_RUN_NOT_EXECUTING: { status: 409, message: "run '{run}' is not executing (status '{status}')" },
  HANGAR_STUDIO_STATE_EMPTY_UPDATE: { status: 400, message: 'no fields to update' },
  // (end studio)
  // ── coderun: coding runs, teams, gates, login
  // (end coderun)
  // ── notebook: notebooks and their sessions
  HANGAR_NOTEBOOK_NOT_FOUND: { status: 404, message: 'notebook {notebook} not found' },
  HANGAR_NOTEBOOK_NOT_OPEN: { status: 404, message: 'notebook {notebook} is not open' },
  HANGAR_NOTEBOOK_EXISTS: { status: 409, message: 'notebook {notebook} already exists' },
  HANGAR_NOTEBOOK_PATH_INVALID: { status: 422, message: 'invalid notebook path "{notebook}": use a path inside notebooks/ without ".."' },
  HANGAR_NOTEBOOK_PATH_NOT_NOTEBOOK: { status: 422, message: 'invalid notebook path "{notebook}": expected a .nb.ts or .ipynb file' },
  HANGAR_NOTEBOOK_PATH_OUTSIDE: { status: 422, message: 'invalid notebook path "{notebook}"' },
  HANGAR_NOTEBOOK_PATH_LEAVES_FOLDER: { status: 422, message: 'notebook path "{notebook}" leaves the notebooks folder' },
  HANGAR_NOTEBOOK_FORMAT_INVALID: { status: 422, message: '{problem}' },
  HANGAR_NOTEBOOK_CELL_NOT_FOUND: { status: 404, message: 'cell {cell} not found' },
  HANGAR_NOTEBOOK_ORDER_INVALID: { status: 422, message: 'order must list every cell id of the notebook exactly once' },
  HANGAR_NOTEBOOK_NO_FILE: { status: 409, message: 'this notebook has no file to save to' },
  HANGAR_NOTEBOOK_BODY_NOT_OBJECT: { status: 400, message: 'request body must be a JSON object or array' },
  HANGAR_NOTEBOOK_BODY_INVALID_JSON: { status: 400, message: '{problem}' },
  // (end notebook)
  // ── notebook-intel: notebook data intelligence, schedules, tools
  HANGAR_NOTEBOOK_INTEL_VARIABLE_NOT_FOUND: { status: 404, message: 'variable "{variable}" is not defined {where}' },
  HANGAR_NOTEBOOK_INTEL_VARIABLE_AMBIGUOUS: { status: 409, message: 'variable "{variable}" is defined in several notebooks ({notebooks}); say which with ?notebook=' },
  HANGAR_NOTEBOOK_INTEL_ANALYSIS_NOT_FOUND: { status: 404, message: '{problem}' },
  HANGAR_NOTEBOOK_INTEL_DATA_UNSUITABLE: { status: 422, message: '{problem}' },
  HANGAR_NOTEBOOK_INTEL_PATTERN_NOT_FOUND: { status: 404, message: 'pattern {pattern} not found' },
  HANGAR_NOTEBOOK_INTEL_PATTERN_EXISTS: { status: 409, message: 'a pattern named "{name}" already exists (id {pattern}); pick another name or delete it first' },
  HANGAR_NOTEBOOK_INTEL_PATTERN_PARAMS_MISSING: { status: 422, message: 'pattern {pattern} needs params: {missing} (e.g. {example})' },
  HANGAR_NOTEBOOK_INTEL_CELL_NOT_CODE: { status: 422, message: 'cell {cell} is a {type} cell; only code cells can be benchmarked' },
  HANGAR_NOTEBOOK_INTEL_CELL_CANNOT_RUN: { status: 422, message: 'cell {cell} cannot run: {problem}' },
  HANGAR_NOTEBOOK_INTEL_BENCHMARK_RUN_FAILED: { status: 422, message: 'run {run} of cell {cell} failed: {problem}' },
  HANGAR_NOTEBOOK_INTEL_DEFINER_NOT_FOUND: { status: 404, message: 'no cell of {notebook} defines {variable}' },
  HANGAR_NOTEBOOK_INTEL_INSTALL_FAILED: { status: 422, message: 'npm install {package} failed (exit {exit}):\n{output}' },
  HANGAR_NOTEBOOK_INTEL_SNIPPET_NOT_FOUND: { status: 404, message: 'snippet {snippet} not found' },
  HANGAR_NOTEBOOK_INTEL_TIMEZONE_INVALID: { status: 422, message: 'invalid timezone "{timezone}": {problem}' },
  HANGAR_NOTEBOOK_INTEL_CRON_INVALID: { status: 422, message: 'invalid cron expression "{cron}": {problem}' },
  HANGAR_NOTEBOOK_INTEL_SCHEDULE_NOT_FOUND: { status: 404, message: 'schedule {schedule} not found' },
  // (end notebook-intel)
  // ── ui: the UI and live channel
  // (end ui)
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

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
  HANGAR_HTTP_HOST_NOT_ALLOWED: { status: 403, message: 'host "{host}" is not allowed' },
  HANGAR_HTTP_ORIGIN_NOT_ALLOWED: { status: 403, message: 'origin "{origin}" is not allowed' },
  HANGAR_HTTP_CROSS_ORIGIN: {
    status: 403,
    message: "cross-origin request refused: origin {origin} is not this server's (add it to allowedOrigins to trust it)",
  },
  HANGAR_HTTP_CROSS_SITE: { status: 403, message: 'cross-site request refused (Sec-Fetch-Site: {site})' },
  HANGAR_HTTP_MEDIA_TYPE: {
    status: 415,
    message: 'content type {media} is not accepted here: send the body as JSON with content-type: application/json',
  },
  HANGAR_HTTP_MEDIA_TYPE_MISSING: { status: 415, message: 'a request body needs content-type: application/json' },
  HANGAR_AUTH_MISSING: { status: 401, message: 'missing or invalid credentials' },
  HANGAR_AUTH_INVALID: { status: 401, message: 'invalid token' },
  HANGAR_RATE_LIMITED: { status: 429, message: 'rate limit exceeded; retry after {seconds}s' },
  HANGAR_HTTP_BAD_PATH: { status: 400, message: 'the request path is not valid percent-encoding: {path}' },
  HANGAR_HTTP_PATH_CONTROL_CHARACTER: { status: 422, message: 'the request path contains a control character' },
  HANGAR_HTTP_BODY_TOO_DEEP: {
    status: 400,
    message: 'request body nests arrays and objects deeper than {limit} levels (setting bodyDepthLimit)',
  },
  HANGAR_HTTP_BODY_TOO_LARGE: { status: 413, message: 'request body too large' },
  HANGAR_SSE_RESUME_POINT: { status: 422, message: '{where}: expected a non-negative integer' },
  // (end http)
  // ── dropins: drop-ins that exist but do not load
  HANGAR_DROPIN_UNAVAILABLE: { status: 503, message: '{kind} "{name}" failed to load: {problem} ({where}); fix the file and it reloads' },
  HANGAR_DROPIN_OUT_OF_MEMORY: { status: 500, message: 'out of memory: {kind} {name} exceeded {mb} MB' },
  HANGAR_DROPIN_UNRESPONSIVE: {
    status: 500,
    message: "{kind} '{name}' stopped answering: its host's event loop was blocked for more than {ms} ms, so the host was restarted",
  },
  HANGAR_DROPIN_HOST_RESTARTED: { status: 500, message: "{kind} '{name}' was stopped: its host was restarted ({why})" },
  HANGAR_WORKER_ENTRY_FAILED: {
    status: 500,
    message: 'worker thread entry {file} failed to load, so the pool cannot run anything until restarted: {why}',
  },
  // (end dropins)
  // ── agents: agents, runs, models, tools, approvals
  HANGAR_AGENT_NOT_FOUND: { status: 404, message: 'agent "{agent}" not found' },
  HANGAR_AGENT_PROMPT_NOT_FOUND: {
    status: 404,
    message: "prompt version '{version}' not found for agent '{agent}'; known versions: {known}",
  },
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
  HANGAR_AGENT_MODEL_SCHEMA_MISMATCH: {
    status: 502,
    message: "the model's structured answer did not match the schema after one repair: {problem}",
  },
  HANGAR_AGENT_MCP_UNKNOWN_SERVER: { status: 500, message: "agent '{agent}' lists '{ref}', but mcp.servers has no server '{server}'" },
  HANGAR_AGENT_MCP_UNAVAILABLE: { status: 502, message: "MCP server '{server}' is not available: {problem}" },
  HANGAR_AGENT_MCP_NO_TOOL: {
    status: 500,
    message: "agent '{agent}' lists '{ref}', but MCP server '{server}' has no such tool (it has: {tools})",
  },
  HANGAR_AGENT_OUT_OF_MEMORY: { status: 500, message: 'out of memory: agent {agent} exceeded {mb} MB' },
  HANGAR_AGENT_UNRESPONSIVE: {
    status: 500,
    message: "agent '{agent}' stopped answering: its host's event loop was blocked for more than {ms} ms, so the host was restarted",
  },
  HANGAR_AGENT_HOST_RESTARTED: { status: 500, message: "agent '{agent}' was stopped: its host was restarted ({why})" },
  // (end agents)
  // ── threads: threads and their messages
  HANGAR_THREAD_NOT_FOUND: { status: 404, message: "thread '{thread}' not found for agent '{agent}'" },
  HANGAR_THREAD_EXISTS: { status: 409, message: "thread '{thread}' already exists for agent '{agent}'" },
  HANGAR_THREAD_NO_CHANGES: { status: 400, message: 'no fields to update: give title and/or metadata' },
  HANGAR_THREAD_FORK_OUT_OF_RANGE: {
    status: 422,
    message: "body.message_index: {index} is out of range; thread '{thread}' has {count} message(s){valid}",
  },
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
  HANGAR_A2A_TASK_INPUT_INVALID: { status: 422, message: '{problem}' },
  HANGAR_A2A_MESSAGE_NO_TEXT: {
    status: 422,
    message: 'body.message: no readable text (expected message.parts[].text, message.content or message.text)',
  },
  HANGAR_A2A_CLIENT_CLOSED: { status: 499, message: 'client closed the request' },
  // (end a2a)
  // ── endpoints: custom endpoints and upstreams
  HANGAR_ENDPOINT_NOT_FOUND: { status: 404, message: "endpoint '{endpoint}' not found" },
  HANGAR_ENDPOINT_IS_ROUTER: { status: 409, message: "endpoint '{endpoint}' is an express router: call its routes over HTTP ({url}/…)" },
  HANGAR_ENDPOINT_METHOD_NOT_ALLOWED: { status: 405, message: "endpoint '{endpoint}' does not accept {method}; allowed: {allowed}" },
  HANGAR_ENDPOINT_METHOD_UNDECLARED: {
    status: 422,
    message: "query.method: endpoint '{endpoint}' does not declare {method}; declared: {declared}",
  },
  HANGAR_ENDPOINT_NO_ROUTE: {
    status: 404,
    message: "endpoint '{endpoint}' has no route {route} (its path is {path}, with /async and /batch; also /health and /info)",
  },
  HANGAR_ENDPOINT_ROUTE_METHOD_NOT_ALLOWED: { status: 405, message: '{route} accepts {allowed}' },
  HANGAR_ENDPOINT_TASKS_DISABLED: { status: 501, message: '{variant} runs need the task subsystem (tasks.enabled)' },
  HANGAR_ENDPOINT_UPSTREAM_FAILED: { status: 502, message: "endpoint '{endpoint}' failed ({rule}): {reasons}" },
  HANGAR_ENDPOINT_UPSTREAM_TIMEOUT: { status: 504, message: "endpoint '{endpoint}' failed ({rule}): {reasons}" },
  HANGAR_ENDPOINT_OUTPUT_INVALID: { status: 502, message: "endpoint '{endpoint}': aggregated answer fails the output model: {problems}" },
  HANGAR_ENDPOINT_CLIENT_GONE: { status: 499, message: 'client closed the request' },
  HANGAR_ENDPOINT_TIMEOUT: { status: 504, message: "endpoint '{endpoint}' did not finish within {ms} ms" },
  HANGAR_ENDPOINT_HANDLER_FAILED: { status: 500, message: "endpoint '{endpoint}' handler failed: {problem}" },
  HANGAR_ENDPOINT_HANDLER_OUTPUT_INVALID: {
    status: 500,
    message: "endpoint '{endpoint}' handler returned a value failing its output model: {problems}",
  },
  HANGAR_ENDPOINT_ROUTER_NO_ROUTE: { status: 404, message: "endpoint '{endpoint}' has no route for {method} {path}" },
  HANGAR_ENDPOINT_ROUTER_FAILED: { status: 500, message: "endpoint '{endpoint}' router failed: {problem}" },
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
  HANGAR_PLUGIN_NOT_FOUND: { status: 404, message: 'plugin {plugin} not found' },
  HANGAR_PLUGIN_LOADING: { status: 503, message: 'plugin {plugin} is loading; retry shortly' },
  HANGAR_PLUGIN_LOAD_FAILED: {
    status: 503,
    message: 'plugin {plugin} failed to load: {problem}; fix it and POST /api/v1/plugins/{plugin}/reload',
  },
  HANGAR_PLUGIN_INPUT_INVALID: { status: 422, message: '{problems}' },
  HANGAR_PLUGIN_PREDICT_INVALID: { status: 422, message: 'plugin {plugin}: {problem}' },
  HANGAR_PLUGIN_PREDICT_FAILED: { status: 500, message: 'plugin {plugin}: {problem}' },
  HANGAR_PLUGIN_PREDICT_UNAVAILABLE: { status: 503, message: 'plugin {plugin}: {problem}' },
  HANGAR_PLUGIN_PREDICT_TIMEOUT: { status: 504, message: 'plugin {plugin}: {problem}' },
  // (end predictors)
  // ── ingestion: ingestors
  HANGAR_INGESTOR_NOT_FOUND: { status: 404, message: 'ingestor {ingestor} not found' },
  HANGAR_INGESTOR_INPUT_INVALID: { status: 422, message: '{problems}' },
  HANGAR_INGESTOR_DISCOVERY_FAILED: { status: 503, message: 'ingestor {ingestor} could not discover its resources: {problem}' },
  HANGAR_INGESTOR_DUPLICATE_RESOURCE: {
    status: 500,
    message: 'ingestor {ingestor} discovered resource id "{resource}" twice; resource ids must be unique',
  },
  HANGAR_INGESTOR_RESOURCE_NOT_FOUND: { status: 404, message: 'ingestor {ingestor} has no resource {resources}' },
  HANGAR_INGESTOR_RUN_CANCELLED: { status: 499, message: 'ingestion run cancelled' },
  HANGAR_INGESTOR_TIMEOUT: { status: 504, message: "ingestor '{ingestor}' did not finish within {ms} ms" },
  // (end ingestion)
  // ── logs: the invocation log
  HANGAR_LOG_DISABLED: {
    status: 501,
    message: 'invocation log history is off; turn it on with the setting logs.enabled (HANGAR_LOGS__ENABLED=true)',
  },
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
  HANGAR_STORAGE_WRITE_FAILED: { status: 503, message: 'the store could not write {what}: {reason}' },
  HANGAR_STORAGE_READ_FAILED: { status: 503, message: 'the store could not answer a read: {reason}' },
  HANGAR_STORAGE_UNREACHABLE: { status: 503, message: 'the store at {where} cannot be reached: {reason}' },
  // (end storage)
  // ── studio: studio debug runs
  HANGAR_STUDIO_GRAPH_INVALID: { status: 500, message: "agent '{agent}' has an invalid graph: {problem}" },
  HANGAR_STUDIO_BREAKPOINTS_UNKNOWN: { status: 422, message: "{field}: {names} {verb} of agent '{agent}'; its nodes are: {nodes}" },
  HANGAR_STUDIO_THREAD_REQUIRED: {
    status: 422,
    message: 'body.thread_id: required when checkpoint_id is given (a checkpoint belongs to a thread)',
  },
  HANGAR_STUDIO_THREAD_NOT_FOUND: { status: 404, message: "thread '{thread}' not found for agent '{agent}' (it has no checkpoints)" },
  HANGAR_STUDIO_THREAD_BUSY: {
    status: 409,
    message: "thread '{thread}' of agent '{agent}' has a run in progress; wait for it, or cancel it ({cancel})",
  },
  HANGAR_STUDIO_THREAD_BUSY_DELETE: {
    status: 409,
    message: "thread '{thread}' of agent '{agent}' has a studio run in progress; cancel it ({cancel}), then delete the thread",
  },
  HANGAR_STUDIO_THREAD_PAUSED: {
    status: 409,
    message:
      "thread '{thread}' of agent '{agent}' is paused before node '{node}'; resume it ({resume}) or start from a checkpoint with checkpoint_id",
  },
  HANGAR_STUDIO_THREAD_NOT_PAUSED: {
    status: 409,
    message:
      "thread '{thread}' of agent '{agent}' is not paused: its latest checkpoint (step {step}, {source}) ended the run; start a new run on the thread, or re-run from an earlier checkpoint with checkpoint_id",
  },
  HANGAR_STUDIO_CHECKPOINT_NOT_FOUND: {
    status: 404,
    message: "checkpoint '{checkpoint}' not found in thread '{thread}' of agent '{agent}'",
  },
  HANGAR_STUDIO_RUN_NOT_FOUND: { status: 404, message: "run '{run}' not found for agent '{agent}'" },
  HANGAR_STUDIO_RUN_NOT_EXECUTING: { status: 409, message: "run '{run}' is not executing (status '{status}')" },
  HANGAR_STUDIO_STATE_EMPTY_UPDATE: { status: 400, message: 'no fields to update' },
  // (end studio)
  // ── coderun: coding runs, teams, gates, login
  HANGAR_CODERUN_SESSION_REQUIRED: {
    status: 401,
    message:
      'coding-run routes need the session token (header X-Hangar-Session); it is printed at launch and stored in .hangar/code-session.json',
  },
  HANGAR_CODERUN_LOGIN_SESSION_REQUIRED: {
    status: 401,
    message: 'minting a login link needs the session token (header X-Hangar-Session), stored in .hangar/code-session.json',
  },
  HANGAR_CODERUN_LOGIN_LINK_USED: {
    status: 401,
    message:
      'this login link was already used (each link works once); read the session token in .hangar/code-session.json of the workspace, or run `hangar login` for a fresh link',
  },
  HANGAR_CODERUN_LOGIN_LINK_UNKNOWN: {
    status: 401,
    message:
      'this login link is not valid for this server (links end when Hangar restarts); read the session token in .hangar/code-session.json of the workspace, or run `hangar login` for a fresh link',
  },
  HANGAR_CODERUN_LOGIN_LINK_EXPIRED: {
    status: 401,
    message:
      'this login link has expired (links last 24 hours); read the session token in .hangar/code-session.json of the workspace, or run `hangar login` for a fresh link',
  },
  HANGAR_CODERUN_INVALID: { status: 422, message: '{problems}' },
  HANGAR_CODERUN_CONFIG_NOT_OBJECT: { status: 422, message: 'body: expected an object of configuration keys' },
  HANGAR_CODERUN_CONFIG_READ_ONLY: {
    status: 422,
    message: '{keys} {verb} read-only over HTTP; set {them} under "code" in hangar.config.json',
  },
  HANGAR_CODERUN_REPO_OUTSIDE: {
    status: 403,
    message: 'repo: {repo} is outside the workspace and the folders listed in code.repos (hangar.config.json)',
  },
  HANGAR_CODERUN_REPO_NOT_FOLDER: { status: 422, message: 'repo: {repo} is not a folder' },
  HANGAR_CODERUN_REPO_BUSY: { status: 409, message: 'run {run} is already working on {repo}' },
  HANGAR_CODERUN_MODEL_NOT_CONFIGURED: {
    status: 503,
    message:
      'a coding run needs a chat model but none is configured: set model.baseUrl in hangar.config.json or HANGAR_MODEL__BASE_URL (e.g. http://127.0.0.1:11434/v1 for Ollama)',
  },
  HANGAR_CODERUN_MODEL_UNAVAILABLE: { status: 503, message: '{problem}' },
  HANGAR_CODERUN_TEAMS_UNKNOWN: { status: 422, message: 'teams: unknown team {teams}' },
  HANGAR_CODERUN_TEAM_NOT_FOUND: { status: 404, message: "team '{team}' not found" },
  HANGAR_CODERUN_TEAM_EXISTS: { status: 409, message: "team '{team}' already exists" },
  HANGAR_CODERUN_TEAM_SHIPPED: {
    status: 409,
    message: "team '{team}' is shipped with Hangar (teams/{team}); override it with PUT instead of deleting it",
  },
  HANGAR_CODERUN_TEAM_FILE_INVALID: { status: 422, message: 'team override {file} is not valid JSON: {problem}' },
  HANGAR_CODERUN_OWNERSHIP_OVERLAP: { status: 422, message: 'ownership must be disjoint: {overlaps}' },
  HANGAR_CODERUN_RUN_NOT_FOUND: { status: 404, message: "run '{run}' not found" },
  HANGAR_CODERUN_NO_RUNS: { status: 404, message: 'no run yet' },
  HANGAR_CODERUN_RUN_NOT_RUNNING: { status: 409, message: "run '{run}' is not running" },
  HANGAR_CODERUN_PLAN_NOT_READY: { status: 409, message: "run '{run}' has no plan yet" },
  HANGAR_CODERUN_PLAN_NOT_EDITABLE: { status: 409, message: "run '{run}' is {status}; plans are edited at the approval gate" },
  HANGAR_CODERUN_NOT_AWAITING_APPROVAL: { status: 409, message: "run '{run}' is {status}, not awaiting approval" },
  HANGAR_CODERUN_PLAN_PROBLEMS: { status: 409, message: 'the plan cannot be approved yet: {problems}' },
  HANGAR_CODERUN_PLAN_NO_TEAM: { status: 422, message: "teams: no team '{team}' to remove" },
  HANGAR_CODERUN_PLAN_NO_TASK: { status: 422, message: "tasks: no task '{task}' to remove" },
  HANGAR_CODERUN_PLAN_EMPTY: { status: 422, message: 'tasks: a plan needs at least one task' },
  HANGAR_CODERUN_PLAN_TOO_LARGE: { status: 422, message: 'tasks: the plan size cap is {cap} tasks (edit leaves {count})' },
  HANGAR_CODERUN_SQUAD_UNKNOWN: { status: 422, message: "squad: unknown team '{team}'" },
  HANGAR_CODERUN_TASK_NOT_FOUND: { status: 404, message: "task '{task}' not found in {where}" },
  HANGAR_CODERUN_TASK_RUN_FINISHED: {
    status: 409,
    message:
      "task {task} belongs to run '{run}', which has {status}; a finished run is not resumed, so the task cannot be {done} there. To redo it, start a new run: POST /api/runs {body} or `hangar code run {request} --repo {repo}`. A new run starts from the repository's HEAD: merge {branch} first if it should build on this run's finished tasks.",
  },
  HANGAR_CODERUN_TASK_DISPATCHED: { status: 409, message: 'task {task} is {state}; only tasks not yet dispatched can be changed' },
  HANGAR_CODERUN_TASK_NOT_ON_BOARD: { status: 409, message: 'task {task} is not on the board yet' },
  HANGAR_CODERUN_TASK_BUSY: { status: 409, message: 'task {task} is being worked on ({state}); it can be retried once it is stuck' },
  HANGAR_CODERUN_TASK_NOT_RETRYABLE: { status: 409, message: '{problem}' },
  HANGAR_CODERUN_TASK_UNASSIGNABLE: { status: 422, message: "task {task} cannot be un-assigned: its files are owned by team '{owner}'" },
  HANGAR_CODERUN_TASK_OWNED_ELSEWHERE: {
    status: 422,
    message: "task {task} cannot go to team '{team}': {file} is owned by team '{owner}'",
  },
  HANGAR_CODERUN_TASK_SQUAD_NOT_IN_PLAN: { status: 422, message: "task {task}: squad '{team}' is not a team of this plan" },
  HANGAR_CODERUN_TASK_OWNERS_SEVERAL: { status: 422, message: 'task {task}: its files are owned by several teams ({owners}); split it' },
  HANGAR_CODERUN_TASK_SQUAD_MISMATCH: {
    status: 422,
    message: "task {task} cannot stay with team '{team}': its files are owned by team '{owner}'",
  },
  HANGAR_CODERUN_ROLE_UNSTAFFABLE: {
    status: 422,
    message: "task {task}: role '{role}' cannot be staffed (no generic agent and no roster agent has it)",
  },
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
  HANGAR_NOTEBOOK_SAVE_CONFLICT: {
    status: 409,
    message: '{file} changed on disk since this session read it: reload it, or save with force to overwrite',
  },
  HANGAR_NOTEBOOK_MERGE_CONFLICT: {
    status: 409,
    message: '{count} cell(s) of {file} changed both here and on disk: pick a side for each (resolutions) and merge again',
  },
  HANGAR_NOTEBOOK_MERGE_UNREADABLE: {
    status: 409,
    message: '{file} on disk does not parse as a notebook, so there is nothing to merge with ({reason}): reload it or overwrite it',
  },
  HANGAR_NOTEBOOK_BODY_NOT_OBJECT: { status: 400, message: 'request body must be a JSON object or array' },
  HANGAR_NOTEBOOK_BODY_INVALID_JSON: { status: 400, message: '{problem}' },
  HANGAR_NOTEBOOK_FIX_NOT_APPLICABLE: { status: 422, message: 'cannot {action} `{name}` in cell {cell}: {why}' },
  // (end notebook)
  // ── notebook-intel: notebook data intelligence, schedules, tools
  HANGAR_NOTEBOOK_INTEL_VARIABLE_NOT_FOUND: { status: 404, message: 'variable "{variable}" is not defined {where}' },
  HANGAR_NOTEBOOK_INTEL_VARIABLE_AMBIGUOUS: {
    status: 409,
    message: 'variable "{variable}" is defined in several notebooks ({notebooks}); say which with ?notebook=',
  },
  HANGAR_NOTEBOOK_INTEL_ANALYSIS_NOT_FOUND: { status: 404, message: '{problem}' },
  HANGAR_NOTEBOOK_INTEL_DATA_UNSUITABLE: { status: 422, message: '{problem}' },
  HANGAR_NOTEBOOK_INTEL_PATTERN_NOT_FOUND: { status: 404, message: 'pattern {pattern} not found' },
  HANGAR_NOTEBOOK_INTEL_PATTERN_EXISTS: {
    status: 409,
    message: 'a pattern named "{name}" already exists (id {pattern}); pick another name or delete it first',
  },
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

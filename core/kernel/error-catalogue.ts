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
  // (end agents)
  // ── threads: threads and their messages
  // (end threads)
  // ── tasks: the task board
  // (end tasks)
  // ── a2a: A2A and MCP
  // (end a2a)
  // ── endpoints: custom endpoints and upstreams
  // (end endpoints)
  // ── pipelines: pipelines
  // (end pipelines)
  // ── predictors: ML plugins
  // (end predictors)
  // ── ingestion: ingestors
  // (end ingestion)
  // ── logs: the invocation log
  // (end logs)
  // ── control: the control plane
  // (end control)
  // ── feedback: feedback
  // (end feedback)
  // ── platform: platform routes, status, metrics
  // (end platform)
  // ── storage: the store
  // (end storage)
  // ── studio: studio debug runs
  // (end studio)
  // ── coderun: coding runs, teams, gates, login
  // (end coderun)
  // ── notebook: notebooks and their sessions
  // (end notebook)
  // ── notebook-intel: notebook data intelligence, schedules, tools
  // (end notebook-intel)
  // ── ui: the UI and live channel
  // (end ui)
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

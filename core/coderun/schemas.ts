/**
 * Records of the coding-run harness (spec 3, Part B): teams, tasks, plans, contract clauses, runs,
 * their configuration and the events they stream. Everything crossing a boundary (drop-in files,
 * project overrides, HTTP bodies, model tool calls) is parsed with these schemas.
 */
import { z } from 'zod';
import { type Team, TeamSchema } from './team-schema.js';

export const Criterion = z.object({
  /** The individually checkable condition. */
  text: z.string().min(1),
  /** Shell command that verifies it (exit 0 = holds). */
  command: z.string().min(1),
});
export type Criterion = z.output<typeof Criterion>;

export const TASK_STATES = ['ready_to_dev', 'in_progress', 'in_review', 'to_scope', 'done'] as const;
export const TaskState = z.enum(TASK_STATES);
export type TaskState = z.output<typeof TaskState>;

/** The fields a planner proposes and an approver edits. */
export const TaskSpec = z.object({
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,40}$/),
  title: z.string().min(1),
  description: z.string().default(''),
  role: z.string().min(1).default('developer'),
  squad: z.string().nullable().default(null),
  acceptance: z.string().default(''),
  criteria: z.array(Criterion).default([]),
  priority: z.number().int().min(0).max(9).default(5),
  files: z.array(z.string().min(1)).default([]),
  dependencies: z.array(z.string()).default([]),
});
export type TaskSpec = z.output<typeof TaskSpec>;

export const RunTask = TaskSpec.extend({
  state: TaskState,
  /** Dispatches so far (bounded by the attempt ceiling). */
  attempts: z.number().int(),
  /** Review rounds used in the current hand (reset on hand-over). */
  reviews: z.number().int(),
  /** The task went to a language corrector once already (a task is handed over at most once). */
  handed_over: z.boolean(),
  assignee: z.string().nullable(),
  /** Reviewer findings carried to whoever works the task next. */
  findings: z.array(z.string()),
  /** Index of the model_escalation ladder rung the task uses. */
  escalation: z.number().int(),
  /** Set for correction tickets: the ticket this task works. */
  ticket: z.string().nullable(),
  commit: z.string().nullable(),
  changed: z.array(z.string()),
  needs_human: z.boolean(),
  note: z.string().nullable(),
});
export type RunTask = z.output<typeof RunTask>;

export const ContractClause = z.object({
  name: z.string().min(1),
  spec: z.string().min(1),
  provider: z.string().min(1),
  consumers: z.array(z.string()).default([]),
});
export type ContractClause = z.output<typeof ContractClause>;

export const PlanSchema = z.object({
  summary: z.string().default(''),
  tasks: z.array(TaskSpec).min(1),
  contract: z.array(ContractClause).default([]),
});
export type Plan = z.output<typeof PlanSchema>;

/** Rule 3: task edits (by id; `remove` drops), team edits (by id; `remove` drops) and additions. */
export const PlanEdit = z.object({
  tasks: z
    .array(
      TaskSpec.partial()
        .extend({ id: z.string().min(1), remove: z.boolean().optional() })
        .strict(),
    )
    .default([]),
  teams: z
    .array(
      TeamSchema.partial()
        .extend({ id: z.string().min(1), remove: z.boolean().optional() })
        .strict(),
    )
    .default([]),
});
export type PlanEdit = z.output<typeof PlanEdit>;

export const GateOutcome = z.enum(['green', 'RED', 'UNVERIFIED']);
export type GateOutcome = z.output<typeof GateOutcome>;

export const GateResult = z.object({
  team: z.string(),
  command: z.string(),
  outcome: GateOutcome,
  exit_code: z.number().nullable(),
  tests: z.number().nullable(),
  reason: z.string(),
  output_tail: z.string(),
  ms: z.number(),
  /** The `CHECK_SIGNATURES` row (gates.ts) that made a failing command UNVERIFIED. */
  signature: z.string().optional(),
  /** A RED result's defect fingerprint, taken from the whole output (board.ts `fingerprint`). */
  fingerprint: z.string().optional(),
});
export type GateResult = z.output<typeof GateResult>;

export const Ticket = z.object({
  id: z.string(),
  team: z.string(),
  /** Identity of the defect: the same defect found again bumps this ticket. */
  fingerprint: z.string(),
  command: z.string(),
  output_tail: z.string(),
  files: z.array(z.string()),
  acceptance: z.string(),
  status: z.enum(['open', 'resolved', 'needs_human']),
  /** How many times the defect was found. */
  count: z.number().int(),
  /** How many times a fix task was staffed for it (re-staffed at most once). */
  staffed: z.number().int(),
});
export type Ticket = z.output<typeof Ticket>;

export const Repairs = z.object({ found: z.number(), resolved: z.number(), restaffed: z.number(), needs_human: z.number() });
export type Repairs = z.output<typeof Repairs>;

/** A task the plan size cap dropped. */
export interface CutTask {
  id: string;
  title: string;
  team: string | null;
}

/**
 * What the plan size cap did to a proposal: every dropped task and the teams it left without work.
 * Reported on `plan_proposed`, kept on the run record (`plan_cut`), named in the summary and shown
 * in the run view, so a cut is never silent.
 */
export interface PlanCut {
  cap: number;
  /** Tasks proposed (after cutting along team boundaries), before the cap. */
  proposed: number;
  dropped: CutTask[];
  /** Teams of the run that had proposed tasks and have none left. */
  teams_without_work: string[];
}

export const RUN_STATUSES = ['planning', 'awaiting_approval', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export interface RunRecord {
  id: string;
  request: string;
  repo: string;
  status: RunStatus;
  created_at: string;
  finished_at: string | null;
  /** Team pins of this run (run-scoped). */
  pins: string[];
  teams: Team[];
  plan: Plan | null;
  /** What the plan size cap dropped (absent on runs recorded before it was reported). */
  plan_cut?: PlanCut | null;
  /** Problems that keep the plan from being approved (a pinned team left without tasks). */
  plan_problems?: string[];
  tasks: RunTask[];
  tickets: Ticket[];
  gates: GateResult[];
  integration: GateResult | null;
  branch: string | null;
  base: string | null;
  contract_file: string | null;
  repairs: Repairs;
  /** One line a person reads: what was proved and what was not. */
  summary: string | null;
  error: string | null;
  /**
   * Team mode only: how many instances have started this run (0 while it waits in the team's
   * queue; 2 when it ran again after the instance running it died). Absent on one machine.
   */
  attempts?: number;
  /** Team mode only: whether the run stops at the approval gate (the instance taking it reads this). */
  require_approval?: boolean;
}

// ---- configuration -------------------------------------------------------------------------

export const CodeConfigSchema = z
  .object({
    team_library: z.boolean().default(true),
    teams: z.array(z.string()).default([]),
    squads: z.boolean().default(true),
    calibrate_budgets: z.boolean().default(false),
    /** role → model name. */
    model_roles: z.record(z.string(), z.string()).default({}),
    /** Models from small to big; a repeatedly failing task steps one rung up. */
    model_escalation: z.array(z.string()).default([]),
    mcp_servers: z.array(z.unknown()).default([]),
    skills_dirs: z.array(z.string()).default([]),
    context_role_budget: z.record(z.string(), z.number()).default({}),
    /** One run-wide bound on concurrent model calls. */
    max_parallel: z.number().int().min(1).max(64).default(2),
    /** Review rounds before the ladder counts as exhausted. */
    review_rounds: z.number().int().min(1).max(10).default(2),
    /** Dispatches of one task before an orphan is no longer re-queued. */
    attempt_ceiling: z.number().int().min(1).max(10).default(3),
    /** Tool-call turns of one agent loop. */
    agent_max_steps: z.number().int().min(1).max(200).default(16),
    command_timeout_ms: z.number().int().min(100).default(120_000),
    /** Default repository for team routes and runs without one (else the workspace root). */
    repo: z.string().optional(),
    /**
     * Folders besides the workspace that `?repo=` (and a run's `repo`) may name, each with
     * everything beneath it; relative to the workspace. Read-only over HTTP: it is the fence.
     */
    repos: z.array(z.string().min(1)).default([]),
    /** Integration check; default: every team's acceptance command again on the whole branch. */
    integration_command: z.string().optional(),
    /** Stop at the approval gate after planning instead of starting at once. */
    require_approval: z.boolean().default(false),
    /** Tokens an agent's context may hold when calibrate_budgets is off. */
    context_budget_tokens: z.number().int().positive().default(8192),
  })
  .strict();
export type CodeConfig = z.output<typeof CodeConfigSchema>;

// ---- HTTP bodies -----------------------------------------------------------------------------

/**
 * The longest request text accepted (about 3,000 words): past it 422, before any matching or model
 * call. A longer brief belongs in a file the request names.
 */
export const MAX_REQUEST_CHARS = 20_000;
const RequestText = z
  .string()
  .min(1)
  .max(MAX_REQUEST_CHARS, `at most ${MAX_REQUEST_CHARS} characters; put a longer brief in a file and name it`);

export const StartRunRequest = z.object({
  request: RequestText,
  repo: z.string().min(1).optional(),
  /** Team pins, for this run only. */
  teams: z.array(z.string()).optional(),
  require_approval: z.boolean().optional(),
});

export const PreselectRequest = z.object({
  request: RequestText,
  repo: z.string().optional(),
  teams: z.array(z.string()).optional(),
});

export const ActivateRequest = z.object({ teams: z.array(z.string()).min(1), repo: z.string().optional() });
export const ManagerRequest = z.object({ name: z.string().min(1).optional(), repo: z.string().optional() });

/** The repository a teams route acts on; a body's `repo` is the fallback (core/coderun/config.ts). */
export const RepoQuery = z.object({ repo: z.string().optional() });
/** `query` (or `run`) reads a past run's team events instead of the latest run's. */
export const ActivityQuery = z.object({ team: z.string().optional(), query: z.string().optional(), run: z.string().optional() });

export const TaskPatch = z
  .object({
    title: z.string().min(1),
    description: z.string(),
    role: z.string().min(1),
    squad: z.string().nullable(),
    acceptance: z.string(),
    priority: z.number().int().min(0).max(9),
    files: z.array(z.string()),
    dependencies: z.array(z.string()),
    run: z.string(),
  })
  .partial()
  .strict();

// ---- events ----------------------------------------------------------------------------------

export type RunEvent =
  | { type: 'run_status'; run: string; status: RunStatus; detail?: string }
  | {
      type: 'plan_proposed';
      run: string;
      /** Tasks the run will work on (after the cap); `proposed` is before it. */
      tasks: number;
      shown: number;
      summary: string;
      proposed: number;
      cap: number;
      dropped: CutTask[];
      teams_without_work: string[];
      /** Problems to solve before approval (the run cannot start while any is left). */
      problems: string[];
    }
  | { type: 'plan_edited'; run: string }
  | { type: 'contract_frozen'; run: string; name: string; provider: string; consumers: string[]; file: string }
  | { type: 'dependency_dropped'; run: string; task: string; dependency: string; reason: string }
  | { type: 'wave'; run: string; wave: number; tasks: string[]; teams: string[] }
  | { type: 'task_update'; run: string; task: string; team: string | null; state: TaskState; note?: string }
  | { type: 'review_pending'; run: string; task: string; team: string | null; reviewer: string }
  | { type: 'tool'; run: string; task: string; team: string | null; tool: string; ok: boolean; detail: string }
  /** A command of `task` wrote into `owner`'s paths; the write was reverted. `command` null: found after the agent loop. */
  | { type: 'fence_violation'; run: string; task: string; team: string | null; owner: string; file: string; command: string | null }
  | { type: 'gate'; run: string; team: string; outcome: GateOutcome; command: string; reason: string }
  | { type: 'ticket'; run: string; team: string; ticket: string; action: 'raised' | 'bumped' | 'resolved' | 'needs_human'; count: number }
  | { type: 'integration'; run: string; outcome: GateOutcome | 'skipped'; reason: string }
  | { type: 'run_finished'; run: string; status: RunStatus; summary: string };

/** The model endpoint as the settings panel shows it: whether a key is set, never the key. */
export const ModelSettingsView = z.object({
  base_url: z.string().nullable(),
  model: z.string(),
  /** `environment` when the key is a `${NAME}` reference (named in `api_key_variable`), `literal` when written out. */
  api_key: z.enum(['none', 'literal', 'environment']),
  api_key_variable: z.string().nullable(),
  timeout_ms: z.number().int(),
  retries: z.number().int(),
});
export type ModelSettingsView = z.output<typeof ModelSettingsView>;

/** The outcome of one real request to the model endpoint: a failure is data, said in words. */
export const ModelConnectionTest = z.object({
  ok: z.boolean(),
  base_url: z.string().nullable(),
  model: z.string(),
  duration_ms: z.number().nullable(),
  /** What the model answered (cut to 200 characters). */
  reply: z.string().nullable(),
  error: z.string().nullable(),
});
export type ModelConnectionTest = z.output<typeof ModelConnectionTest>;

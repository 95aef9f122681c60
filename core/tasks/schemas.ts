/**
 * The task board's records and request bodies. A task is one unit of background work — an agent
 * run, a plugin batch, a pipeline run — with a status, progress, a result or error, and an
 * append-only event log whose sequence doubles as the SSE id.
 *
 * Schemas only a route reads are `z.lazy`: built on first use, not at start (core/http/route.ts).
 */
import { z } from 'zod';

export const TASK_STATUSES = ['submitted', 'working', 'input-required', 'completed', 'failed', 'canceled'] as const;
export const TaskStatus = z.enum(TASK_STATUSES);
export type TaskStatus = z.infer<typeof TaskStatus>;

/** Statuses a task never leaves. */
export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'canceled']);
export const isTerminal = (status: TaskStatus): boolean => TERMINAL_STATUSES.has(status);

/**
 * Statuses in which nothing runs: the terminal ones, and `input-required` (A2A's interrupted
 * state), where the work stopped for a person's answer and `TaskService.resume` may continue it.
 */
export const isSettled = (status: TaskStatus): boolean => status === 'input-required' || TERMINAL_STATUSES.has(status);

export interface TaskProgress {
  /** 0–100. */
  percent: number;
  message: string;
}

export interface Task {
  id: string;
  /** Which registered handler runs it: 'agent', 'plugin.batch', … */
  kind: string;
  /** What it runs on: an agent, plugin, pipeline, ingestor or endpoint name. */
  target: string;
  input: unknown;
  /** Who submitted it; only that principal sees it on the board. */
  principal: string;
  status: TaskStatus;
  progress: TaskProgress;
  result: unknown;
  error: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** Sequence of the newest event; a client resumes its event stream from here. */
  last_sequence: number;
  /** How many times the work started (more than 1 only after an idempotent re-queue on restart). */
  attempts: number;
}

/**
 * One frame of a task's event stream. Every frame carries the task's status and progress at that
 * moment (the spec's A2A event frame), plus what happened:
 * - `status`: the task changed status (`result` / `error` ride on the terminal one);
 * - `progress`: the work reported progress;
 * - `output`: the work emitted something (for agents: a stream frame with response, steps_taken).
 */
export type TaskEventType = 'status' | 'progress' | 'output';

export interface TaskEvent {
  task_id: string;
  sequence: number;
  type: TaskEventType;
  status: TaskStatus;
  progress: TaskProgress;
  timestamp: string;
  data?: unknown;
  result?: unknown;
  error?: string | null;
}

const KIND = /^[a-z][a-z0-9._-]{0,63}$/;

export const SubmitTaskRequest = z.object({
  kind: z.string().regex(KIND, 'expected a task kind such as "agent"'),
  target: z.string().min(1).max(200),
  input: z.unknown().default({}),
  metadata: z.record(z.string(), z.unknown()).default({}),
});
export type SubmitTaskRequest = z.output<typeof SubmitTaskRequest>;

/** `?status=working,submitted&kind=agent&target=hello&limit=20&offset=0` */
export const ListTasksQuery = z.object({
  status: z
    .string()
    .optional()
    .transform((raw) =>
      raw
        ? raw
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : undefined,
    )
    .pipe(z.array(TaskStatus).optional()),
  kind: z.string().min(1).optional(),
  target: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  offset: z.coerce.number().int().min(0).default(0),
});
export type ListTasksQuery = z.output<typeof ListTasksQuery>;

/** A task as the board answers it, for the OpenAPI document. */
export const TaskView = z.lazy(() =>
  z.object({
    id: z.string(),
    kind: z.string(),
    target: z.string(),
    status: TaskStatus,
    progress: z.object({ percent: z.number(), message: z.string() }),
    result: z.unknown(),
    error: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    last_sequence: z.number().int(),
  }),
);

export const TaskParams = z.object({ id: z.string() });

/** `?since=` of an event stream; the handler reads it with `resumePoint` (Last-Event-ID too). */
export const TaskEventsQuery = z.object({ since: z.coerce.number().int().min(0).optional() });

export interface TaskPage {
  tasks: Task[];
  /** Tasks on this page. */
  count: number;
  /** Tasks matching the filter across all pages. */
  total: number;
  limit: number;
  offset: number;
}

export interface CancelOutcome {
  /** False when the task had already finished: cancelling it changed nothing. */
  canceled: boolean;
  message: string;
  task: Task;
}

export interface TaskResult {
  id: string;
  status: TaskStatus;
  result: unknown;
  error: string | null;
}

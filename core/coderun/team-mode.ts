/**
 * Coding runs in team mode (several instances on one PostgreSQL; core/coderun/service.ts's header
 * says how a run moves between them): what the service needs from the team, the requests one
 * instance stores for the instance running a run, and a run's record as a new attempt starts it.
 */
import { randomUUID } from 'node:crypto';
import { type ErrorDetail, fail, HangarError } from '../kernel/errors.js';
import type { Logger } from '../kernel/log.js';
import type { Collection, Store } from '../kernel/store.js';
import type { RunRecord } from './schemas.js';

export type CodeRunTopic = 'coderun-event' | 'coderun-cancel' | 'coderun-request';

/** What coding runs need from the team (core/coderun/subsystem.ts adapts core/storage/team.ts). */
export interface CodeRunTeam {
  /** The team-wide lock that says a run is alive; undefined while another instance holds it. */
  hold(run: string): Promise<{ release(): Promise<void> } | undefined>;
  /**
   * Tell every instance that a run's events were stored, that a person asked to cancel it, or that
   * a request for it (approve, plan edit, task change or retry) was stored under this id.
   */
  announce(topic: CodeRunTopic, id: string): void;
  on(topic: CodeRunTopic, handler: (id: string) => void): () => void;
  /** Hand a stored run to whichever instance takes it from the queue (one job per run, however often sent). */
  dispatch(run: string): Promise<void>;
  /** Whether the run's job still waits, runs, or is due to be retried (start-up recovery leaves those to the queue). */
  queued(run: string): Promise<boolean>;
}

/** How long a cancel asked on another instance waits for the stored record to show it. */
export const CANCEL_ELSEWHERE_MS = 10_000;
/** How long a request for a run on another instance waits for that instance's answer. */
const REQUEST_ELSEWHERE_MS = 10_000;
/** Team mode: instances that may start one run; when the second one dies too, the run ends failed. */
export const MAX_ATTEMPTS = 2;

/**
 * Team mode: approve, plan edit, task change or retry of a run that runs on another instance,
 * stored for that instance to apply (key `<run>:<uuid>`, so only the instance running it reads it),
 * with its answer or refusal stored back for the instance that asked. Deleted once answered.
 */
export interface RunRequest {
  id: string;
  run: string;
  action: 'approve' | 'edit_plan' | 'patch_task' | 'retry_task';
  task?: string;
  body?: unknown;
  state: 'pending' | 'taken' | 'done' | 'refused' | 'expired';
  result?: unknown;
  error?: { status: number; code: string; detail: ErrorDetail; fields: Record<string, unknown> };
  created_at: string;
}

const REQUESTS_COLLECTION = 'coderun_requests';

/** What a run holds before its first step: no plan, board, gates, branch or outcome yet. */
export function unstarted() {
  return {
    status: 'planning' as const,
    finished_at: null,
    plan: null,
    tasks: [],
    tickets: [],
    gates: [],
    integration: null,
    branch: null,
    base: null,
    contract_file: null,
    repairs: { found: 0, resolved: 0, restaffed: 0, needs_human: 0 },
    summary: null,
    error: null,
  } satisfies Partial<RunRecord>;
}

/** A run's record as a new attempt starts it: from the start, nothing of the earlier attempt's work. */
export function restarted(record: RunRecord, attempt: number): RunRecord {
  return { ...record, ...unstarted(), plan_cut: null, plan_problems: [], attempts: attempt };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The run a stored request is for (its key is `<run>:<uuid>`). */
export const runOfRequest = (key: string): string => key.slice(0, key.lastIndexOf(':'));

/** Requests for runs that run on another instance, and answering theirs (`RunRequest`). */
export class RunRequests {
  readonly #requests: Collection<RunRequest>;

  constructor(
    store: Store,
    private readonly team: CodeRunTeam,
    private readonly log: Logger,
  ) {
    this.#requests = store.collection<RunRequest>(REQUESTS_COLLECTION, { shards: 4 });
  }

  /**
   * Store `request` for the instance running `run`, announce it, and answer what that instance
   * answered: its result, or its refusal as the same error. Withdrawn (409 `not running`) when no
   * instance took it within REQUEST_ELSEWHERE_MS; one taken and never answered (its instance died
   * applying it) fails the same way after twice that.
   */
  async ask(run: string, request: Pick<RunRequest, 'action' | 'task' | 'body'>): Promise<unknown> {
    const key = `${run}:${randomUUID()}`;
    await this.#requests.put(key, { id: key, run, ...request, state: 'pending', created_at: new Date().toISOString() });
    this.team.announce('coderun-request', key);
    try {
      const deadline = Date.now() + REQUEST_ELSEWHERE_MS;
      for (;;) {
        const current = await this.#requests.get(key);
        if (current?.state === 'done') return current.result;
        if (current?.error) {
          const { status, detail, fields, code } = current.error;
          throw new HangarError(status, detail, {}, fields, code);
        }
        if (Date.now() > deadline && current?.state !== 'taken') {
          // Withdrawn unless the running instance took it meanwhile (then its answer is awaited).
          let withdrawn = false;
          await this.#requests.update(key, (now) => {
            if (now?.state !== 'pending') return now;
            withdrawn = true;
            return { ...now, state: 'expired' };
          });
          if (withdrawn || !current) throw fail('HANGAR_CODERUN_RUN_NOT_RUNNING', { run });
        }
        if (Date.now() > deadline + REQUEST_ELSEWHERE_MS) throw fail('HANGAR_CODERUN_RUN_NOT_RUNNING', { run });
        await sleep(50);
      }
    } finally {
      await this.#requests.delete(key).catch(() => false);
    }
  }

  /**
   * Take the stored request `key` (unless another instance did, or it was withdrawn), apply it, and
   * store its answer or refusal for the instance that asked.
   */
  async answer(key: string, apply: (request: RunRequest) => Promise<unknown>): Promise<void> {
    try {
      let taken = false;
      const request = await this.#requests.update(key, (current) => {
        if (current?.state !== 'pending') return current;
        taken = true;
        return { ...current, state: 'taken' };
      });
      if (!taken || !request) return;
      let answer: Pick<RunRequest, 'state' | 'result' | 'error'>;
      try {
        answer = { state: 'done', result: await apply(request) };
      } catch (err) {
        const refusal = err instanceof HangarError ? err : new HangarError(500, err instanceof Error ? err.message : String(err));
        answer = {
          state: 'refused',
          error: { status: refusal.status, code: refusal.code, detail: refusal.detail, fields: refusal.fields },
        };
      }
      await this.#requests.put(key, { ...request, ...answer });
    } catch (err) {
      this.log.warn('a request for a coding run from another instance was not answered', { run: runOfRequest(key), error: String(err) });
    }
  }
}

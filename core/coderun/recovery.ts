/**
 * Start-up recovery of coding runs: a run stored as active that no process drives any more (its
 * server crashed or was killed; a clean stop cancels its runs first) is marked failed and its
 * worktree removed (the run's branch keeps the commits of the tasks it finished).
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Store } from '../kernel/store.js';
import type { RunRecord } from './schemas.js';
import type { CodeRunTeam } from './team-mode.js';

/** The statuses of a run some process is (or should be) driving. */
export const ACTIVE: ReadonlyArray<RunRecord['status']> = ['planning', 'awaiting_approval', 'running'];

export const RUNS_COLLECTION = 'coderun_runs';
/** Runs are listed newest first and recovered by status, each from its own index. */
export const RUNS_OPTIONS = { shards: 4, indexes: [['created_at'], ['status']] } as const;

/** A run stored this recently and taken by no instance yet may be between its two writes (record, job). */
const SUBMITTING_MS = 60_000;

/** The worktree folder a run's branch lives in (`hangar/run-<name>`, `<name>` its id or its attempt's). */
function worktreeOf(state: string, record: RunRecord): string {
  const prefix = 'hangar/run-';
  return path.join(state, 'worktrees', record.branch?.startsWith(prefix) ? record.branch.slice(prefix.length) : record.id);
}

/**
 * After a crash or kill, runs stored as active have no process driving them: mark them failed
 * and remove their worktrees (the run branches keep their whole commits). A clean shutdown
 * cancels runs first, so this only finds runs of a process that died. A function of the store,
 * not of the service, so a server recovers at start-up without building the service.
 */
export async function recoverInterruptedRuns(
  store: Store,
  state: string,
  /** Team mode: a run's liveness lock; a run whose lock another instance holds is running there. */
  hold?: CodeRunTeam['hold'],
  /** Team mode: whether a run's queue job still waits, runs or is due to be retried (the queue fails it over). */
  queued?: CodeRunTeam['queued'],
): Promise<string[]> {
  const runs = store.collection<RunRecord>(RUNS_COLLECTION, RUNS_OPTIONS);
  const interrupted: string[] = [];
  for (const stale of (await runs.query({ where: { status: [...ACTIVE] } })).items) {
    if (queued) {
      // Stored a moment ago and not taken yet: its job may be on its way (the submit's second write).
      if (stale.attempts === 0 && Date.now() - Date.parse(stale.created_at) < SUBMITTING_MS) continue;
      // A job the queue still holds: it runs the run, runs it again, or dead-letters it (then it fails).
      if (await queued(stale.id).catch(() => true)) continue;
    }
    const lock = hold && (await hold(stale.id));
    if (hold && !lock) continue;
    try {
      // Read again under the lock: an instance starting at the same time may have marked it first.
      const record = hold ? await runs.get(stale.id) : stale;
      if (!record || !ACTIVE.includes(record.status)) continue;
      const dir = worktreeOf(state, record);
      if (existsSync(dir)) {
        // Imported here: a start with nothing to recover (nearly every one) does not load simple-git.
        const { simpleGit } = await import('simple-git');
        await simpleGit({ baseDir: record.repo })
          .raw(['worktree', 'remove', '--force', dir])
          .catch(() => rm(dir, { recursive: true, force: true }));
      }
      await runs.put(record.id, {
        ...record,
        status: 'failed',
        finished_at: new Date().toISOString(),
        error: 'interrupted: the server stopped during the run',
        summary: `interrupted during ${record.status}; branch ${record.branch ?? '(none)'} keeps the finished tasks' commits`,
      });
      interrupted.push(record.id);
    } finally {
      await lock?.release();
    }
  }
  return interrupted;
}

/**
 * Team mode: runs stored and never sent to the queue — the instance that took the request died
 * between its two writes (the record, then the job) — are sent again once they are a minute old:
 * still `planning`, never taken (`attempts: 0`). A run's job id is derived from its id, so sending
 * one whose job exists (waiting behind others) makes no second job. Answers the runs sent.
 */
export async function sendLostRuns(store: Store, dispatch: CodeRunTeam['dispatch'], now = Date.now()): Promise<string[]> {
  const runs = store.collection<RunRecord>(RUNS_COLLECTION, RUNS_OPTIONS);
  const cutoff = new Date(now - SUBMITTING_MS).toISOString();
  const sent: string[] = [];
  for (const run of (await runs.query({ where: { status: 'planning' } })).items) {
    if (run.attempts !== 0 || run.created_at >= cutoff) continue;
    await dispatch(run.id);
    sent.push(run.id);
  }
  return sent;
}

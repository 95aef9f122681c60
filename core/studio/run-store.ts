/**
 * Stored studio runs: one record per run, with every event, in the store collection
 * `studio_runs`, so runs survive a restart.
 *
 * Decision (the issue allowed the task event log): runs are kept here, not on the task board,
 * because the studio must work with `tasks.enabled` off, a run record must hold all its events
 * (the task log evicts old ones), and a debugging run must start at once instead of queueing
 * behind the board's concurrency limit. Each run stores the principal it belongs to (the
 * owner of its thread); the service shows it to no one else (core/kernel/ownership.ts).
 *
 * Writes: a run's record is written when it starts and when each execution segment ends (before
 * the stream's [DONE], so "done" means stored). In between, events are written behind the run,
 * at most every `saveDelayMs`, so a token-by-token model answer costs a few writes, not one per
 * token; a crash loses at most that window of events, and `recover()` marks the run as failed.
 *
 * Team mode: every write is announced (`onWritten`), and an instance following a run that another
 * executes re-reads the record on each announcement (followed-run.ts); writes behind then come
 * every 20 ms rather than 200, so a follower sees events within that and a round trip.
 *
 * Retention: the newest `maxPerAgent` runs of each agent are kept; older finished ones are
 * deleted when a new run starts. A run's events are not capped (accepted: a debugging run with a
 * six-figure token count is the exception, and the record is what the studio shows).
 */
import { visibleTo } from '../kernel/ownership.js';
import type { Collection, Store } from '../kernel/store.js';
import type { StudioEvent, StudioRunStatus } from './events.js';

export interface StudioRun {
  run_id: string;
  agent_name: string;
  thread_id: string;
  status: StudioRunStatus;
  input: {
    query: string;
    user_id: string;
    context: Record<string, unknown>;
    metadata: Record<string, unknown>;
    prompt_version: string;
    temperature: number | null;
    max_tokens: number | null;
  };
  breakpoints: string[];
  /** The checkpoint the request asked to start from (time travel), or null. */
  checkpoint_id: string | null;
  /** The newest checkpoint this run wrote (or started from). */
  last_checkpoint_id: string | null;
  paused: {
    node: string;
    reason: 'breakpoint' | 'interrupt';
    checkpoint_id: string;
    message: string;
    payload: Record<string, unknown>;
  } | null;
  /** The agent's result (response, output, steps_taken, …) once the run completed or was rejected. */
  result: Record<string, unknown> | null;
  error: string | null;
  error_node: string | null;
  /** How many times the run was resumed. */
  resumes: number;
  event_count: number;
  /** Time spent executing, summed over the run's segments (pauses excluded). */
  duration_ms: number;
  created_at: string;
  updated_at: string;
  events: StudioEvent[];
  /** Strictly increasing creation order: ISO timestamps tie within a millisecond. */
  order: number;
  /** Who the run belongs to; absent on runs stored before owners were: those are `local`'s. */
  principal?: string;
  /** Team mode: the instance that last wrote the run (the one executing it while it runs). Internal. */
  instance?: string;
}

export type RunSummary = Omit<StudioRun, 'events' | 'order' | 'instance'>;

export class RunStore {
  private readonly runs: Collection<StudioRun>;
  /** Runs with events not yet written, by id. */
  private readonly dirty = new Map<string, StudioRun>();
  private timer: NodeJS.Timeout | undefined;
  private lastOrder = 0;

  constructor(
    store: Store,
    private readonly options: {
      maxPerAgent?: number;
      saveDelayMs?: number;
      onError?: (err: unknown) => void;
      /** Told after each write of a run (team mode announces it, so other instances re-read it). */
      onWritten?: (runId: string) => void;
      /** Team mode: this instance's id, written on every run it writes (see `recover`). */
      instance?: string;
    } = {},
  ) {
    // An index per read: an agent's runs newest first (of one thread, of one principal), the
    // runs still marked running at start, and the newest order number.
    this.runs = store.collection<StudioRun>('studio_runs', {
      shards: 16,
      indexes: [['agent_name', 'order'], ['agent_name', 'thread_id', 'order'], ['agent_name', 'principal', 'order'], ['status'], ['order']],
    });
  }

  /**
   * Runs that were executing when the server stopped without finishing them end as `error`,
   * with `run_error` and `done` appended, so their record tells what happened. In team mode only
   * the runs `orphaned` says no live instance executes (their `instance` is gone) are.
   */
  async recover(orphaned: (run: StudioRun) => boolean = () => true): Promise<number> {
    let recovered = 0;
    const [newest] = (await this.runs.query({ orderBy: [{ field: 'order', desc: true }], limit: 1 })).items;
    this.lastOrder = Math.max(this.lastOrder, newest?.order ?? 0);
    for (const run of (await this.runs.query({ where: { status: 'running' } })).items) {
      if (!orphaned(run)) continue;
      const timestamp = new Date().toISOString();
      const base = { run_id: run.run_id, thread_id: run.thread_id, timestamp };
      let seq = run.events.at(-1)?.seq ?? 0;
      const error = 'the server stopped while the run was executing';
      run.events.push({ ...base, seq: ++seq, type: 'run_error', error, node: null });
      run.events.push({ ...base, seq: ++seq, type: 'done', status: 'error' });
      Object.assign(run, { status: 'error', error, event_count: run.events.length, updated_at: timestamp });
      await this.write(run);
      recovered++;
    }
    return recovered;
  }

  nextOrder(): number {
    this.lastOrder = Math.max(Date.now(), this.lastOrder + 1);
    return this.lastOrder;
  }

  async create(run: StudioRun): Promise<void> {
    await this.write(run);
    await this.prune(run.agent_name);
  }

  async get(runId: string): Promise<StudioRun | undefined> {
    return this.dirty.get(runId) ?? (await this.runs.get(runId));
  }

  /**
   * Newest first; optionally only one thread's runs, only those `principal` may see. A page read
   * from the index; a run with events not yet written answers with its live copy (the fields
   * filtered on never change during a run).
   */
  async list(agent: string, options: { limit: number; thread_id?: string; principal?: string }): Promise<StudioRun[]> {
    const { items } = await this.runs.query({
      where: { agent_name: agent, ...(options.thread_id ? { thread_id: options.thread_id } : {}), ...visibleTo(options.principal) },
      orderBy: [{ field: 'order', desc: true }],
      limit: options.limit,
    });
    return items.map((run) => this.dirty.get(run.run_id) ?? run);
  }

  /** Remove every run of the thread (deleting a thread); none may be executing. */
  async deleteThread(agent: string, threadId: string): Promise<void> {
    for (const run of this.dirty.values()) if (run.agent_name === agent && run.thread_id === threadId) this.dirty.delete(run.run_id);
    const { items } = await this.runs.query({ where: { agent_name: agent, thread_id: threadId } });
    for (const run of items) await this.runs.delete(run.run_id);
  }

  /** Write the run soon (events arriving while it runs are batched into one write). */
  touch(run: StudioRun): void {
    this.dirty.set(run.run_id, run);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.flush().catch((err) => this.options.onError?.(err));
    }, this.options.saveDelayMs ?? 200);
  }

  /** Write the run now; resolves once it is on disk. */
  async save(run: StudioRun): Promise<void> {
    this.dirty.delete(run.run_id);
    await this.write(run);
  }

  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const pending = [...this.dirty.values()];
    this.dirty.clear();
    await Promise.all(pending.map((run) => this.write(run)));
  }

  private async write(run: StudioRun): Promise<void> {
    const stored = snapshot(run);
    if (this.options.instance) stored.instance = this.options.instance;
    await this.runs.put(run.run_id, stored);
    this.options.onWritten?.(run.run_id);
  }

  private async prune(agent: string): Promise<void> {
    const max = this.options.maxPerAgent ?? 500;
    // Only the runs past the newest `max` are read (usually none).
    const { items } = await this.runs.query({ where: { agent_name: agent }, orderBy: [{ field: 'order', desc: true }], offset: max });
    // A running or paused run may still be resumed or watched; only settled ones go.
    for (const run of items) {
      if (run.status !== 'running' && run.status !== 'breakpoint' && run.status !== 'interrupted') await this.runs.delete(run.run_id);
    }
  }
}

/** The record as written: the live one keeps growing, the stored copy must not. */
function snapshot(run: StudioRun): StudioRun {
  return { ...run, input: { ...run.input }, breakpoints: [...run.breakpoints], events: [...run.events] };
}

export function summarise(run: StudioRun): RunSummary {
  const { events: _events, order: _order, instance: _instance, ...summary } = run;
  return summary;
}

/** The run as the API shows it: everything but the internal ordering key and instance. */
export function publicRun(run: StudioRun): Omit<StudioRun, 'order' | 'instance'> {
  const { order: _order, instance: _instance, ...rest } = run;
  return rest;
}

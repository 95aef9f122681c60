/**
 * Scheduled notebook runs: a cron expression (croner syntax, 5 or 6 fields, read in an IANA time
 * zone) runs a notebook file headlessly, in a kernel of its own, while the server runs.
 *
 * - Schedules and their run history are in the workspace store, so they survive restarts. Runs
 *   missed while the server was down are not caught up: the next run is the next cron time after
 *   start (what cron and systemd timers without `Persistent=` do).
 * - No overlapping runs of one notebook: a run due while the previous one still runs is recorded
 *   as `skipped` (not queued, which would pile up kernels behind a slow notebook).
 * - A failing run is recorded with its error; the schedule keeps going.
 * - Croner only computes the next time (`nextRun(from)`); waiting is done through a `Clock`, so
 *   tests drive time by hand instead of sleeping.
 *
 * Invariant: at most one timer per schedule, held in `#timers`; arming replaces it.
 *
 * Team mode (several instances on one PostgreSQL, `team` given): every instance keeps a timer for
 * every active schedule, but a timer that goes off only sends the slot's job to the shared queue;
 * the job's id is derived from (schedule, slot), so the instances' sends make one job and the slot
 * runs once, on whichever instance takes it. The timers are redundant on purpose: a slot runs as
 * long as one instance is up. The taker re-reads the schedule first, so a pause or delete made on
 * any instance stops slots already sent; changes are announced, so every instance re-arms at once.
 * "No overlapping runs of one notebook" holds across the team: a run holds a team lock on its
 * notebook (released if its instance dies), and a slot due meanwhile is recorded `skipped`. A run
 * whose instance dies is run again on another (the queue's retry, once); if that one dies too the
 * slot is recorded as an `error`. History is in the shared store, readable from every instance;
 * `running` in a schedule's view is about this instance's runs.
 */
import { stat } from 'node:fs/promises';
import type * as Croner from 'croner';
import type { Cron } from 'croner';
import { fail } from '../../kernel/errors.js';
import type { Collection, Store } from '../../kernel/store.js';
import { packageOnFirstUse } from '../../lib/on-first-use.js';
import { readNotebookFile } from '../formats.js';
import type { Output } from '../schemas.js';
import type { NotebookService } from '../service.js';
import { NotebookSession } from '../session.js';
import { outputText } from './tools.js';

export interface Clock {
  now(): number;
  /** Call `fn` after `delayMs`; returns a cancel function. */
  setTimer(delayMs: number, fn: () => void): () => void;
}

/** setTimeout cannot wait more than 2^31-1 ms (~24.8 days): longer waits are chained. */
const MAX_DELAY = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(delayMs, fn) {
    let handle: NodeJS.Timeout;
    const due = Date.now() + delayMs;
    const wait = () => {
      const left = due - Date.now();
      handle = setTimeout(left > MAX_DELAY ? wait : fn, Math.max(0, Math.min(left, MAX_DELAY)));
      // A pending schedule must not keep a process alive on its own (tests, CLI one-shots).
      handle.unref();
    };
    wait();
    return () => clearTimeout(handle);
  },
};

export interface Schedule {
  id: string;
  notebook: string;
  name: string;
  cron: string;
  timezone: string;
  cell_timeout_ms: number;
  paused: boolean;
  created_at: string;
  last_run_at: string | null;
  last_status: RunStatus | null;
}

export type RunStatus = 'success' | 'error' | 'skipped';

export interface ScheduleRun {
  id: string;
  schedule_id: string;
  notebook: string;
  /** The cron time this run was for. */
  scheduled_for: string;
  started_at: string;
  finished_at: string;
  duration_ms: number;
  status: RunStatus;
  error: string | null;
  /** Each cell's final state and outputs (long texts truncated). */
  cells: Array<{ id: string; name: string; state: string; outputs: Output[] }>;
}

/** What the scheduler needs from the team (core/notebook/intel/subsystem.ts adapts core/storage/team.ts). */
export interface ScheduleTeam {
  /** Queue a slot's run; sent by several instances, it still makes one job. */
  trigger(schedule: string, slot: string): Promise<void>;
  /** Take slot jobs here; `interrupted` gets the slots whose every attempt's instance died. */
  serve(
    run: (schedule: string, slot: string) => Promise<void>,
    interrupted: (schedule: string, slot: string) => Promise<void>,
  ): Promise<void>;
  /** Hold the team-wide lock of a notebook's runs; undefined while another instance holds it. */
  lock(notebook: string): Promise<{ release(): Promise<void> } | undefined>;
  /** Tell every instance that a schedule was created, paused, resumed or deleted. */
  changed(schedule: string): void;
  onChanged(handler: (schedule: string) => void): () => void;
}

export interface SchedulerOptions {
  clock?: Clock;
  /** Team mode: slots go through the shared queue (see the header). */
  team?: ScheduleTeam;
  /** Runs kept per schedule (oldest dropped first). */
  historyLimit?: number;
}

const OUTPUT_TEXT_LIMIT = 10_000;

function truncate(output: Output): Output {
  const cut = (text: string) =>
    text.length > OUTPUT_TEXT_LIMIT ? `${text.slice(0, OUTPUT_TEXT_LIMIT)}\n… (${text.length - OUTPUT_TEXT_LIMIT} more characters)` : text;
  if (output.output_type === 'stream') return { ...output, text: cut(output.text) };
  if (output.output_type === 'execute_result' || output.output_type === 'display_data') {
    // Rich bundles (HTML tables, charts) can be large; history keeps the plain text.
    const plain = output.data['text/plain'];
    return { ...output, data: { 'text/plain': typeof plain === 'string' ? cut(plain) : '' } };
  }
  return output;
}

/** croner, loaded by the first schedule read (core/lib/on-first-use.ts). */
const croner = packageOnFirstUse<typeof Croner>('croner');

/** Parse a cron expression in a time zone; a 422 carries croner's (or Intl's) own reason. */
export function parseCron(cron: string, timezone: string): Cron {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch (err) {
    throw fail('HANGAR_NOTEBOOK_INTEL_TIMEZONE_INVALID', { timezone, problem: (err as Error).message });
  }
  try {
    return new (croner().Cron)(cron, { timezone, paused: true });
  } catch (err) {
    throw fail('HANGAR_NOTEBOOK_INTEL_CRON_INVALID', { cron, problem: (err as Error).message });
  }
}

let counter = 0;
const newId = (prefix: string) =>
  `${prefix}_${Date.now().toString(36)}${(counter++).toString(36)}${Math.random().toString(36).slice(2, 6)}`;

export class ScheduleService {
  readonly #schedules: Collection<Schedule>;
  readonly #runs: Collection<ScheduleRun>;
  readonly #clock: Clock;
  readonly #historyLimit: number;
  readonly #team: ScheduleTeam | undefined;
  readonly #timers = new Map<string, () => void>();
  /** notebook id → the run in progress (one at a time per notebook). */
  readonly #running = new Map<string, { done: Promise<void>; session?: NotebookSession }>();
  #closed = false;

  constructor(
    store: Store,
    private readonly notebooks: NotebookService,
    options: SchedulerOptions = {},
  ) {
    this.#schedules = store.collection<Schedule>('notebook_schedules');
    // A schedule's history, newest first, read from its index (pruning reads only what goes).
    this.#runs = store.collection<ScheduleRun>('notebook_schedule_runs', { shards: 8, indexes: [['schedule_id', 'started_at']] });
    this.#clock = options.clock ?? systemClock;
    this.#historyLimit = options.historyLimit ?? 100;
    this.#team = options.team;
  }

  /** Arm every active schedule found in the store (call once at server start). */
  async start(): Promise<void> {
    if (this.#team) {
      this.#team.onChanged((id) => void this.#reload(id));
      await this.#team.serve(
        (id, slot) => this.#runSlot(id, new Date(slot)),
        (id, slot) => this.#interrupted(id, new Date(slot)),
      );
    }
    for (const schedule of await this.#schedules.list()) if (!schedule.paused) this.#arm(schedule);
  }

  /** Another instance changed a schedule: arm or disarm it here as it now stands. */
  async #reload(id: string): Promise<void> {
    const schedule = await this.#schedules.get(id).catch(() => undefined);
    if (!schedule || schedule.paused) this.#disarm(id);
    else if (!this.#timers.has(id)) this.#arm(schedule);
  }

  async create(
    notebook: string,
    input: { cron: string; timezone?: string; name: string; cell_timeout_ms: number },
  ): Promise<Schedule & { next_run_at: string | null }> {
    const timezone = input.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
    parseCron(input.cron, timezone);
    const file = await this.notebooks.resolvePath(notebook);
    if (
      !(await stat(file).then(
        (s) => s.isFile(),
        () => false,
      ))
    )
      throw fail('HANGAR_NOTEBOOK_NOT_FOUND', { notebook });
    const schedule: Schedule = {
      id: newId('sch'),
      notebook,
      name: input.name,
      cron: input.cron,
      timezone,
      cell_timeout_ms: input.cell_timeout_ms,
      paused: false,
      created_at: new Date(this.#clock.now()).toISOString(),
      last_run_at: null,
      last_status: null,
    };
    await this.#schedules.put(schedule.id, schedule);
    this.#arm(schedule);
    this.#team?.changed(schedule.id);
    return this.#view(schedule);
  }

  #nextRun(schedule: Schedule): Date | null {
    return parseCron(schedule.cron, schedule.timezone).nextRun(new Date(this.#clock.now()));
  }

  #view(schedule: Schedule): Schedule & { next_run_at: string | null; running: boolean } {
    const next = schedule.paused ? null : this.#nextRun(schedule);
    return { ...schedule, next_run_at: next ? next.toISOString() : null, running: this.#running.has(schedule.notebook) };
  }

  async list(notebook?: string) {
    const all = await this.#schedules.list();
    return all
      .filter((s) => !notebook || s.notebook === notebook)
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
      .map((s) => this.#view(s));
  }

  async #get(id: string): Promise<Schedule> {
    const schedule = await this.#schedules.get(id);
    if (!schedule) throw fail('HANGAR_NOTEBOOK_INTEL_SCHEDULE_NOT_FOUND', { schedule: id });
    return schedule;
  }

  async get(id: string) {
    return this.#view(await this.#get(id));
  }

  /** Runs of a schedule, newest first. */
  async runs(id: string, limit = 50): Promise<ScheduleRun[]> {
    await this.#get(id);
    const { items } = await this.#runs.query({ where: { schedule_id: id }, orderBy: [{ field: 'started_at', desc: true }], limit });
    return items;
  }

  async setPaused(id: string, paused: boolean) {
    const updated = await this.#schedules.update(id, (current) => (current ? { ...current, paused } : undefined));
    if (!updated) throw fail('HANGAR_NOTEBOOK_INTEL_SCHEDULE_NOT_FOUND', { schedule: id });
    if (paused) this.#disarm(id);
    else this.#arm(updated);
    this.#team?.changed(id);
    return this.#view(updated);
  }

  async delete(id: string): Promise<void> {
    await this.#get(id);
    this.#disarm(id);
    await this.#schedules.delete(id);
    this.#team?.changed(id);
    for (const run of (await this.#runs.query({ where: { schedule_id: id } })).items) await this.#runs.delete(run.id);
  }

  #disarm(id: string): void {
    this.#timers.get(id)?.();
    this.#timers.delete(id);
  }

  #arm(schedule: Schedule): void {
    this.#disarm(schedule.id);
    if (this.#closed) return;
    const next = this.#nextRun(schedule);
    if (!next) return; // a one-off expression whose time has passed
    const delay = Math.max(0, next.getTime() - this.#clock.now());
    this.#timers.set(
      schedule.id,
      this.#clock.setTimer(delay, () => void this.#fire(schedule.id, next)),
    );
  }

  /** A timer went off: arm the next one first, so a slow or failing run never stops the schedule. */
  async #fire(id: string, scheduledFor: Date): Promise<void> {
    this.#timers.delete(id);
    const schedule = await this.#schedules.get(id);
    if (!schedule || schedule.paused || this.#closed) return;
    this.#arm(schedule);
    if (this.#team) {
      // Another instance's send of this slot does as well: this one failing loses nothing while one is up.
      await this.#team.trigger(id, scheduledFor.toISOString()).catch(() => {});
      return;
    }
    await this.#runOnce(schedule, scheduledFor);
  }

  /** Team mode: this instance took a slot's job. */
  async #runSlot(id: string, scheduledFor: Date): Promise<void> {
    // Failing the job hands the slot to another instance (the queue's retry) rather than losing it.
    if (this.#closed) throw new Error('Hangar is stopping');
    const schedule = await this.#schedules.get(id);
    // Paused or deleted on some instance after the slot was sent: the slot does not run.
    if (!schedule || schedule.paused) return;
    const lock = this.#running.has(schedule.notebook) ? undefined : await this.#team!.lock(schedule.notebook);
    try {
      await this.#runOnce(schedule, scheduledFor, lock !== undefined);
    } finally {
      await lock?.release();
    }
  }

  /** Team mode: every instance that took this slot died while running it. */
  async #interrupted(id: string, scheduledFor: Date): Promise<void> {
    const schedule = await this.#schedules.get(id);
    if (!schedule) return;
    const now = this.#clock.now();
    await this.#record(schedule, {
      scheduled_for: scheduledFor.toISOString(),
      started: now,
      duration: 0,
      status: 'error',
      error: 'interrupted: the instance running it stopped, and so did the one that ran it again',
      cells: [],
    });
  }

  /** Run a slot here unless this notebook is running (here, or elsewhere when `free` is false): then `skipped`. */
  async #runOnce(schedule: Schedule, scheduledFor: Date, free = true): Promise<void> {
    const started = this.#clock.now();
    if (!free || this.#running.has(schedule.notebook)) {
      await this.#record(schedule, {
        scheduled_for: scheduledFor.toISOString(),
        started,
        duration: 0,
        status: 'skipped',
        error: `skipped: the previous run of ${schedule.notebook} was still running`,
        cells: [],
      });
      return;
    }
    const slot: { done: Promise<void>; session?: NotebookSession } = { done: Promise.resolve() };
    slot.done = this.#run(schedule, scheduledFor, slot).finally(() => this.#running.delete(schedule.notebook));
    this.#running.set(schedule.notebook, slot);
    await slot.done;
  }

  async #run(schedule: Schedule, scheduledFor: Date, slot: { session?: NotebookSession }): Promise<void> {
    const started = this.#clock.now();
    const t0 = performance.now();
    let status: RunStatus = 'error';
    let error: string | null = null;
    let cells: ScheduleRun['cells'] = [];
    try {
      const file = await this.notebooks.resolvePath(schedule.notebook);
      // The saved file, in a kernel of its own: a scheduled run never disturbs an open session.
      const session = new NotebookSession(await readNotebookFile(file), { filePath: file, cellTimeoutMs: schedule.cell_timeout_ms });
      slot.session = session;
      try {
        await session.runAll();
        cells = session.cellsWithState().map((c) => ({ id: c.id, name: c.name, state: c.state, outputs: c.outputs.map(truncate) }));
      } finally {
        await session.close();
      }
      const failed = cells.find((c) => c.state === 'error');
      const blocked = cells.find((c) => c.state === 'stale');
      status = failed || blocked ? 'error' : 'success';
      if (failed) {
        const out = failed.outputs.find((o) => o.output_type === 'error');
        error = `cell ${failed.name ? `"${failed.name}" (${failed.id})` : failed.id} failed: ${out ? outputText(out) : 'unknown error'}`;
      } else if (blocked) error = `cell ${blocked.id} did not run (an upstream cell failed)`;
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    await this.#record(schedule, {
      scheduled_for: scheduledFor.toISOString(),
      started,
      duration: performance.now() - t0,
      status,
      error,
      cells,
    });
  }

  async #record(
    schedule: Schedule,
    run: { scheduled_for: string; started: number; duration: number; status: RunStatus; error: string | null; cells: ScheduleRun['cells'] },
  ): Promise<void> {
    const record: ScheduleRun = {
      id: newId('run'),
      schedule_id: schedule.id,
      notebook: schedule.notebook,
      scheduled_for: run.scheduled_for,
      started_at: new Date(run.started).toISOString(),
      finished_at: new Date(run.started + run.duration).toISOString(),
      duration_ms: Math.round(run.duration * 1000) / 1000,
      status: run.status,
      error: run.error,
      cells: run.cells,
    };
    // The schedule may have been deleted while it ran: then its history goes with it.
    const still = await this.#schedules.update(schedule.id, (current) =>
      current ? { ...current, last_run_at: record.started_at, last_status: record.status } : undefined,
    );
    if (!still) return;
    await this.#runs.put(record.id, record);
    const older = await this.#runs.query({
      where: { schedule_id: schedule.id },
      orderBy: [{ field: 'started_at', desc: true }],
      offset: this.#historyLimit,
    });
    for (const run of older.items) await this.#runs.delete(run.id);
  }

  /** Stop every timer and every run in progress (their kernels are terminated). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const id of [...this.#timers.keys()]) this.#disarm(id);
    const running = [...this.#running.values()];
    await Promise.all(running.map((r) => r.session?.close()));
    await Promise.allSettled(running.map((r) => r.done));
  }
}

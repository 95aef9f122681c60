/**
 * The event logs of coding runs: a live log per run in memory (what streams and the UI's websocket
 * follow) and, behind it, every event stored for the activity page of past runs — one append-log
 * key per run, so storing is an append of one line and replaying a past run reads that run's list
 * instead of scanning every event of every run.
 */

import type { Logger } from '../kernel/log.js';
import type { Collection, KeyedLog, Store } from '../kernel/store.js';
import { EventLog } from '../lib/event-log.js';
import type { RunEvent } from './schemas.js';

interface StoredEvent {
  seq: number;
  at: string;
  event: RunEvent;
}

/** Name of the append log holding each run's events under the run's id. */
export const RUN_EVENTS_LOG = 'coderun_run_events';

/** Events a live run's log keeps in memory. */
const LIVE_EVENTS = 20_000;

/** Classification of run events on the teams page. */
export function classify(event: RunEvent): string {
  switch (event.type) {
    case 'task_update':
    case 'tool':
      return 'work';
    case 'review_pending':
      return 'review';
    case 'fence_violation':
      return 'fence';
    case 'gate':
    case 'integration':
      return 'gate';
    case 'ticket':
      return 'ticket';
    case 'wave':
      return 'wave';
    case 'contract_frozen':
      return 'contract';
    case 'dependency_dropped':
    case 'plan_proposed':
    case 'plan_edited':
      return 'plan';
    case 'run_status':
    case 'run_finished':
      return 'run';
    default: {
      const never: never = event;
      return String(never);
    }
  }
}

/** The teams an event concerns, for the teams page's per-team filter. */
export function teamsOfEvent(event: RunEvent): string[] {
  // Both sides of a fence violation see it: the trespassing team and the owner.
  if (event.type === 'fence_violation') return [...new Set([...(event.team ? [event.team] : []), event.owner])];
  if ('team' in event && typeof event.team === 'string') return [event.team];
  if (event.type === 'wave') return event.teams;
  if (event.type === 'contract_frozen') return [event.provider, ...event.consumers];
  return [];
}

export class RunEventLogs {
  private readonly stored: KeyedLog<StoredEvent>;
  /** Where events of runs from before the append log were kept (read only, for those runs). */
  private readonly legacy: Collection<StoredEvent & { run: string }>;
  /** Per run: the write in flight, and the events waiting for it to finish (written next, as one append). */
  private readonly writing = new Map<string, Promise<void>>();
  private readonly waiting = new Map<string, StoredEvent[]>();
  private readonly live = new Map<string, EventLog<RunEvent>>();
  private readonly listeners = new Set<(event: RunEvent) => void>();

  constructor(
    store: Store,
    private readonly log: Logger,
    /** Told once an event of a run is in the store (team mode announces it to the other instances). */
    private readonly onStored?: (run: string) => void,
  ) {
    this.stored = store.appendLog<StoredEvent>(RUN_EVENTS_LOG);
    this.legacy = store.collection<StoredEvent & { run: string }>('coderun_events', { shards: 16 });
  }

  /** The live log of a run, opened on first use. */
  open(run: string): EventLog<RunEvent> {
    let log = this.live.get(run);
    if (!log) this.live.set(run, (log = new EventLog<RunEvent>(LIVE_EVENTS)));
    return log;
  }

  /**
   * Team mode: the live log of a run this instance takes from the queue, holding what is stored
   * already (an earlier attempt's events, when its instance died), so its replay is the whole run.
   */
  async resume(run: string): Promise<EventLog<RunEvent>> {
    const stored = (await this.stored.get(run))?.items ?? [];
    const existing = this.live.get(run);
    if (existing) return existing;
    const log = new EventLog<RunEvent>(LIVE_EVENTS);
    for (const e of stored) log.append(e.event);
    this.live.set(run, log);
    return log;
  }

  /**
   * Team mode: store an event of a run no instance is running (cancelled before an instance took
   * it, or failed after every attempt's instance died), without a live log here; followers of the
   * run on every instance read it from the store.
   */
  async storeOnly(event: RunEvent): Promise<void> {
    const { total } = await this.stored.range(event.run, -1, 1);
    await this.stored.append(event.run, [{ seq: total + 1, at: new Date().toISOString(), event }]);
    this.onStored?.(event.run);
    for (const listener of this.listeners) listener(event);
  }

  /** The live log of a run still in memory, if any. */
  liveLog(run: string): EventLog<RunEvent> | undefined {
    return this.live.get(run);
  }

  /** Drop a finished run's live log; its events are served from the store from now on. */
  forget(run: string): void {
    this.live.delete(run);
  }

  /**
   * Append an event to its run's live log, store it, and tell every listener; `run_finished` ends
   * the log. False when the log had ended already: a straggler after run_finished (a tool event
   * racing a cancel) has nowhere to go.
   */
  record(event: RunEvent): boolean {
    const log = this.open(event.run);
    if (log.ended) return false;
    const { seq } = log.append(event);
    // Events are kept for the activity page of past runs; a lost write is logged, not fatal.
    this.persist(event.run, { seq, at: new Date().toISOString(), event });
    for (const listener of this.listeners) listener(event);
    if (event.type === 'run_finished') log.end();
    return true;
  }

  /**
   * One append at a time per run, in call order, so a replay needs no sort: on PostgreSQL two
   * appends in flight on two pooled connections may commit in either order. Events recorded while
   * a write is in flight go together in the next one.
   */
  private persist(run: string, item: StoredEvent): void {
    const batch = this.waiting.get(run);
    if (batch) {
      batch.push(item);
      return;
    }
    const next = [item];
    this.waiting.set(run, next);
    const write = (this.writing.get(run) ?? Promise.resolve())
      .then(async () => {
        this.waiting.delete(run);
        await this.stored.append(run, next);
        this.onStored?.(run);
      })
      .catch((err: unknown) => {
        this.log.warn('coding-run event not stored', { error: String(err) });
      })
      .finally(() => {
        if (this.writing.get(run) === write) this.writing.delete(run);
      });
    this.writing.set(run, write);
  }

  /** Follow every run's events (the UI's websocket). */
  subscribe(listener: (event: RunEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A past run's events as an ended log, rebuilt from the store. */
  async fromStore(run: string): Promise<EventLog<RunEvent>> {
    let stored: StoredEvent[] = (await this.stored.get(run))?.items ?? [];
    // A run from before events were kept per run: the one case that still scans the old collection.
    if (!stored.length) stored = (await this.legacy.list()).filter((e) => e.run === run).sort((a, b) => a.seq - b.seq);
    const log = new EventLog<RunEvent>(LIVE_EVENTS);
    for (const e of stored) log.append(e.event);
    log.end();
    return log;
  }

  /**
   * Team mode: the log of a run that runs on another instance, followed through the store. It holds
   * what is stored so far; `more()` (called when that instance announces a stored event) appends
   * what was stored since, and the log ends with the run's `run_finished`.
   */
  async following(run: string): Promise<{ log: EventLog<RunEvent>; more: () => Promise<void> }> {
    const log = new EventLog<RunEvent>(LIVE_EVENTS);
    let delivered = 0;
    let reading = Promise.resolve();
    const more = () =>
      (reading = reading.then(async () => {
        if (log.ended) return;
        const { items } = await this.stored.range(run, delivered, LIVE_EVENTS);
        for (const stored of items) {
          delivered++;
          log.append(stored.event);
          if (stored.event.type === 'run_finished') log.end();
        }
      }));
    await more();
    return { log, more };
  }

  /** Wait until every event appended so far is on disk. */
  async flush(): Promise<void> {
    await Promise.all(this.writing.values());
    await this.stored.flush();
  }
}

/**
 * The studio's run events: the engine's typed `RunEvent` stream (core/agents/events.ts) plus the
 * spec's `done`, each numbered with the run's sequence. The same numbered events are sent on the
 * SSE streams (the `id:` line is `seq`) and stored in the run record, so a stream and
 * GET /runs/{run_id} always show the same thing.
 *
 * Decision (spec silent): `done` closes every execution segment — a run's first stream and each
 * resume stream — and carries the run's status at that point (`breakpoint`, `interrupted`,
 * `completed`, `rejected`, `cancelled`, `error`). Sequences continue across resumes.
 * `run_start.resumed_from` names the checkpoint a segment started from: null only for the first
 * run of a new thread (a thread's next turn starts from the checkpoint the studio writes for it).
 */

import type { RunEvent } from '../agents/events.js';
import type { EventLog, ReplayableSource, SequencedEvent } from '../lib/event-log.js';

export type StudioRunStatus = 'running' | 'completed' | 'interrupted' | 'breakpoint' | 'rejected' | 'cancelled' | 'error';

export interface DoneEvent {
  type: 'done';
  run_id: string;
  thread_id: string;
  timestamp: string;
  status: Exclude<StudioRunStatus, 'running'>;
}

export type StudioEvent = (RunEvent | DoneEvent) & { seq: number };

/**
 * A run's events as an SSE source: replay comes from the run record (complete, even across
 * resumes), live events from the current execution's log. Without a live log (a finished or
 * paused run) the source is already ended, so a reader gets the stored events and [DONE].
 */
export function runEventSource(events: readonly StudioEvent[], live?: EventLog<StudioEvent>): ReplayableSource<StudioEvent> {
  return {
    replay: (since: number) => ({
      events: events.filter((e) => e.seq > since).map((e): SequencedEvent<StudioEvent> => ({ seq: e.seq, data: e })),
      truncated: false,
    }),
    subscribe: (onEvent, onEnd) => {
      if (live) return live.subscribe(onEvent, onEnd);
      onEnd();
      return () => {};
    },
    get ended() {
      return live ? live.ended : true;
    },
  };
}

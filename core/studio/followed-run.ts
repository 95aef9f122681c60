/**
 * Team mode: a studio run that another instance executes, followed from this one. The run record
 * is the source of truth (run-store.ts): the executing instance writes it behind the run and
 * announces each write (topic `studio-run`, the run id only); here each announcement re-reads the
 * record and hands out the events not seen yet. The stream ends once the record says the segment
 * is over (any status but `running`), which is written after its `done` event.
 *
 * Accepted: a follower reads the whole record per write, so following a run of thousands of
 * events costs as many reads of a growing record; a debugging run is rarely that long. A run whose
 * instance died is marked failed by another instance's sweep (subsystem.ts) once that instance is
 * no longer listed (three `team.heartbeatSeconds`); that write ends its followers' streams too.
 */
import type { ReplayableSource, SequencedEvent } from '../lib/event-log.js';
import type { StudioEvent } from './events.js';
import type { StudioRun } from './run-store.js';

export const STUDIO_RUN_TOPIC = 'studio-run';

/** What following needs of the team's announcements (TeamCoordinator provides it). */
export interface RunAnnouncements {
  on(topic: string, handler: (announcement: { id: string }) => void): () => void;
}

export function followedRun(
  first: StudioRun,
  read: (runId: string) => Promise<StudioRun | undefined>,
  announcements: RunAnnouncements,
  warn: (line: string) => void,
): ReplayableSource<StudioEvent> {
  const runId = first.run_id;
  let done = first.status !== 'running';
  /** The newest event handed out by replay or to the subscriber. */
  let cursor = 0;
  let replayed: Promise<unknown> = Promise.resolve();

  const after = (run: StudioRun, since: number): SequencedEvent<StudioEvent>[] =>
    run.events.filter((event) => event.seq > since).map((event) => ({ seq: event.seq, data: event }));
  // A run deleted meanwhile (its thread was) has nothing more to say.
  const latest = async () => (await read(runId)) ?? { ...first, status: 'error' as const, events: [] };

  return {
    get ended() {
      return done;
    },
    async replay(since) {
      const reading = latest();
      replayed = reading.catch(() => {});
      const run = await reading;
      const events = after(run, since);
      cursor = Math.max(cursor, since, events.at(-1)?.seq ?? 0);
      if (run.status !== 'running') done = true;
      return { events, truncated: false };
    },
    subscribe(onEvent, onEnd) {
      let stopped = false;
      let checking = Promise.resolve();
      const finish = () => {
        if (stopped) return;
        stopped = true;
        off();
        onEnd();
      };
      const off = announcements.on(STUDIO_RUN_TOPIC, (announcement) => {
        if (announcement.id !== runId) return;
        checking = checking.then(async () => {
          // Replay (which serveSse starts right after subscribing) sets where reading resumes.
          await replayed;
          if (stopped) return;
          try {
            const run = await latest();
            for (const event of after(run, cursor)) {
              if (stopped) return;
              cursor = event.seq;
              onEvent(event);
            }
            if (run.status !== 'running') {
              done = true;
              finish();
            }
          } catch (err) {
            warn(`studio run ${runId}: reading the run another instance executes failed: ${(err as Error).message}`);
          }
        });
      });
      if (done) {
        finish();
        return () => {};
      }
      return () => {
        stopped = true;
        off();
      };
    },
  };
}

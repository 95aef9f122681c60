/**
 * The notebook data-intelligence subsystem: smart preprocessing, algorithm match, patterns, the 13
 * built-in tools and scheduled runs, on top of the `notebooks` service's sessions. Set up at start,
 * not lazily: the starter patterns are seeded and the stored schedules armed before the server
 * listens.
 */
import { mountOnFirstUse } from '../../http/on-first-use.js';
import type { Subsystem } from '../../kernel/context.js';
import type { TeamCoordinator } from '../../storage/team.js';
import type { ScheduleTeam } from './scheduler.js';
import { createNotebookIntel, type NotebookIntel } from './service.js';

declare module '../../kernel/services.js' {
  interface ServiceMap {
    notebookIntel: NotebookIntel;
  }
}

/**
 * Where the subsystem's 30 routes are. They and their schemas are loaded by the first request under
 * one of these (core/http/on-first-use.ts), not at start: a start that never asks for a tool, a
 * pattern or a schedule does not evaluate them or register their routes. The service itself is set
 * up at start, as above.
 */
const INTEL_PREFIXES = [
  '/api/smartprep',
  '/api/algorithm-match',
  '/api/patterns',
  '/api/tools',
  '/api/schedules',
  '/api/notebooks/:nb/tools',
  '/api/notebooks/:nb/schedules',
];

/** The queue of scheduled notebook runs (team mode): one job per schedule and slot. */
const SCHEDULE_QUEUE = 'hangar-notebook-schedules';
/** Scheduled runs one instance runs at once; more wait in the queue for this or another instance. */
const SCHEDULE_CONCURRENCY = 4;

/** A slot's job names its schedule and slot time in the job's one id field. */
const jobId = (schedule: string, slot: string) => `${schedule}@${slot}`;
const fromJobId = (id: string): [string, string] => {
  const at = id.lastIndexOf('@');
  return [id.slice(0, at), id.slice(at + 1)];
};

/** The scheduler's view of the team: slot jobs on the shared queue, notebook locks, change announcements. */
function scheduleTeam(team: TeamCoordinator): ScheduleTeam {
  let queue: Promise<void> | undefined;
  // A run's kernel is watched by the job's heartbeat; a day bounds a run nobody watches.
  const ready = () => (queue ??= team.queue(SCHEDULE_QUEUE, { expireSeconds: 86_400 }));
  return {
    trigger: async (schedule, slot) => {
      await ready();
      await team.sendOnce(SCHEDULE_QUEUE, { id: jobId(schedule, slot) }, `notebook-schedule:${jobId(schedule, slot)}`);
    },
    serve: async (run, interrupted) => {
      await ready();
      await team.work(SCHEDULE_QUEUE, { concurrency: SCHEDULE_CONCURRENCY }, (job) => run(...fromJobId(job.data.id)));
      await team.work(`${SCHEDULE_QUEUE}-dead`, { concurrency: 1 }, (job) => interrupted(...fromJobId(job.data.id)));
    },
    lock: (notebook) => team.tryLock(`notebook-run:${notebook}`),
    changed: (schedule) => void team.announce('notebook-schedule', schedule).catch(() => {}),
    onChanged: (handler) => team.on('notebook-schedule', (announcement) => handler(announcement.id)),
  };
}

export const notebookIntelSubsystem: Subsystem = {
  name: 'notebook-intel',
  provides: ['notebookIntel'],
  depends: ['notebooks'],
  async setup(ctx) {
    const intel = createNotebookIntel(
      ctx.store,
      ctx.services.get('notebooks'),
      ctx.version,
      ctx.services.has('team') ? scheduleTeam(ctx.services.get('team')) : undefined,
    );
    ctx.services.provide('notebookIntel', intel);
    await intel.patterns.seed();
    await intel.schedules.start();
  },
  routes: (app, ctx) => {
    mountOnFirstUse(app, ctx.services.get('openapi'), {
      prefixes: INTEL_PREFIXES,
      load: async () => ({ routes: (await import('./routes.js')).intelRoutes(ctx.services.get('notebookIntel')) }),
    });
  },
  async close(ctx) {
    await ctx.services.find('notebookIntel')?.schedules.close();
  },
};

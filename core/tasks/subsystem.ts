/**
 * The task subsystem as the server wires it: builds the `TaskService` from the `tasks.*` settings,
 * provides it as the `tasks` service, mounts the board, and stops the runner on shutdown
 * (unfinished work is then recovered by the next start, see `service.ts`).
 *
 * The service is provided even when `tasks.enabled` is off: its methods then answer 501, so every
 * user depends on it and says why asynchronous work is unavailable, the same way everywhere.
 */

import { mountRoutes } from '../http/route.js';
import type { Subsystem } from '../kernel/context.js';
import type { TeamCoordinator } from '../storage/team.js';
import type { TaskTeam } from './distributed.js';
import { taskRoutes } from './routes.js';
import { TaskService } from './service.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    tasks: TaskService;
  }
}

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** `30d` → milliseconds; `0` → 0 (the settings schema checked the form). */
const durationMs = (text: string): number => (text === '0' ? 0 : Number(text.slice(0, -1)) * UNIT_MS[text.at(-1) as keyof typeof UNIT_MS]);

/** The queue every instance takes tasks from (team mode), and where tasks whose every attempt died go. */
const TASK_QUEUE = 'hangar-tasks';

/**
 * The board's view of the team: jobs name a task id, announcements carry ids and a sequence.
 * Jobs expire after a day at most; a dead instance is noticed by the heartbeat long before.
 */
function taskTeam(team: TeamCoordinator): TaskTeam {
  let queue: Promise<void> | undefined;
  const ready = () => (queue ??= team.queue(TASK_QUEUE, { expireSeconds: 86_400 }));
  return {
    dispatch: async (id) => {
      await ready();
      // One job per task, however often it is sent (the sweep of lost submissions re-sends).
      return team.sendOnce(TASK_QUEUE, { id }, `task:${id}`);
    },
    exclusively: async (name, fn) => {
      const lock = await team.tryLock(name);
      if (!lock) return false;
      try {
        await fn();
      } finally {
        await lock.release();
      }
      return true;
    },
    sweepEveryMs: team.heartbeatSeconds * 1000,
    serve: async (concurrency, run, dead) => {
      await ready();
      await team.work(TASK_QUEUE, { concurrency }, (job) => run(job.data.id, job.retryCount + 1));
      await team.work(`${TASK_QUEUE}-dead`, { concurrency: 1 }, (job) => dead(job.data.id));
    },
    announce: (topic, id, seq) => void team.announce(topic, id, seq).catch(() => {}),
    on: (topic, handler) => team.on(topic, (announcement) => handler(announcement.id, announcement.seq)),
  };
}

export const tasksSubsystem: Subsystem = {
  name: 'tasks',
  provides: ['tasks'],
  setup(ctx) {
    const tasks = new TaskService({
      store: ctx.store,
      enabled: ctx.settings.tasks.enabled,
      concurrency: ctx.settings.tasks.concurrency,
      eventsPerTask: ctx.settings.tasks.eventsPerTask,
      retentionMs: durationMs(ctx.settings.tasks.retention),
      log: ctx.log,
      ...(ctx.services.has('team') ? { team: taskTeam(ctx.services.get('team')) } : {}),
    });
    ctx.services.provide('tasks', tasks);
    // Recovery does not wait for other subsystems: stored tasks of a kind registered later are
    // picked up when it registers.
    tasks.start().catch((err: unknown) => ctx.log.error('task recovery failed', { error: String(err) }));
  },
  routes: (app, ctx) => mountRoutes(app, taskRoutes(ctx.services.get('tasks'), ctx.settings)),
  async close(ctx) {
    await ctx.services.find('tasks')?.stop();
  },
};

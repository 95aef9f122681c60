/**
 * The task subsystem as the server wires it: builds the `TaskService` from the `tasks.*` settings,
 * publishes it as `ctx.tasks` for other subsystems, mounts the board, and stops the runner on
 * shutdown (unfinished work is then recovered by the next start, see `service.ts`).
 *
 * Other subsystems register their kinds in their own `setup`, after this one (the subsystem list
 * puts tasks before its users).
 */
import type { Subsystem } from '../kernel/context.js';
import { taskRoutes } from './routes.js';
import { TaskService } from './service.js';

export const tasksSubsystem: Subsystem = {
  name: 'tasks',
  setup(ctx) {
    ctx.tasks = new TaskService({
      store: ctx.store,
      enabled: ctx.settings.tasks.enabled,
      concurrency: ctx.settings.tasks.concurrency,
      eventsPerTask: ctx.settings.tasks.eventsPerTask,
      log: ctx.log,
    });
    // Recovery does not wait for other subsystems: stored tasks of a kind registered later are
    // picked up when it registers.
    ctx.tasks.start().catch((err: unknown) => ctx.log.error('task recovery failed', { error: String(err) }));
  },
  routes: taskRoutes,
  async close(ctx) {
    await ctx.tasks?.stop();
  },
};

/**
 * Ingestion on the task board: `ingestion.run` (/run/async) runs one ingestor run as a task,
 * `ingestion.batch` (/run/batch) several runs of one ingestor, one after another, each with its own
 * result. Both are idempotent: runs upsert under stable ids, so a run interrupted by a restart is
 * simply run again.
 */
import { formatIssues } from '../http/validate.js';
import { errorMessage, fail, HangarError } from '../kernel/errors.js';
import type { TaskService } from '../tasks/service.js';
import { runBatch } from '../tasks/types.js';
import { BatchRunRequest, type BatchRunResult, RunRequest } from './schemas.js';
import type { IngestionService } from './service.js';

export const INGESTION_TASK_KIND = 'ingestion.run';
/** A `/run/batch` task: its input is `{runs: [...]}`, its result one entry per run. */
export const INGESTION_BATCH_TASK_KIND = 'ingestion.batch';

export function registerIngestionTasks(tasks: TaskService, service: IngestionService): void {
  tasks.registerKind(INGESTION_TASK_KIND, {
    idempotent: true,
    prepare(submission) {
      const parsed = RunRequest.safeParse(submission.input);
      if (!parsed.success) throw fail('HANGAR_INGESTOR_INPUT_INVALID', { problems: formatIssues(parsed.error.issues, 'body') });
      service.check(submission.target, parsed.data.options);
      return { input: parsed.data };
    },
    run: (task) =>
      service.run(task.task.target, task.task.input as RunRequest, {
        principal: task.task.principal,
        signal: task.signal,
        taskId: task.task.id,
        operation: 'run.async',
        onProgress: (done, total) => task.progress((100 * done) / total, `${done}/${total} resources`),
      }),
  });
  tasks.registerKind(INGESTION_BATCH_TASK_KIND, {
    idempotent: true,
    prepare(submission) {
      const parsed = BatchRunRequest.safeParse(submission.input);
      if (!parsed.success) throw fail('HANGAR_INGESTOR_INPUT_INVALID', { problems: formatIssues(parsed.error.issues, 'body') });
      // Every run's options up front, as the other batches check every item before a task exists.
      parsed.data.runs.forEach((run, i) => service.check(submission.target, run.options, `body.runs.${i}.options`));
      return { input: parsed.data };
    },
    // One run after another (runs of an ingestor never overlap anyway); a failing run does not stop
    // the rest, a cancelled task does (the board discards the outcome then).
    run: (task): Promise<BatchRunResult> =>
      runBatch(task, (task.task.input as BatchRunRequest).runs, {
        concurrency: 1,
        unit: 'runs',
        item: async (run, index): Promise<BatchRunResult['results'][number]> => {
          try {
            const result = await service.run(task.task.target, run, {
              principal: task.task.principal,
              signal: task.signal,
              taskId: task.task.id,
              operation: 'run.batch',
            });
            return { index, ok: true, result };
          } catch (err) {
            return { index, ok: false, status: err instanceof HangarError ? err.status : 500, error: errorMessage(err) };
          }
        },
        succeeded: (result) => result.ok,
      }),
  });
}

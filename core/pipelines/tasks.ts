/**
 * Async and batch pipeline runs on the task board.
 *
 *   POST /api/v1/pipelines/{name}/run/async   body: the pipeline input        → 202 task
 *   POST /api/v1/pipelines/{name}/run/batch   body: {"inputs": [input, ...]}  → 202 task
 *
 * The pipeline is checked (exists, valid) before the task is queued. `pipeline.run` completes with
 * the run record or fails with the failed step named; a batch runs the inputs `BATCH_CONCURRENCY`
 * at a time and always completes, listing each run's status, output, error and run id (every run
 * is also stored as usual). Neither kind is idempotent: steps may call upstreams that act.
 */
import { errorMessage } from '../kernel/errors.js';
import type { TaskService } from '../tasks/service.js';
import { type BatchOutcome, batchInputs, runBatch } from '../tasks/types.js';
import { checkRunInput } from './input.js';
import { PipelineRunFailed, type PipelineService } from './service.js';

export const PIPELINE_RUN_TASK = 'pipeline.run';
export const PIPELINE_BATCH_TASK = 'pipeline.batch';
export const BATCH_CONCURRENCY = 2;

export interface PipelineBatchItem {
  index: number;
  status: 'completed' | 'failed' | 'canceled';
  run_id: string | null;
  output: unknown;
  error: string | null;
  failed_step: string | null;
}

export class PipelineJobs {
  constructor(
    private readonly tasks: TaskService,
    private readonly pipelines: PipelineService,
  ) {
    // One PipelineJobs per server, built at setup: the kinds are registered once.
    tasks.registerKind(PIPELINE_RUN_TASK, {
      prepare: async ({ target, input }) => {
        await this.pipelines.runnable(target);
        return { input };
      },
      run: (ctx) =>
        this.pipelines.run(ctx.task.target, ctx.task.input, { principal: ctx.task.principal, signal: ctx.signal, taskId: ctx.task.id }),
    });
    tasks.registerKind(PIPELINE_BATCH_TASK, {
      prepare: async ({ target, input }) => {
        await this.pipelines.runnable(target);
        return { input: { inputs: batchInputs(input, 'body.input') } };
      },
      run: (ctx): Promise<BatchOutcome<PipelineBatchItem>> =>
        runBatch(ctx, (ctx.task.input as { inputs: unknown[] }).inputs, {
          concurrency: BATCH_CONCURRENCY,
          unit: 'runs',
          item: (input, index) => this.#item(ctx.task.target, input, index, ctx.task.principal, ctx.signal, ctx.task.id),
          succeeded: (item) => item.status === 'completed',
        }),
    });
  }

  async submitRun(name: string, input: unknown, principal: string) {
    checkRunInput((await this.pipelines.runnable(name)).input_schema, input ?? {});
    return this.tasks.submit({ kind: PIPELINE_RUN_TASK, target: name, input: input ?? {}, principal });
  }

  async submitBatch(name: string, body: unknown, principal: string) {
    const definition = await this.pipelines.runnable(name);
    const inputs = batchInputs(body, 'body');
    inputs.forEach((input, i) => checkRunInput(definition.input_schema, input ?? {}, `body.inputs.${i}`));
    return this.tasks.submit({ kind: PIPELINE_BATCH_TASK, target: name, input: { inputs }, principal });
  }

  async #item(
    name: string,
    input: unknown,
    index: number,
    principal: string,
    signal: AbortSignal,
    taskId: string,
  ): Promise<PipelineBatchItem> {
    try {
      const run = await this.pipelines.run(name, input, { principal, signal, taskId });
      return { index, status: 'completed', run_id: run.id, output: run.output, error: null, failed_step: null };
    } catch (err) {
      if (err instanceof PipelineRunFailed) {
        return { index, status: 'failed', run_id: err.run.id, output: null, error: err.run.error, failed_step: err.run.failed_step };
      }
      return {
        index,
        status: signal.aborted ? 'canceled' : 'failed',
        run_id: null,
        output: null,
        error: errorMessage(err),
        failed_step: null,
      };
    }
  }
}

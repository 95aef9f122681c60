/**
 * Async and batch runs of custom endpoints on the shared task board (spec document 1: "the async
 * and batch variants of a resource require the task subsystem").
 *
 *   POST /api/v1/endpoints/{name}{path}/async   body: the endpoint's input       → 202 task
 *   POST /api/v1/endpoints/{name}{path}/batch   body: {"inputs": [input, ...]}   → 202 task
 *
 * Decisions:
 * - Input is validated before the task exists (422 naming the field, `body.inputs.3.city` in a
 *   batch), and validated again when it runs, since the definition may have been hot-reloaded in
 *   between. The task stores the input as sent, never a resolved `${ENV}` value.
 * - The fan-out runs with the endpoint's first declared method unless `?method=` names another
 *   declared one (it decides the upstream method and whether input goes as query or body).
 * - `endpoint.call` ends `completed` with the fan-out envelope as its result, or `failed` with the
 *   502 detail (secrets already redacted). A batch always completes unless cancelled: each item
 *   records its own success, status and error, with `succeeded`/`failed` counts; progress is
 *   reported per item. Items run `BATCH_CONCURRENCY` at a time, in input order.
 * - Neither kind is `idempotent`: an endpoint may POST to an upstream, so a run interrupted by a
 *   restart is failed rather than replayed.
 * - Cancelling the task aborts the upstream calls in flight.
 */
import { errorMessage, fail, HangarError } from '../kernel/errors.js';
import type { TaskService } from '../tasks/service.js';
import { type BatchOutcome, batchInputs, runBatch } from '../tasks/types.js';
import type { HttpMethod } from './schemas.js';
import { EndpointFailure, type EndpointService } from './service.js';
import type { UpstreamResult } from './types.js';

export const ENDPOINT_CALL_TASK = 'endpoint.call';
export const ENDPOINT_BATCH_TASK = 'endpoint.batch';
export const BATCH_CONCURRENCY = 4;

interface CallInput {
  method: HttpMethod;
  input: unknown;
}
interface BatchInput {
  method: HttpMethod;
  inputs: unknown[];
}

export interface BatchItemResult {
  index: number;
  success: boolean;
  /** HTTP status the item would have had as a direct call. */
  status: number;
  aggregated: unknown;
  upstreams: UpstreamResult[];
  error: string | null;
}

export type BatchResult = BatchOutcome<BatchItemResult>;

/** Submits endpoint runs to the board; what the `/async` and `/batch` routes call. */
export class EndpointJobs {
  constructor(
    private readonly tasks: TaskService,
    private readonly endpoints: EndpointService,
  ) {
    // One EndpointJobs per server, built at setup: the kinds are registered once.
    tasks.registerKind(ENDPOINT_CALL_TASK, {
      prepare: ({ target, input }) => ({ target, input: this.#checkCall(target, input, 'body.input') }),
      run: (ctx) => {
        const { method, input } = ctx.task.input as CallInput;
        return this.endpoints.invoke(ctx.task.target, method, input, { signal: ctx.signal });
      },
    });
    tasks.registerKind(ENDPOINT_BATCH_TASK, {
      prepare: ({ target, input }) => ({ target, input: this.#checkBatch(target, input, 'body.input') }),
      run: (ctx): Promise<BatchResult> => {
        const { method, inputs } = ctx.task.input as BatchInput;
        return runBatch(ctx, inputs, {
          concurrency: BATCH_CONCURRENCY,
          unit: 'inputs',
          item: (input, index) => this.#item(ctx.task.target, method, input, index, ctx.signal),
          succeeded: (result) => result.success,
        });
      },
    });
  }

  /** Queue one call; the input is checked first (422 naming the body field). */
  async submitCall(name: string, method: string | undefined, input: unknown, principal: string) {
    const verb = this.#method(name, method);
    this.endpoints.checkInput(name, input, 'body');
    return this.tasks.submit({ kind: ENDPOINT_CALL_TASK, target: name, input: { method: verb, input }, principal });
  }

  /** Queue a batch; every item is checked first (422 naming `body.inputs.<i>.<field>`). */
  async submitBatch(name: string, method: string | undefined, body: unknown, principal: string) {
    const input = this.#checkBatch(name, { method: this.#method(name, method), inputs: (body as { inputs?: unknown })?.inputs }, 'body');
    return this.tasks.submit({ kind: ENDPOINT_BATCH_TASK, target: name, input, principal });
  }

  #method(name: string, method: string | undefined): HttpMethod {
    const config = this.endpoints.require(name);
    if (method === undefined) return config.methods[0];
    const verb = method.toUpperCase() as HttpMethod;
    if (!config.methods.includes(verb)) {
      throw fail('HANGAR_ENDPOINT_METHOD_UNDECLARED', { endpoint: name, method: verb, declared: config.methods.join(', ') });
    }
    return verb;
  }

  #checkCall(name: string, raw: unknown, where: string): CallInput {
    const call = (raw ?? {}) as Partial<CallInput>;
    const method = this.#method(name, call.method);
    this.endpoints.checkInput(name, call.input, `${where}.input`);
    return { method, input: call.input };
  }

  #checkBatch(name: string, raw: unknown, where: string): BatchInput {
    const batch = (raw ?? {}) as Partial<BatchInput>;
    const method = this.#method(name, batch.method);
    const inputs = batchInputs(batch, where);
    inputs.forEach((item, i) => this.endpoints.checkInput(name, item, `${where}.inputs.${i}`));
    return { method, inputs };
  }

  async #item(name: string, method: HttpMethod, input: unknown, index: number, signal: AbortSignal): Promise<BatchItemResult> {
    try {
      const result = await this.endpoints.invoke(name, method, input, { signal });
      return { index, success: true, status: 200, aggregated: result.aggregated, upstreams: result.upstreams, error: null };
    } catch (err) {
      const status = err instanceof HangarError ? err.status : 500;
      const upstreams = err instanceof EndpointFailure ? err.upstreams : [];
      return { index, success: false, status, aggregated: null, upstreams, error: errorMessage(err) };
    }
  }
}

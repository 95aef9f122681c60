/**
 * A custom handler's call: the context it gets (`call` one upstream by name, `fanOut` to several
 * under the endpoint's aggregation, both recorded for the answer's `upstreams`), and what its
 * outcome becomes — an escaped `UpstreamCallError` is the endpoint's 502, a `HangarError` is passed
 * on with the call's secrets masked, anything else (or a value failing the `output` model) is a
 * 500, since that is a bug in the handler rather than in an upstream.
 *
 * Where it runs: a drop-in's handler in its supervised host (hosts.ts), whose `ctx.call` and
 * `ctx.fanOut` are answered here; a handler registered in code or marked `isolation: 'inline'` on
 * this thread. Either way the call has a deadline (the endpoint's `timeout_ms`, else the
 * `endpoints.timeoutMs` setting): at it `ctx.signal` aborts and the caller gets 504 at once; a
 * hosted handler that ignores its signal is stopped with its thread.
 */

import { formatIssues } from '../http/validate.js';
import { errorMessage, fail, HangarError } from '../kernel/errors.js';
import { runErrorFields } from '../kernel/stack.js';
import { publicResult, runAggregation } from './aggregate.js';
import type { EndpointHosts, HandlerRemote } from './hosts.js';
import type { Redactor } from './interpolation.js';
import type { EndpointOutcome } from './metrics.js';
import type { EndpointConfig, HttpMethod, UpstreamDefinition } from './schemas.js';
import {
  type EndpointContext,
  type FanOutResult,
  UpstreamCallError,
  type UpstreamCallOptions,
  type UpstreamCallResult,
  type UpstreamResult,
} from './types.js';

/** One upstream call as the service makes it (method, headers, retries and metrics included). */
export type UpstreamCaller = (
  u: UpstreamDefinition,
  s: AbortSignal,
  i: unknown,
  extra?: UpstreamCallOptions,
) => Promise<UpstreamCallResult>;

/** How the service reports the outcomes a handler call can end in. */
export interface HandlerOutcomes {
  observe(outcome: EndpointOutcome): void;
  /** The error for the caller having gone away (its signal aborted). */
  clientGone(): HangarError;
  /** The error for an upstream call that failed inside the handler, given every call recorded. */
  upstreamFailure(recorded: UpstreamResult[]): HangarError;
}

/** How long a handler's call may take, and where it runs. */
export interface HandlerRun {
  deadlineMs: number;
  /** The supervised hosts; without them every handler runs on this thread. */
  hosts?: EndpointHosts;
}

/** Run the endpoint's custom handler on validated `input`. */
export async function runHandler(
  config: EndpointConfig,
  verb: HttpMethod,
  input: unknown,
  callerSignal: AbortSignal,
  call: UpstreamCaller,
  redactor: Redactor,
  outcomes: HandlerOutcomes,
  run: HandlerRun,
): Promise<FanOutResult> {
  const { observe } = outcomes;
  const deadline = new AbortController();
  const timer = setTimeout(
    () => deadline.abort(fail('HANGAR_ENDPOINT_TIMEOUT', { endpoint: config.name, ms: run.deadlineMs })),
    run.deadlineMs,
  );
  const signal = AbortSignal.any([callerSignal, deadline.signal]);
  // Results of every upstream call the handler makes, in the order they finish.
  const recorded: UpstreamResult[] = [];
  const find = (upstream: string) => {
    const found = config.upstreams.find((u) => u.name === upstream);
    if (!found) {
      throw new Error(`unknown upstream '${upstream}' (declared: ${config.upstreams.map((u) => u.name).join(', ') || 'none'})`);
    }
    return found;
  };
  const ctx: EndpointContext = {
    endpoint: config.name,
    method: verb,
    upstreams: config.upstreams.map((u) => u.name),
    signal,
    call: async <T>(upstream: string, options: UpstreamCallOptions = {}): Promise<T> => {
      const result = await call(find(upstream), signal, 'input' in options ? options.input : input, options);
      recorded.push(publicResult(result));
      if (!result.ok) throw new UpstreamCallError(publicResult(result));
      return result.data as T;
    },
    fanOut: async <T>(fanInput: unknown = input, only?: readonly string[]): Promise<FanOutResult<T>> => {
      const upstreams = only ? only.map(find) : config.upstreams;
      const result = await runAggregation(config.aggregation, upstreams, (u, s) => call(u, s, fanInput), signal);
      recorded.push(...result.upstreams);
      return result as FanOutResult<T>;
    },
  };
  const remote: HandlerRemote = {
    call: async (upstream, options) => {
      const result = await call(find(upstream), signal, 'input' in options ? options.input : input, options);
      const visible = publicResult(result);
      recorded.push(visible);
      return result.ok ? { result: visible, data: result.data } : { result: visible };
    },
    fanOut: (fan, only) => ctx.fanOut('input' in fan ? fan.input : input, only ?? undefined),
  };
  const hosted = run.hosts?.supervises(config) === true;
  let value: unknown;
  try {
    const work = hosted
      ? run.hosts!.run(config, verb, input, signal, remote)
      : Promise.resolve().then(() => config.handler!(input as never, ctx as never));
    value = await untilAborted(work, signal);
  } catch (err) {
    if (deadline.signal.aborted) {
      observe('timeout');
      throw deadline.signal.reason;
    }
    if (callerSignal.aborted) throw outcomes.clientGone();
    // A hosted handler's UpstreamCallError arrives rebuilt, by name.
    if (err instanceof UpstreamCallError || (hosted && (err as Error).name === 'UpstreamCallError')) {
      observe('upstream_failure');
      throw outcomes.upstreamFailure(recorded);
    }
    observe('handler_error');
    if (err instanceof HangarError) throw redactedError(err, redactor);
    // Where the handler threw, mapped to the person's file (core/kernel/stack.ts), as agent runs answer.
    const problem = redactor.redact(errorMessage(err));
    throw fail(
      'HANGAR_ENDPOINT_HANDLER_FAILED',
      { endpoint: config.name, problem },
      { fields: { error: problem, ...runErrorFields(err) } },
    );
  } finally {
    clearTimeout(timer);
  }
  if (config.output) {
    const checked = config.output.safeParse(value);
    if (!checked.success) {
      observe('handler_error');
      throw fail('HANGAR_ENDPOINT_HANDLER_OUTPUT_INVALID', {
        endpoint: config.name,
        problems: redactor.redact(formatIssues(checked.error.issues, 'output')),
      });
    }
    value = checked.data;
  }
  observe('success');
  return { success: true, aggregated: value ?? null, upstreams: recorded };
}

/**
 * `work`, or the signal's reason as soon as it aborts: the caller is answered at its deadline
 * whether or not the handler stops (a hosted one that does not is stopped with its thread).
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** An error a handler threw on purpose, with every secret of the call masked in its body; its code stays. */
function redactedError(err: HangarError, redactor: Redactor): HangarError {
  const {
    detail,
    code: _code,
    ...fields
  } = JSON.parse(redactor.redact(JSON.stringify(err.toBody()))) as { detail: HangarError['detail']; code?: string } & Record<
    string,
    unknown
  >;
  return new HangarError(err.status, detail, err.headers, fields, err.code);
}

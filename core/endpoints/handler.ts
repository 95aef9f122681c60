/**
 * A custom handler's call: the context it gets (`call` one upstream by name, `fanOut` to several
 * under the endpoint's aggregation, both recorded for the answer's `upstreams`), and what its
 * outcome becomes — an escaped `UpstreamCallError` is the endpoint's 502, a `HangarError` is passed
 * on with the call's secrets masked, anything else (or a value failing the `output` model) is a
 * 500, since that is a bug in the handler rather than in an upstream.
 */

import { formatIssues } from '../http/validate.js';
import { errorMessage, fail, HangarError } from '../kernel/errors.js';
import { runErrorFields } from '../kernel/stack.js';
import { publicResult, runAggregation } from './aggregate.js';
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

/** Run the endpoint's custom handler on validated `input`. */
export async function runHandler(
  config: EndpointConfig,
  verb: HttpMethod,
  input: unknown,
  signal: AbortSignal,
  call: UpstreamCaller,
  redactor: Redactor,
  outcomes: HandlerOutcomes,
): Promise<FanOutResult> {
  const { observe } = outcomes;
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
  let value: unknown;
  try {
    value = await config.handler!(input as never, ctx as never);
  } catch (err) {
    if (signal.aborted) throw outcomes.clientGone();
    if (err instanceof UpstreamCallError) {
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

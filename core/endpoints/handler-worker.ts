/**
 * The host thread an endpoint's custom handler runs in (hosts.ts starts it with a heap cap). The
 * handler gets the `ctx` it gets on the server: `call` and `fanOut` are answered by the server
 * (one HTTP client, its retries, auth tokens and metrics), an upstream that failed throws the same
 * `UpstreamCallError` here, and the handler's value crosses back to be checked by its `output` model.
 */
import '../kernel/host-thread.js';
import type { MessagePort } from 'node:worker_threads';
import * as zod from 'zod';
import type { HostedReply, WarmTask } from '../kernel/dropin-host-protocol.js';
import { definitionOf, serveHosted } from '../kernel/dropin-host-worker.js';
import * as sdk from '../sdk.js';
import type { HandlerTask, HostedUpstreamCall } from './hosts.js';
import type { HttpMethod } from './schemas.js';
import { type EndpointContext, type FanOutResult, UpstreamCallError } from './types.js';

const provided: Record<string, unknown> = { hangar: sdk, zod, 'zod/v4': zod };

export default function runHandler(task: (HandlerTask & { port: MessagePort }) | WarmTask): Promise<HostedReply> {
  // Loading this module (the SDK, zod) was the work; nothing else to do.
  if ('warm' in task) return Promise.resolve({ value: undefined });
  return serveHosted(task, provided, async (exports, io) => {
    const handler = definitionOf(exports).handler;
    if (typeof handler !== 'function') throw new Error(`this build of endpoint '${task.name}' has no handler`);
    const ctx: EndpointContext = {
      endpoint: task.name,
      method: task.method as HttpMethod,
      upstreams: task.upstreams,
      signal: io.signal,
      call: async <T>(upstream: string, options?: object) => {
        const outcome = await io.call<HostedUpstreamCall>('call', [upstream, options ?? {}]);
        if (!outcome.result.ok) throw new UpstreamCallError(outcome.result);
        return outcome.data as T;
      },
      fanOut: <T>(input?: unknown, only?: readonly string[]) =>
        io.call<FanOutResult<T>>('fanOut', [input === undefined ? { default: true } : { input }, only ?? null]),
    };
    return handler(task.input, ctx);
  });
}

/**
 * `defineEndpoint`: what a drop-in in `endpoints/` exports (re-exported by the SDK as `hangar`).
 * Like `defineAgent` it only tags and returns the definition; `parseEndpointDefinition` in
 * service.ts validates it at discovery, so a mistake is a drop-in error rather than a crash.
 */
import type { z } from 'zod';
import type { Aggregation, HttpMethod, UpstreamDefinitionInput } from './schemas.js';
import type { EndpointContext } from './types.js';

/**
 * The SDK's tag symbol. `Symbol.for` yields the same symbol as `DEFINITION_KIND` in core/sdk.ts
 * without importing it (sdk.ts re-exports this file, and an import back would be a cycle).
 */
const DEFINITION_KIND = Symbol.for('hangar.kind');

export type EndpointHandler<Req extends z.ZodType, Out> = (input: z.output<Req>, ctx: EndpointContext) => Promise<Out> | Out;

export interface EndpointDefinition<Req extends z.ZodType = z.ZodType, Res extends z.ZodType = z.ZodType, Out = unknown> {
  /** Route segment under /api/v1/endpoints; drop-ins default it to the file name. */
  name?: string;
  description?: string;
  version?: string;
  /** Route path of the main operation (literal), default `/`. */
  path?: string;
  /** Default `['POST']`. Several methods may share the path. */
  methods?: Array<HttpMethod | Lowercase<HttpMethod>>;
  /** Default `ALL`. */
  aggregation?: Aggregation;
  upstreams?: UpstreamDefinitionInput[];
  /** Input model: the JSON body of write methods, the query parameters of GET/HEAD. */
  request?: Req;
  /** Model of ONE upstream's answer; a failing answer counts as that upstream failing. */
  response?: Res;
  /**
   * Model of the aggregated value. Default: `{[upstream]: response}` for ALL, `response` for
   * FIRST_SUCCESS and MAJORITY; with a handler, whatever the handler returns.
   */
  output?: z.ZodType<Out>;
  /** Custom logic instead of the default fan-out; `ctx.call` reaches single upstreams. */
  handler?: EndpointHandler<Req, Out>;
  /** Deadline of a handler's call in ms (default: the `endpoints.timeoutMs` setting, 60 s); past it: 504. */
  timeout_ms?: number;
  /** Heap cap of the handler's host thread in MB (default: the `endpoints.maxHeapMb` setting, 256). */
  max_heap_mb?: number;
  /** `'inline'`: run the handler on the server's thread rather than in its supervised host. */
  isolation?: 'supervised' | 'inline';
}

/**
 * Declare a custom endpoint.
 *
 * @example
 * export default defineEndpoint({
 *   description: 'Forecast from two providers',
 *   path: '/forecast',
 *   methods: ['GET', 'POST'],
 *   request: z.object({ city: z.string() }),
 *   response: z.object({ temp_c: z.number() }),
 *   upstreams: [
 *     { name: 'a', base_url: '${WEATHER_A_URL}', path: '/now', auth: { type: 'BEARER', api_key: '${WEATHER_A_KEY}' } },
 *     { name: 'b', base_url: '${WEATHER_B_URL}', path: '/current' },
 *   ],
 * });
 */
export function defineEndpoint<Req extends z.ZodType = z.ZodType, Res extends z.ZodType = z.ZodType, Out = unknown>(
  definition: EndpointDefinition<Req, Res, Out>,
): EndpointDefinition<Req, Res, Out> {
  Object.defineProperty(definition, DEFINITION_KIND, { value: 'endpoint', enumerable: false });
  return definition;
}

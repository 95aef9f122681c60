/**
 * Routes declared as data. A route is its method, URL, zod schemas, summary and `config` — what it
 * calls (`resource`) and who may call it (`guard`) — plus its handler:
 *
 * ```ts
 * export const getThread = defineRoute({
 *   method: 'GET',
 *   url: '/api/v1/:agent/threads/:thread_id',
 *   summary: 'Get a thread',
 *   tags: ['threads'],
 *   schema: { response: { 200: Thread, 404: 'unknown thread, or a thread of another principal' } },
 *   handler: ({ params, req }) => threads.get(params.agent, params.thread_id, viewerOf(req)),
 * });
 * ```
 *
 * `mountRoutes` adds them to the Fastify app; /openapi.json is built from what the app's `onRoute`
 * hook sees (core/http/openapi.ts), so a route cannot exist without being documented. Guards and the
 * invocation log read `req.routeOptions.config` (`resourceCallOf`) instead of parsing the URL again.
 *
 * Inputs are parsed with zod when the handler first reads them (`body`, `query`, `params` are
 * getters), so a handler that checks the agent exists before reading the body answers 404 before
 * 422, as it did when each handler called `parseInput` itself. Destructuring the input
 * (`({ params, body }) => …`) reads every getter at once: a handler whose checks must come before
 * the body's reads `input.body` where it needs it.
 *
 * A schema only routes read — a response they document, the body or query of a route called now
 * and then — is declared `z.lazy(() => …)` in its subsystem's schemas.ts: zod builds it the first
 * time /openapi.json, a test or the route reads it, not as the module loads. Building every schema
 * at load was ~3,200 zod schemas and a large share of each start's module evaluation (README,
 * Benchmarks, session 23); what is read on every call (the invoke and chat bodies, path parameters)
 * or at start (settings, drop-in definitions) is built as before. zod's lazy is transparent to
 * parsing and to the JSON Schema /openapi.json shows; `.unwrap()` reaches the object to `.extend` it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { z } from 'zod';
import { parseInput } from './validate.js';

export type RouteMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';

/** Every method a catch-all must answer: HEAD is routed as GET (core/http/app.ts, `headAsGet`). */
export const ROUTED_METHODS: RouteMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A response: its schema, or just what it means, or both (with a content type other than JSON). */
export type ResponseSpec = z.ZodType | string | { description: string; schema?: z.ZodType; contentType?: string };

export interface RouteSchema<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType> {
  params?: P;
  querystring?: Q;
  body?: B;
  /** Status → response. A route without one documents `200: OK`. */
  response?: Record<number, ResponseSpec>;
}

/** The kinds of resources whose calls are logged, gated by the control plane and counted. */
export type ResourceKind = 'agent' | 'endpoint' | 'plugin' | 'ingestor' | 'pipeline';

export interface ResourceConfig {
  kind: ResourceKind;
  /** The path parameter holding the resource's name. */
  param: string;
  /** What the call does ('invoke', 'predict', 'run.async', 'health'); a function for routes that serve many. */
  operation: string | ((req: FastifyRequest) => string);
  /** True for calls that do work (logged, drained, disabled by the control plane); false for health and cards. */
  invocation: boolean;
}

export interface RouteConfig {
  resource?: ResourceConfig;
  /** Reachable without the API token (probes, discovery documents, the UI's files). */
  public?: boolean;
  /** Kept out of /openapi.json (the catch-all 404, the UI's static files). */
  hidden?: boolean;
}

export interface RouteInput<P, Q, B> {
  readonly params: P;
  readonly query: Q;
  readonly body: B;
  readonly req: FastifyRequest;
  readonly reply: FastifyReply;
}

type Out<S, Fallback> = S extends z.ZodType ? z.output<S> : Fallback;

export interface RouteDefinition<P extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, B extends z.ZodType = z.ZodType> {
  method: RouteMethod | RouteMethod[];
  /** Fastify's syntax: `/api/v1/:agent/threads/:thread_id`. */
  url: string;
  summary: string;
  description?: string;
  tags?: string[];
  schema?: RouteSchema<P, Q, B>;
  config?: RouteConfig;
  /** Body parsing off (the handler reads the raw stream), for proxies and uploads. */
  rawBody?: boolean;
  handler(input: RouteInput<Out<P, Record<string, string>>, Out<Q, Record<string, unknown>>, Out<B, unknown>>): unknown;
}

// biome-ignore lint/suspicious/noExplicitAny: a list of routes holds routes of every input type
export type AnyRoute = RouteDefinition<any, any, any>;

/** A route, typed from its schemas (the identity; it exists for inference, as tRPC's procedures do). */
export function defineRoute<P extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, B extends z.ZodType = z.ZodType>(
  route: RouteDefinition<P, Q, B>,
): RouteDefinition<P, Q, B> {
  return route;
}

/** What `onRoute` finds in a declared route's config: the declaration, for the OpenAPI document. */
export interface DeclaredRouteConfig extends RouteConfig {
  declaration?: AnyRoute;
}

export function mountRoutes(app: FastifyInstance, routes: readonly AnyRoute[]): void {
  for (const route of routes) {
    const { schema } = route;
    app.route({
      method: route.method as HTTPMethods | HTTPMethods[],
      url: route.url,
      config: { ...route.config, declaration: route } satisfies DeclaredRouteConfig,
      handler(req, reply) {
        return route.handler(new ParsedInput(req, reply, schema, req.params) as never);
      },
    });
  }
}

/**
 * Answer `req` with a declared route Fastify did not match itself, its path parameters found by
 * another router (core/http/on-first-use.ts).
 */
export function callRoute(route: AnyRoute, req: FastifyRequest, reply: FastifyReply, params: Record<string, string>): unknown {
  return route.handler(new ParsedInput(req, reply, route.schema, params) as never);
}

/**
 * A handler's input, each part parsed on its first read. A class rather than an object literal with
 * getters: a literal's getters are new closures each time, and V8 builds such an object on its slow
 * path (about 0.9 µs a request on this machine, against 0.05 µs for an instance), on every route.
 */
class ParsedInput {
  #parsed = 0;
  #params: unknown;
  #query: unknown;
  #body: unknown;
  constructor(
    readonly req: FastifyRequest,
    readonly reply: FastifyReply,
    private readonly schema: RouteSchema<z.ZodType, z.ZodType, z.ZodType> | undefined,
    private readonly rawParams: unknown,
  ) {}
  get params(): unknown {
    if (!(this.#parsed & 1)) {
      this.#params = this.schema?.params ? parseInput(this.schema.params, this.rawParams, 'params') : this.rawParams;
      this.#parsed |= 1;
    }
    return this.#params;
  }
  get query(): unknown {
    if (!(this.#parsed & 2)) {
      this.#query = this.schema?.querystring ? parseInput(this.schema.querystring, this.req.query, 'query') : this.req.query;
      this.#parsed |= 2;
    }
    return this.#query;
  }
  get body(): unknown {
    if (!(this.#parsed & 4)) {
      this.#body = this.schema?.body ? parseInput(this.schema.body, this.req.body, 'body') : this.req.body;
      this.#parsed |= 4;
    }
    return this.#body;
  }
}

/** The resource a request calls, from the matched route's config; undefined for every other route. */
export interface ResourceCall {
  resource: ResourceKind;
  name: string;
  operation: string;
  invocation: boolean;
}

export function resourceCallOf(req: FastifyRequest): ResourceCall | undefined {
  const resource = (req.routeOptions.config as RouteConfig | undefined)?.resource;
  if (!resource) return undefined;
  const name = (req.params as Record<string, string | undefined>)[resource.param];
  if (!name) return undefined;
  return {
    resource: resource.kind,
    name,
    operation: typeof resource.operation === 'function' ? resource.operation(req) : resource.operation,
    invocation: resource.invocation,
  };
}

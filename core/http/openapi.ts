import type { RouteOptions } from 'fastify';
import { z } from 'zod';
import type { AnyRoute, DeclaredRouteConfig, ResponseSpec, RouteMethod } from './route.js';

/**
 * The OpenAPI 3.1 document, built live. Subsystems describe their routes with zod schemas, either
 * once (`add`) or through a provider that is asked on every build (`addProvider`) — per-agent and
 * per-endpoint routes come from providers reading the registry, so a drop-in discovered a moment
 * ago is in /openapi.json without a restart. The built document is cached until `invalidate()`
 * (the server calls it on every registry change).
 */

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head';

/** What the document keeps of a route Fastify registers (or one declared and loaded on first use). */
export type RegisteredRoute = Pick<RouteOptions, 'method' | 'url' | 'schema'> & { config?: unknown };

const DOCUMENTED_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']);

/** `/api/v1/:agent/threads/:thread_id` → `/api/v1/{agent}/threads/{thread_id}`; a wildcard becomes `{path}`. */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{path}');
}

function responseDoc(spec: ResponseSpec): { description: string; schema?: z.ZodType; contentType?: string } {
  if (typeof spec === 'string') return { description: spec };
  if (spec instanceof z.ZodType) return { description: 'OK', schema: spec };
  return spec;
}

/**
 * The docs of a route as Fastify registers it (`onRoute`): a route declared with `defineRoute`
 * (core/http/route.ts) brings its summary and schemas; any other route (an express router's mount,
 * a plain `app.get`) is still listed, by method and path, so /openapi.json never misses one. HEAD
 * routes Fastify adds beside GET, and routes marked `hidden` (or `schema.hide`), are left out.
 */
export function docsOfRoute(route: RegisteredRoute): RouteDoc[] {
  const config = (route.config ?? {}) as DeclaredRouteConfig;
  // `schema.hide` is how plugins hide theirs, as @fastify/swagger reads it (@fastify/static marks its file routes so).
  if (config.hidden || (route.schema as { hide?: boolean } | undefined)?.hide) return [];
  const declared = config.declaration;
  const methods = (Array.isArray(route.method) ? route.method : [route.method]).filter((m) => DOCUMENTED_METHODS.has(m));
  const declaredMethods = declared ? new Set(Array.isArray(declared.method) ? declared.method : [declared.method]) : undefined;
  return (
    methods
      // Fastify adds a HEAD route beside each GET; only a route that declares HEAD documents it.
      .filter((method) => (declaredMethods ? declaredMethods.has(method as RouteMethod) : method !== 'HEAD'))
      .map((method) => ({
        method: method.toLowerCase() as HttpMethod,
        path: openApiPath(route.url),
        summary: declared?.summary ?? `${method} ${route.url}`,
        ...(declared?.description ? { description: declared.description } : {}),
        ...(declared?.tags ? { tags: declared.tags } : {}),
        ...(declared?.schema?.body ? { body: declared.schema.body } : {}),
        ...(declared?.schema?.querystring ? { query: declared.schema.querystring } : {}),
        ...(declared?.schema?.response
          ? { responses: Object.fromEntries(Object.entries(declared.schema.response).map(([status, spec]) => [status, responseDoc(spec)])) }
          : {}),
      }))
  );
}

export interface RouteDoc {
  method: HttpMethod;
  /** OpenAPI path template: `/api/v1/{agent}/invoke`. */
  path: string;
  summary: string;
  description?: string;
  tags?: string[];
  body?: z.ZodType;
  query?: z.ZodType;
  /** status → description and optional schema; default `200: OK`. */
  responses?: Record<string, { description: string; schema?: z.ZodType; contentType?: string }>;
}

type JsonSchema = Record<string, unknown>;

function toSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  try {
    const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
    delete json.$schema;
    return json;
  } catch {
    return {};
  }
}

const errorSchema = { type: 'object', properties: { detail: {} }, required: ['detail'] };

/** Whether a JSON Schema describes an object (or may be one, as a nullable object or a union). */
function isObjectSchema(schema: JsonSchema): boolean {
  const s = schema as { type?: unknown; anyOf?: JsonSchema[]; oneOf?: JsonSchema[] };
  if (s.type === 'object' || (Array.isArray(s.type) && s.type.includes('object'))) return true;
  return [...(s.anyOf ?? []), ...(s.oneOf ?? [])].some(isObjectSchema);
}

export class OpenApiRegistry {
  /** Docs, and routes whose docs are made when the document is first built (not at each start). */
  private readonly docs: Array<RouteDoc | RegisteredRoute> = [];
  private readonly providers: Array<() => RouteDoc[]> = [];
  private readonly paramValues = new Map<string, () => string[]>();
  /** Subsystems loaded on their first request (core/http/on-first-use.ts), loaded by the first build. */
  private readonly onFirstUse: Array<() => Promise<AnyRoute[]>> = [];
  private cached: Record<string, unknown> | undefined;

  constructor(private readonly info: { title: string; version: string; description?: string }) {}

  add(...docs: RouteDoc[]): void {
    this.docs.push(...docs);
    this.invalidate();
  }

  /**
   * The routes Fastify registers: `app.addHook('onRoute', (route) => openapi.addRoute(route))`. Their
   * docs are made when the document is built: a start registers ~250 routes and only some starts
   * are ever asked for /openapi.json.
   */
  addRoute(route: RegisteredRoute): void {
    const { method, url, config, schema } = route;
    this.docs.push({ method, url, config, schema });
    this.invalidate();
  }

  /**
   * The current values of a path parameter (the agents' names for `{agent}`), listed as its enum
   * when the document is built, so a client sees which agents exist without one path per agent.
   */
  describeParam(name: string, values: () => string[]): void {
    this.paramValues.set(name, values);
    this.invalidate();
  }

  /** The routes of a subsystem loaded on its first request: `load` is called (it loads it) when the document is first built. */
  addOnFirstUse(load: () => Promise<AnyRoute[]>): void {
    this.onFirstUse.push(load);
    this.invalidate();
  }

  addProvider(provider: () => RouteDoc[]): void {
    this.providers.push(provider);
    this.invalidate();
  }

  invalidate(): void {
    this.cached = undefined;
  }

  async document(): Promise<Record<string, unknown>> {
    if (this.onFirstUse.length) {
      const loads = this.onFirstUse.splice(0);
      let routes: AnyRoute[][];
      try {
        routes = await Promise.all(loads.map((load) => load()));
      } catch (err) {
        // Asked again by the next build (each load is remembered by its subsystem once it succeeds).
        this.onFirstUse.unshift(...loads);
        throw err;
      }
      for (const route of routes.flat())
        this.addRoute({
          method: route.method,
          url: route.url,
          config: { ...route.config, declaration: route } satisfies DeclaredRouteConfig,
        });
    }
    this.cached ??= this.build();
    return this.cached;
  }

  private build(): Record<string, unknown> {
    const paths: Record<string, Record<string, unknown>> = {};
    // Providers (each custom endpoint's live schemas) come last, so they describe their paths.
    const docs = this.docs.flatMap((doc) => ('url' in doc ? docsOfRoute(doc) : [doc]));
    for (const doc of [...docs, ...this.providers.flatMap((p) => p())]) {
      const params = [...doc.path.matchAll(/\{([^}]+)\}/g)].map((m) => {
        const values = this.paramValues.get(m[1]!)?.();
        return { name: m[1], in: 'path', required: true, schema: values?.length ? { type: 'string', enum: values } : { type: 'string' } };
      });
      if (doc.query) {
        const query = toSchema(doc.query, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
        for (const [name, schema] of Object.entries(query.properties ?? {})) {
          const required = query.required?.includes(name) ?? false;
          // The server reads an object-typed field as URL-encoded JSON text (core/endpoints/query.ts),
          // not as form-exploded keys: `content` says so, and generated clients then send JSON.
          params.push(
            (isObjectSchema(schema)
              ? { name, in: 'query', required, content: { 'application/json': { schema } } }
              : { name, in: 'query', required, schema }) as never,
          );
        }
      }
      const responses: Record<string, unknown> = {};
      for (const [status, r] of Object.entries(doc.responses ?? { 200: { description: 'OK' } })) {
        responses[status] = {
          description: r.description,
          ...(r.schema
            ? { content: { [r.contentType ?? 'application/json']: { schema: toSchema(r.schema, 'output') } } }
            : r.contentType
              ? { content: { [r.contentType]: {} } }
              : {}),
        };
      }
      responses.default ??= { description: 'Error', content: { 'application/json': { schema: errorSchema } } };
      (paths[doc.path] ??= {})[doc.method] = {
        summary: doc.summary,
        ...(doc.description ? { description: doc.description } : {}),
        ...(doc.tags ? { tags: doc.tags } : {}),
        operationId: `${doc.method}_${doc.path.replace(/[^a-zA-Z0-9]+/g, '_').replace(/^_|_$/g, '')}`,
        ...(params.length ? { parameters: params } : {}),
        ...(doc.body ? { requestBody: { required: true, content: { 'application/json': { schema: toSchema(doc.body, 'input') } } } } : {}),
        responses,
      };
    }
    return {
      openapi: '3.1.0',
      info: this.info,
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer' },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        },
      },
      paths,
    };
  }
}

declare module '../kernel/services.js' {
  interface ServiceMap {
    /** The server's OpenAPI document, provided by the composition root before any subsystem is set up. */
    openapi: OpenApiRegistry;
  }
}

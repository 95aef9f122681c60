/**
 * OpenAPI entries for each custom endpoint (the fixed list route is declared in routes.ts).
 * `endpointRouteDocs` is a provider the OpenAPI registry asks on every build, so the document lists
 * the endpoints that are live now, each declared method with its own input (query parameters for
 * GET/HEAD, JSON body otherwise) and output schema (spec rule 5).
 */
import { z } from 'zod';
import type { RouteDoc } from '../http/openapi.js';
import { MAX_BATCH_ITEMS } from '../tasks/types.js';
import { ENDPOINTS_PREFIX, routePath, UpstreamResultModel } from './describe.js';
import { routesOf } from './router.js';
import { QUERY_METHODS } from './schemas.js';
import type { EndpointService } from './service.js';

const TAGS = ['endpoints'];

const ErrorModel = z.object({ detail: z.string() });

/** The task board's answer to /async and /batch (the full task record; these fields at least). */
const TaskModel = z.object({ id: z.string(), kind: z.string(), target: z.string(), status: z.string() }).loose();

/** Body of a 502 (see `EndpointFailure`). */
export const FailureModel = z.object({
  detail: z.string(),
  success: z.literal(false),
  aggregated: z.null(),
  upstreams: z.array(UpstreamResultModel),
});

export const EndpointHealthModel = z.object({
  name: z.string(),
  ready: z.boolean(),
  rule: z.string(),
  checked_at: z.string(),
  upstreams: z.array(
    z.object({
      name: z.string(),
      ready: z.boolean(),
      status: z.number().int().nullable(),
      duration_ms: z.number(),
      error: z.string().nullable(),
    }),
  ),
});

export function endpointRouteDocs(service: EndpointService): RouteDoc[] {
  const docs: RouteDoc[] = [];
  for (const config of service.all()) {
    const path = routePath(config);
    const envelope = service.envelopeModel(config);
    const input = config.request ?? z.unknown();
    for (const method of config.methods) {
      const query = QUERY_METHODS.has(method);
      docs.push({
        method: method.toLowerCase() as RouteDoc['method'],
        path,
        summary: config.description || `Custom endpoint ${config.name}`,
        description:
          `${config.aggregation} over ${config.upstreams.map((u) => u.name).join(', ') || 'no upstreams'}` +
          (config.handler ? ' (custom handler)' : '') +
          (query ? '. Input as query parameters: repeat a parameter for an array, URL-encoded JSON for an object.' : '.'),
        tags: TAGS,
        ...(query ? { query: input } : { body: input }),
        responses: {
          200: { description: 'Aggregated answer with per-upstream results', schema: envelope },
          422: { description: 'Input fails the request model (the field is named)', schema: ErrorModel },
          502: { description: 'Aggregation failed; per-upstream errors, secrets redacted', schema: FailureModel },
          504: config.handler
            ? {
                description:
                  "Every upstream that failed timed out, or the handler did not finish within its deadline (the endpoint's timeout_ms, else endpoints.timeoutMs)",
                schema: ErrorModel,
              }
            : { description: 'Every upstream that failed timed out; per-upstream errors', schema: FailureModel },
          ...(config.handler
            ? {
                500: {
                  description: 'The handler failed, returned a value failing its output model, or its host ran out of memory',
                  schema: ErrorModel,
                },
              }
            : {}),
        },
      });
    }
    // routePath has no trailing slash, so `${path}/async` is right for '/' and for '/x' alike.
    docs.push(
      {
        method: 'post',
        path: `${path}/async`,
        summary: `Run ${config.name} on the task board`,
        description:
          'Same input as the main route, as a JSON body; `?method=` picks a declared method (default: the first). Follow /api/v1/tasks/{id}.',
        tags: TAGS,
        body: input,
        responses: {
          202: { description: 'Task accepted; Location: /api/v1/tasks/{id}', schema: TaskModel },
          422: { description: 'Input fails the request model', schema: ErrorModel },
          501: { description: 'Task subsystem not available', schema: ErrorModel },
        },
      },
      {
        method: 'post',
        path: `${path}/batch`,
        summary: `Run ${config.name} once per input, on the task board`,
        description: `Body {"inputs": [...]}, at most ${MAX_BATCH_ITEMS}; the task result lists each item's success, status, aggregated value and upstreams.`,
        tags: TAGS,
        body: z.object({ inputs: z.array(input).min(1).max(MAX_BATCH_ITEMS) }),
        responses: {
          202: { description: 'Task accepted; Location: /api/v1/tasks/{id}', schema: TaskModel },
          422: { description: 'An input fails the request model (body.inputs.<i>.<field>)', schema: ErrorModel },
          501: { description: 'Task subsystem not available', schema: ErrorModel },
        },
      },
      {
        method: 'get',
        path: `${ENDPOINTS_PREFIX}/${config.name}/health`,
        summary: `Readiness of ${config.name}`,
        tags: TAGS,
        responses: {
          200: { description: 'ready', schema: EndpointHealthModel },
          503: { description: 'not ready', schema: EndpointHealthModel },
        },
      },
      {
        method: 'get',
        path: `${ENDPOINTS_PREFIX}/${config.name}/info`,
        summary: `Metadata of ${config.name}`,
        tags: TAGS,
        responses: { 200: { description: 'Definition without secrets, with input and output schemas' } },
      },
    );
  }
  // An express router's own routes, as far as express declares them (router.ts `routesOf`).
  const METHODS = new Set<string>(['get', 'post', 'put', 'patch', 'delete', 'head']);
  for (const found of service.routers()) {
    for (const route of routesOf(found.router)) {
      for (const method of route.methods.filter((m) => METHODS.has(m))) {
        docs.push({
          method: method as RouteDoc['method'],
          path: `${ENDPOINTS_PREFIX}/${found.name}${route.path === '/' ? '' : route.path}`,
          summary: `${method.toUpperCase()} ${route.path} of the express router ${found.name}`,
          description: "Served by an express Router drop-in: its input and answer are the router's own and not declared to Hangar.",
          tags: TAGS,
          responses: { 200: { description: "The router's answer" } },
        });
      }
    }
  }
  return docs;
}

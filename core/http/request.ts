import type { FastifyRequest } from 'fastify';

/** The path of a request without its query string, as sent (not decoded). */
export function pathOf(req: FastifyRequest): string {
  const url = req.url;
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}

/** A path parameter of the matched route, e.g. `param(req, 'agent')` for `/api/v1/:agent/invoke`. */
export function param(req: FastifyRequest, name: string): string {
  return String((req.params as Record<string, string | undefined>)[name] ?? '');
}

/** The parsed query string (repeated keys become arrays), for `parseInput(schema, queryOf(req), 'query')`. */
export function queryOf(req: FastifyRequest): Record<string, unknown> {
  return req.query as Record<string, unknown>;
}

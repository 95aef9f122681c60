import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

/**
 * The id of a custom endpoint call, as API gateways give one: the caller's `X-Request-Id` when it is
 * short printable ASCII (so a client or proxy can correlate its own logs), otherwise a fresh UUID.
 */
export const REQUEST_ID_HEADER = 'x-request-id';
const CALLER_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

export function requestIdOf(req: FastifyRequest): string {
  const given = req.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && CALLER_REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * The path of a request without its query string, normalised (core/http/normalize.ts): the path
 * the router matched and every guard must judge.
 */
export function pathOf(req: FastifyRequest): string {
  const url = req.url;
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}

/** The path as the client sent it, for the rare answer that depends on its spelling (a trailing slash). */
export function sentPathOf(req: FastifyRequest): string {
  const url = req.originalUrl;
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}

/**
 * The URL pattern a request was routed by, as metrics label it: a route loaded on first use
 * (core/http/on-first-use.ts) is reached through its subsystem's catch-all, and names its own
 * pattern (`/api/v1/:agent/threads/:thread_id`), not the catch-all's (`/api/v1/:agent/threads/*`).
 */
const ROUTED_URL = Symbol('hangar.routedUrl');
type RoutedRequest = FastifyRequest & { [ROUTED_URL]?: string };

export function routedUrlOf(req: FastifyRequest): string {
  return (req as RoutedRequest)[ROUTED_URL] ?? req.routeOptions.url ?? 'unmatched';
}

export function setRoutedUrl(req: FastifyRequest, url: string): void {
  (req as RoutedRequest)[ROUTED_URL] = url;
}

/** A path parameter of the matched route, e.g. `param(req, 'agent')` for `/api/v1/:agent/invoke`. */
export function param(req: FastifyRequest, name: string): string {
  return String((req.params as Record<string, string | undefined>)[name] ?? '');
}

/** The parsed query string (repeated keys become arrays), for `parseInput(schema, queryOf(req), 'query')`. */
export function queryOf(req: FastifyRequest): Record<string, unknown> {
  return req.query as Record<string, unknown>;
}

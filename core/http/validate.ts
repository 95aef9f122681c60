import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
import { HttpError } from './errors.js';

/**
 * Parse `value` with `schema`; on failure throw a 422 whose detail names the field, e.g.
 * `body.temperature: Too big: expected number to be <=2`. `where` prefixes the path
 * ("body", "query", "params") so a client knows which part of the request was wrong.
 *
 * @example const input = parseInput(InvokeRequest, req.body, 'body');
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where = 'body'): z.output<S> {
  const result = schema.safeParse(value ?? (where === 'body' ? {} : value));
  if (result.success) return result.data;
  throw new HttpError(422, formatIssues(result.error.issues, where));
}

export function formatIssues(issues: readonly z.core.$ZodIssue[], where: string): string {
  return issues
    .slice(0, 5)
    .map((issue) => {
      const path = [where, ...issue.path.map(String)].filter(Boolean).join('.');
      return `${path}: ${issue.message}`;
    })
    .join('; ');
}

export interface ValidationSchemas {
  body?: z.ZodType;
  query?: z.ZodType;
  params?: z.ZodType;
}

/**
 * Express middleware validating parts of a request; the parsed values (defaults applied, types
 * coerced) replace the raw ones, so handlers read `req.body` / `req.query` already typed-checked.
 * Failures become 422 `{detail}` naming the field, through the one error handler.
 *
 * @example router.post('/threads', validate({ body: CreateThreadRequest }), handler)
 */
export function validate(schemas: ValidationSchemas): RequestHandler {
  return function validateRequest(req: Request, _res: Response, next: NextFunction) {
    if (schemas.params) req.params = parseInput(schemas.params, req.params, 'params') as Record<string, string>;
    // Express 5 exposes `query` as a getter; shadow it with the parsed value.
    if (schemas.query) Object.defineProperty(req, 'query', { value: parseInput(schemas.query, req.query, 'query'), writable: true });
    if (schemas.body) req.body = parseInput(schemas.body, req.body, 'body');
    next();
  };
}

import { z } from 'zod';
import { HangarError } from '../kernel/errors.js';

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
  throw new HangarError(422, formatIssues(result.error.issues, where));
}

/**
 * A string a client chooses that ends up in ids, file names, logs or response headers (thread,
 * user and approval ids): no control characters, which node refuses in a header (a 500) and which
 * forge log lines.
 */
export const PrintableString = z.string().regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters');

export function formatIssues(issues: readonly z.core.$ZodIssue[], where: string): string {
  return issues
    .slice(0, 5)
    .map((issue) => {
      const path = [where, ...issue.path.map(String)].filter(Boolean).join('.');
      return `${path}: ${issue.message}`;
    })
    .join('; ');
}

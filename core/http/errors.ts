/**
 * Errors are values: an `HttpError` carries the status and the `{detail}` body the client sees.
 * Services throw them (they never import the HTTP framework); the one error handler in `core/http/app.ts`
 * turns them into responses. Anything else thrown is normalised by `toHttpError` into a 500.
 */

/**
 * Until every call site names its catalogue code, `HttpError` is the same class as the kernel's
 * `HangarError` (a status without a code gets a generic code by status).
 */
export { type ErrorDetail, HangarError as HttpError } from '../kernel/errors.js';

import { type ErrorDetail, errorMessage, fail, HangarError as HttpError } from '../kernel/errors.js';

// The catalogue: one constructor per status the spec uses, so call sites read as the spec does.
export const badRequest = (detail: string) => new HttpError(400, detail);
export const unauthorized = (detail = 'missing or invalid credentials') => new HttpError(401, detail, { 'WWW-Authenticate': 'Bearer' });
export const forbidden = (detail: string) => new HttpError(403, detail);
export const notFound = (detail: string) => new HttpError(404, detail);
export const conflict = (detail: string) => new HttpError(409, detail);
export const payloadTooLarge = (detail: string) => new HttpError(413, detail);
export const unsupportedMediaType = (detail: string) => new HttpError(415, detail);
export const unprocessable = (detail: string) => new HttpError(422, detail);
export const tooManyRequests = (retryAfterSeconds: number) =>
  new HttpError(429, `rate limit exceeded; retry after ${retryAfterSeconds}s`, {
    'Retry-After': String(retryAfterSeconds),
  });
export const internalError = (detail: string) => new HttpError(500, detail);
export const notImplemented = (detail: string) => new HttpError(501, detail);
export const badGateway = (detail: ErrorDetail) => new HttpError(502, detail);
/** An upstream (endpoint, model) or a run step gave no answer in time, as gateways answer it. */
export const gatewayTimeout = (detail: string) => new HttpError(504, detail);
export const serviceUnavailable = (detail: string, retryAfterSeconds?: number) =>
  new HttpError(503, detail, retryAfterSeconds ? { 'Retry-After': String(retryAfterSeconds) } : {});

/**
 * A drop-in that exists but does not load: 503 (it is there, it cannot serve until its file is
 * fixed), not 404, with where and why as Vite's overlay shows it — the error, its file, line and
 * column, and the code frame.
 */
export const dropInUnavailable = (problem: {
  kind: string;
  name: string;
  file: string;
  line: number | null;
  column: number | null;
  message: string;
  excerpt: string | null;
}) =>
  fail(
    'HANGAR_DROPIN_UNAVAILABLE',
    {
      kind: problem.kind,
      name: problem.name,
      problem: problem.message,
      where: `${problem.file}${problem.line ? `:${problem.line}${problem.column ? `:${problem.column}` : ''}` : ''}`,
    },
    { fields: { error: problem.message, file: problem.file, line: problem.line, column: problem.column, excerpt: problem.excerpt } },
  );

/**
 * An error body without the machine's absolute paths: the workspace prefix is dropped (paths read
 * relative to it, the workspace itself is `.`), Hangar's own installation shows as `<hangar>` and
 * the home folder as `~`. File names in errors help; where the user keeps them is not the caller's
 * business. Longest prefix first, so a workspace inside the home folder stays relative.
 */
export function pathScrubber(places: { workspace: string; install: string; home: string }): (error: HttpError) => HttpError {
  const replacements = [
    [places.workspace, '.'],
    [places.install, '<hangar>'],
    [places.home, '~'],
  ]
    .filter(([from]) => from && from !== '/' && from.length > 1)
    .sort((a, b) => b[0]!.length - a[0]!.length) as Array<[string, string]>;
  const scrub = (text: string) => {
    let out = text;
    for (const [from, to] of replacements) {
      if (!out.includes(from)) continue;
      out = out
        .split(`${from}/`)
        .join(to === '.' ? '' : `${to}/`)
        .split(from)
        .join(to);
    }
    return out;
  };
  return (error) => {
    const text = JSON.stringify(error.toBody());
    if (!replacements.some(([from]) => text.includes(from))) return error;
    const detail =
      typeof error.detail === 'string' ? scrub(error.detail) : (JSON.parse(scrub(JSON.stringify(error.detail))) as Record<string, unknown>);
    const fields = JSON.parse(scrub(JSON.stringify(error.fields))) as Record<string, unknown>;
    return new HttpError(error.status, detail, error.headers, fields, error.code);
  };
}

export { errorMessage } from '../kernel/errors.js';

/**
 * Normalise anything thrown at a boundary (HTTP handler, task runner, SSE stream, worker).
 * Fastify's own errors (body too large, bad content) carry `statusCode`; they keep their status.
 */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  const e = err as { status?: unknown; statusCode?: unknown; type?: unknown; expose?: unknown };
  const status = typeof e?.status === 'number' ? e.status : typeof e?.statusCode === 'number' ? e.statusCode : 500;
  if ((err as { code?: unknown })?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return payloadTooLarge('request body too large');
  if (status >= 400 && status < 500) return new HttpError(status, errorMessage(err));
  return new HttpError(500, errorMessage(err));
}

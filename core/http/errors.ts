/**
 * Errors are values: an `HttpError` carries the status and the `{detail}` body the client sees.
 * Services throw them (they never import the HTTP framework); the one error handler in `core/http/app.ts`
 * turns them into responses. Anything else thrown is normalised by `toHttpError` into a 500.
 */

export type ErrorDetail = string | Record<string, unknown>;

export class HttpError extends Error {
  readonly status: number;
  readonly detail: ErrorDetail;
  /** Extra response headers, e.g. Retry-After on 429/503. */
  readonly headers: Record<string, string>;

  constructor(status: number, detail: ErrorDetail, headers: Record<string, string> = {}) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
    this.name = 'HttpError';
    this.status = status;
    this.detail = detail;
    this.headers = headers;
  }

  toBody(): { detail: ErrorDetail } {
    return { detail: this.detail };
  }
}

// The catalogue: one constructor per status the spec uses, so call sites read as the spec does.
export const badRequest = (detail: string) => new HttpError(400, detail);
export const unauthorized = (detail = 'missing or invalid credentials') =>
  new HttpError(401, detail, { 'WWW-Authenticate': 'Bearer' });
export const forbidden = (detail: string) => new HttpError(403, detail);
export const notFound = (detail: string) => new HttpError(404, detail);
export const conflict = (detail: string) => new HttpError(409, detail);
export const payloadTooLarge = (detail: string) => new HttpError(413, detail);
export const unprocessable = (detail: string) => new HttpError(422, detail);
export const tooManyRequests = (retryAfterSeconds: number) =>
  new HttpError(429, `rate limit exceeded; retry after ${retryAfterSeconds}s`, {
    'Retry-After': String(retryAfterSeconds),
  });
export const internalError = (detail: string) => new HttpError(500, detail);
export const notImplemented = (detail: string) => new HttpError(501, detail);
export const badGateway = (detail: ErrorDetail) => new HttpError(502, detail);
export const serviceUnavailable = (detail: string, retryAfterSeconds?: number) =>
  new HttpError(503, detail, retryAfterSeconds ? { 'Retry-After': String(retryAfterSeconds) } : {});

/** The message of anything thrown, without assuming it is an Error. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}

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

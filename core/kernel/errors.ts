/**
 * Errors are values with a code, a status and a detail. Services throw them without knowing about
 * HTTP; the one error handler (core/http/app.ts) turns them into `{detail, code}` responses, and the
 * task runner, SSE streams and workers carry them the same way.
 *
 * Every code the server answers with is listed in the catalogue (core/kernel/error-catalogue.ts):
 * `HANGAR_<AREA>_<THING>`, its status and its message template, as Fastify lists its `FST_ERR_*`
 * codes in one file. Clients branch on `code`; `detail` is for people and may be reworded.
 */
import { ERROR_CATALOGUE, type ErrorCode, type ErrorSpec } from './error-catalogue.js';

export type ErrorDetail = string | Record<string, unknown>;

export class HangarError extends Error {
  override name = 'HangarError';
  readonly code: string;
  readonly status: number;
  readonly detail: ErrorDetail;
  /** Extra response headers, e.g. Retry-After on 429/503. */
  readonly headers: Record<string, string>;
  /** Fields the body carries beside `detail` (where a drop-in failed: file, line, excerpt). */
  readonly fields: Record<string, unknown>;

  constructor(
    status: number,
    detail: ErrorDetail,
    headers: Record<string, string> = {},
    fields: Record<string, unknown> = {},
    code: string = genericCode(status),
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
    this.status = status;
    this.detail = detail;
    this.headers = headers;
    this.fields = fields;
    this.code = code;
  }

  /** The response body; the boundary adds `code` when a subclass's own body leaves it out. */
  toBody(): { detail: ErrorDetail; code?: string } & Record<string, unknown> {
    return { ...this.fields, detail: this.detail, code: this.code };
  }
}

/** `{name}` placeholders of a message template, as the parameters it needs. */
type TemplateParams<T extends string> = T extends `${string}{${infer Name}}${infer Rest}`
  ? { [K in Name]: string | number } & TemplateParams<Rest>
  : unknown;

type ParamsOf<C extends ErrorCode> = TemplateParams<(typeof ERROR_CATALOGUE)[C]['message']>;

export interface ErrorExtras {
  headers?: Record<string, string>;
  fields?: Record<string, unknown>;
}

/**
 * The error of a catalogue entry, its message filled in:
 * `fail('HANGAR_THREAD_NOT_FOUND', { thread: id })` → 404 `thread 't1' not found`.
 */
export function fail<C extends ErrorCode>(code: C, params: ParamsOf<C>, extras: ErrorExtras = {}): HangarError {
  const entry: ErrorSpec = ERROR_CATALOGUE[code];
  const values = params as Record<string, string | number>;
  const detail = entry.message.replace(/\{(\w+)\}/g, (_, name: string) => String(values[name] ?? `{${name}}`));
  return new HangarError(entry.status, detail, extras.headers, extras.fields, code);
}

/** The code of an error thrown without a catalogue entry (Fastify's own, a plain status): by status. */
export function genericCode(status: number): string {
  return GENERIC_CODES[status] ?? (status >= 500 ? 'HANGAR_INTERNAL' : 'HANGAR_REQUEST_FAILED');
}

const GENERIC_CODES: Record<number, string> = {
  400: 'HANGAR_REQUEST_BAD',
  401: 'HANGAR_AUTH_REQUIRED',
  403: 'HANGAR_FORBIDDEN',
  404: 'HANGAR_NOT_FOUND',
  405: 'HANGAR_METHOD_NOT_ALLOWED',
  409: 'HANGAR_CONFLICT',
  413: 'HANGAR_REQUEST_TOO_LARGE',
  415: 'HANGAR_REQUEST_MEDIA_TYPE',
  422: 'HANGAR_REQUEST_INVALID',
  429: 'HANGAR_RATE_LIMITED',
  499: 'HANGAR_REQUEST_CANCELLED',
  500: 'HANGAR_INTERNAL',
  501: 'HANGAR_NOT_ENABLED',
  502: 'HANGAR_UPSTREAM_FAILED',
  503: 'HANGAR_UNAVAILABLE',
  504: 'HANGAR_TIMEOUT',
};

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
 * A drop-in that exists but does not load: 503 (it is there, it cannot serve until its file is
 * fixed), not 404, with where and why as Vite's overlay shows it.
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

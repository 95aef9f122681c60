/**
 * The HTTP boundary of errors: services and hooks throw `HangarError`s with catalogue codes
 * (core/kernel/errors.ts); the one error handler (core/http/app.ts) answers them as
 * `{detail, code}` after `toHttpError` has normalised anything else thrown (Fastify's own errors
 * keep their status) and `pathScrubber` has taken the machine's paths out.
 */
import { errorMessage, fail, HangarError } from '../kernel/errors.js';

/**
 * An error body without the machine's absolute paths: the workspace prefix is dropped (paths read
 * relative to it, the workspace itself is `.`), Hangar's own installation shows as `<hangar>` and
 * the home folder as `~`. File names in errors help; where the user keeps them is not the caller's
 * business. Longest prefix first, so a workspace inside the home folder stays relative.
 */
export function pathScrubber(places: { workspace: string; install: string; home: string }): (error: HangarError) => HangarError {
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
    return new HangarError(error.status, detail, error.headers, fields, error.code);
  };
}

/**
 * Normalise anything thrown at a boundary (HTTP handler, task runner, SSE stream, worker).
 * Fastify's own errors (body too large, bad content) carry `statusCode`; they keep their status.
 */
export function toHttpError(err: unknown): HangarError {
  if (err instanceof HangarError) return err;
  const e = err as { status?: unknown; statusCode?: unknown; type?: unknown; expose?: unknown };
  const status = typeof e?.status === 'number' ? e.status : typeof e?.statusCode === 'number' ? e.statusCode : 500;
  if ((err as { code?: unknown })?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return fail('HANGAR_HTTP_BODY_TOO_LARGE', {});
  if (status >= 400 && status < 500) return new HangarError(status, errorMessage(err));
  return new HangarError(500, errorMessage(err));
}

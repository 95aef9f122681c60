/**
 * The one place a request path is normalised, before routing and before every guard (Host,
 * principal, rate limit, control token, coding-run session). Fastify's `rewriteUrl` calls
 * `normalizeUrl` and stores the result as `req.url`, so `pathOf(req)`, the guards and the router all
 * read the same string; the path as sent stays in `req.originalUrl`.
 *
 * What is normalised (RFC 3986 §6.2.2, plus the two habits of HTTP servers):
 * - percent-encoded unreserved characters (letters, digits, `-._~`) are decoded: `/api/v1/%63ontrol`
 *   is `/api/v1/control`. Other percent-encodings stay encoded (hex upper-cased), since decoding
 *   `%2F` or `%3F` would change what the path means; the router decodes those inside parameters.
 * - empty segments are dropped (`//` → `/`) and dot segments resolved (`/a/./b`, `/a/x/../b`, and
 *   their encoded forms `%2e`), never above the root;
 * - a trailing slash is dropped (`/api/v1/agents/` is `/api/v1/agents`), as the router already
 *   ignores it (`ignoreTrailingSlash`).
 * The query string is left exactly as sent.
 *
 * Decision: the common case, a path with no `%`, no `//`, no `/.` and no trailing slash, is found
 * by one regular-expression test and returned as is, so the invoke and endpoint benchmarks pay
 * well under a microsecond for it.
 */

/** Anything that may need work: `%`, `//`, `/.` or a trailing `/` of the path (query excluded). */
const MAY_NEED_WORK = /%|\/\/|\/\.|.\/$/;

const HEX = '0123456789ABCDEF';

function hexValue(code: number): number {
  // Stryker disable next-line ConditionalExpression: without `code >= 48`, a lower code gives a negative value, which means "not hex" as -1 does
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 65 && code <= 70) return code - 55;
  if (code >= 97 && code <= 102) return code - 87;
  return -1;
}

function isUnreserved(code: number): boolean {
  return (
    (code >= 65 && code <= 90) ||
    (code >= 97 && code <= 122) ||
    (code >= 48 && code <= 57) ||
    code === 45 ||
    code === 46 ||
    code === 95 ||
    code === 126
  );
}

/** Decode percent-encoded unreserved characters; upper-case the hex of the others. Linear. */
function decodeUnreserved(segment: string): string {
  // Stryker disable next-line ConditionalExpression,StringLiteral: a shortcut; the loop below returns a segment without `%` unchanged too
  if (segment.indexOf('%') < 0) return segment;
  let out = '';
  let last = 0;
  // Stryker disable next-line ConditionalExpression,EqualityOperator: indexOf never returns the length or more, so `i < segment.length` only restates `i >= 0`
  for (let i = segment.indexOf('%'); i >= 0 && i < segment.length; i = segment.indexOf('%', i + 1)) {
    const hi = hexValue(segment.charCodeAt(i + 1));
    const lo = hexValue(segment.charCodeAt(i + 2));
    if (hi < 0 || lo < 0) continue; // not an escape: left for the router to refuse as a bad URL
    const code = hi * 16 + lo;
    out += segment.slice(last, i) + (isUnreserved(code) ? String.fromCharCode(code) : `%${HEX[hi]}${HEX[lo]}`);
    last = i + 3;
    i += 2;
  }
  return out + segment.slice(last);
}

/** The normalised form of a request target (`/path?query`). Returns the same string when nothing changes. */
export function normalizeUrl(url: string): string {
  const queryAt = url.indexOf('?');
  // Only the path decides: a `%` in the query alone is not worth the slow path.
  const path = queryAt < 0 ? url : url.slice(0, queryAt);
  if (!MAY_NEED_WORK.test(path)) return url;
  const segments: string[] = [];
  for (const raw of path.split('/')) {
    const segment = decodeUnreserved(raw);
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const normalized = `/${segments.join('/')}`;
  // Stryker disable next-line EqualityOperator: a query at 0 leaves an empty path, which took the fast path above
  return queryAt < 0 ? normalized : normalized + url.slice(queryAt);
}

/** A percent-encoded control character (C0 or DEL) in a normalised path. */
const ENCODED_CONTROL = /%(?:[01][0-9A-F]|7F)/;

/** Whether a normalised path carries a control character (raw ones never get past node's parser). */
export function hasEncodedControl(path: string): boolean {
  // Stryker disable next-line ConditionalExpression,StringLiteral: a shortcut (most paths have no `%`); the expression cannot match without one
  if (path.indexOf('%') < 0) return false;
  return ENCODED_CONTROL.test(path);
}

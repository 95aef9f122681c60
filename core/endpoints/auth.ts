/**
 * Upstream authentication (spec: Authentication). Each upstream carries its own auth; this file turns
 * a resolved auth definition into request headers, and keeps OAuth2 client-credentials tokens.
 *
 * Token cache rules:
 * - one entry per set of credentials (token_url, client_id, client_secret, scope, audience,
 *   client_auth), keyed by a SHA-256 of them, so the key itself holds no secret;
 * - a token is reused until `token_leeway` before it expires; the leeway is capped at half the
 *   token's lifetime, otherwise a short-lived token (expires_in ≤ leeway) would never be reused and
 *   every call would fetch a new one;
 * - concurrent callers that miss share ONE in-flight request (single flight), and that request is
 *   not tied to any caller's AbortSignal, so one caller giving up does not fail the others;
 * - a failed fetch is not cached: the next caller tries again;
 * - `invalidate(token)` (after an upstream answered 401) drops the entry only if it still holds that
 *   token, so a 401 racing a fresh token does not throw the fresh one away.
 */
import { createHash } from 'node:crypto';
import { type Env, interpolate, type Redactor } from './interpolation.js';
import type { OAuth2Auth, UpstreamAuth } from './schemas.js';

/** Auth with every `${NAME}` replaced by its value (lives only for one call). */
export type ResolvedAuth = UpstreamAuth;
export type ResolvedOAuth2 = OAuth2Auth;

/** A token response without `expires_in` is kept this long. */
export const DEFAULT_TOKEN_LIFETIME_MS = 300_000;
/** The token request has its own timeout since it is shared by many callers. */
export const TOKEN_REQUEST_TIMEOUT_MS = 10_000;

/** Resolve every string of an auth definition; `field` prefixes the path named by a missing variable. */
export function resolveAuth(auth: UpstreamAuth, env: Env, field: string, redactor: Redactor): ResolvedAuth {
  const secret = (name: string, value: string) => {
    const resolved = interpolate(value, env, `${field}.${name}`, redactor);
    // Credentials are secrets even when written inline, not only when they come from ${ENV}.
    redactor.add(resolved);
    return resolved;
  };
  const plain = (name: string, value: string) => interpolate(value, env, `${field}.${name}`, redactor);
  switch (auth.type) {
    case 'API_KEY':
      return {
        ...auth,
        api_key: secret('api_key', auth.api_key),
        header_name: plain('header_name', auth.header_name),
        header_prefix: plain('header_prefix', auth.header_prefix),
      };
    case 'BEARER':
      return { ...auth, api_key: secret('api_key', auth.api_key) };
    case 'BASIC':
      return { ...auth, username: plain('username', auth.username), password: secret('password', auth.password) };
    case 'OAUTH2_CLIENT_CREDENTIALS':
      return {
        ...auth,
        token_url: plain('token_url', auth.token_url),
        client_id: plain('client_id', auth.client_id),
        client_secret: secret('client_secret', auth.client_secret),
        scope: auth.scope === undefined ? undefined : plain('scope', auth.scope),
        audience: auth.audience === undefined ? undefined : plain('audience', auth.audience),
      };
    default: {
      const never: never = auth;
      throw new Error(`unknown auth type ${(never as { type: string }).type}`);
    }
  }
}

/** `Token abc` from prefix `Token`; an empty prefix sends the key alone. */
function withPrefix(prefix: string, key: string): string {
  if (prefix === '') return key;
  return /[\s:]$/.test(prefix) ? `${prefix}${key}` : `${prefix} ${key}`;
}

/** Headers for the static auth types; OAuth2 needs a token and goes through `TokenCache`. */
export function staticAuthHeaders(auth: Exclude<ResolvedAuth, ResolvedOAuth2>, redactor: Redactor): Record<string, string> {
  switch (auth.type) {
    case 'API_KEY':
      return { [auth.header_name]: withPrefix(auth.header_prefix, auth.api_key) };
    case 'BEARER':
      return { authorization: `Bearer ${auth.api_key}` };
    case 'BASIC': {
      const encoded = Buffer.from(`${auth.username}:${auth.password}`, 'utf8').toString('base64');
      redactor.add(encoded);
      return { authorization: `Basic ${encoded}` };
    }
    default: {
      const never: never = auth;
      throw new Error(`unknown auth type ${(never as { type: string }).type}`);
    }
  }
}

/**
 * The token could not be obtained. `transient` says the way to the token server failed (no
 * connection, no answer in time, or an HTTP status that says "try again": 408, 425, 429, 5xx) —
 * worth a retry, unlike credentials the server refused or an answer without a token.
 */
export class TokenRequestError extends Error {
  override name = 'TokenRequestError';
  constructor(
    message: string,
    readonly transient: 'network' | 'timeout' | null = null,
  ) {
    super(message);
  }
}

const TRANSIENT_TOKEN_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

interface CachedToken {
  token: string;
  /** Epoch ms after which the token is not reused. */
  refreshAt: number;
}

/** Called once per token request actually sent (for metrics). */
export type TokenRequestListener = (outcome: 'success' | 'error') => void;

export class TokenCache {
  readonly #tokens = new Map<string, CachedToken>();
  readonly #inFlight = new Map<string, Promise<string>>();
  readonly #now: () => number;

  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  /**
   * A valid access token for these credentials, fetching one if needed. `signal` only stops this
   * caller's wait; the shared request carries on for the others.
   */
  async get(auth: ResolvedOAuth2, options: { signal?: AbortSignal; onRequest?: TokenRequestListener } = {}): Promise<string> {
    const key = cacheKey(auth);
    const cached = this.#tokens.get(key);
    if (cached && this.#now() < cached.refreshAt) return cached.token;
    let pending = this.#inFlight.get(key);
    if (!pending) {
      pending = this.#fetch(auth, key, options.onRequest).finally(() => this.#inFlight.delete(key));
      this.#inFlight.set(key, pending);
    }
    return options.signal ? raceAbort(pending, options.signal) : pending;
  }

  /** Forget `token` for these credentials (the upstream rejected it) unless a newer one replaced it. */
  invalidate(auth: ResolvedOAuth2, token: string): void {
    const key = cacheKey(auth);
    if (this.#tokens.get(key)?.token === token) this.#tokens.delete(key);
  }

  /** Number of cached credentials (for tests and /health). */
  get size(): number {
    return this.#tokens.size;
  }

  async #fetch(auth: ResolvedOAuth2, key: string, onRequest?: TokenRequestListener): Promise<string> {
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (auth.scope) form.set('scope', auth.scope);
    if (auth.audience) form.set('audience', auth.audience);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if (auth.client_auth === 'basic') {
      // RFC 6749 §2.3.1: both parts are form-urlencoded before the Basic encoding.
      const user = encodeURIComponent(auth.client_id);
      const pass = encodeURIComponent(auth.client_secret);
      headers.authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    } else {
      form.set('client_id', auth.client_id);
      form.set('client_secret', auth.client_secret);
    }
    let response: Response;
    try {
      response = await fetch(auth.token_url, {
        method: 'POST',
        headers,
        body: form,
        signal: AbortSignal.timeout(TOKEN_REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      onRequest?.('error');
      throw new TokenRequestError(
        `token request failed: ${describeNetworkError(err)}`,
        (err as { name?: string })?.name === 'TimeoutError' ? 'timeout' : 'network',
      );
    }
    const text = await response.text().catch(() => '');
    let body: { access_token?: unknown; expires_in?: unknown; error?: unknown; token_type?: unknown } = {};
    try {
      body = JSON.parse(text);
    } catch {
      // handled below: no access_token
    }
    if (!response.ok || typeof body.access_token !== 'string' || body.access_token === '') {
      onRequest?.('error');
      // The OAuth error code (e.g. invalid_client) helps and is not secret; the body might be, so it stays out.
      const code = typeof body.error === 'string' ? ` (${body.error.slice(0, 64)})` : '';
      const why = response.ok ? 'answer has no access_token' : `HTTP ${response.status}${code}`;
      throw new TokenRequestError(
        `token request failed: ${why}`,
        !response.ok && TRANSIENT_TOKEN_STATUS.has(response.status) ? 'network' : null,
      );
    }
    onRequest?.('success');
    const lifetimeMs =
      typeof body.expires_in === 'number' && Number.isFinite(body.expires_in)
        ? body.expires_in * 1000
        : typeof body.expires_in === 'string' && Number.isFinite(Number(body.expires_in))
          ? Number(body.expires_in) * 1000
          : DEFAULT_TOKEN_LIFETIME_MS;
    const leeway = Math.min(auth.token_leeway, lifetimeMs / 2);
    this.#tokens.set(key, { token: body.access_token, refreshAt: this.#now() + lifetimeMs - leeway });
    return body.access_token;
  }
}

function cacheKey(auth: ResolvedOAuth2): string {
  return createHash('sha256')
    .update([auth.token_url, auth.client_id, auth.client_secret, auth.scope ?? '', auth.audience ?? '', auth.client_auth].join('\u0000'))
    .digest('hex');
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** A network failure in a few words: undici ("fetch failed") hides the reason in `cause`; node:http puts it in the message. */
export function describeNetworkError(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError') return 'timed out';
  const cause = e?.cause?.code ?? e?.cause?.message;
  return cause ? `${e?.message ?? 'fetch failed'} (${cause})` : (e?.message ?? String(err));
}

/**
 * One-time login links: how the coding-run session token (and, when the server needs one, an API
 * bearer token) reaches the UI without pasting — the role Jupyter's `?token=` plays.
 *
 * `hangar` prints `http://127.0.0.1:8787/ui/?login=<code>` and opens its window on another such
 * link. The page POSTs the code to `/api/login` and receives the tokens, keeps them in
 * sessionStorage and removes the code from the address bar.
 *
 * Decision: a code, not the token itself, goes into the URL, because URLs leak — into browser
 * history, session restore, screenshots and terminal scrollback. A code
 * - works once: the first exchange consumes it, so a leaked URL from history is dead;
 * - expires after 24 hours when unused, so a printed line in an old scrollback or log is dead too;
 * - dies with the server (codes live in memory, per server; the session token is fresh once no
 *   server runs on the workspace).
 * A person who opens the printed link a second time (another browser, a closed tab) runs
 * `hangar login` for a fresh link, or pastes the token from `.hangar/code-session.json`; the UI
 * says both. The window Hangar opens gets a code of its own, so it never uses up the printed one.
 *
 * Codes are 256 random bits and kept only as SHA-256 hashes, so `/api/login` can be public (a
 * browser holding nothing but the link must reach it) without being guessable.
 */
import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { type AnyRoute, defineRoute } from '../http/route.js';
import { presentedToken } from '../http/security.js';
import type { HangarContext } from '../kernel/context.js';
import { fail } from '../kernel/errors.js';
import { sessionMatches, sessionTokenOf } from './session.js';

export const LOGIN_PATH = '/api/login';
export const LOGIN_LINKS_PATH = '/api/login/links';
/** The query parameter of a login link. */
export const LOGIN_PARAM = 'login';
/** The principal of the API token a login link hands to a browser when the server needs tokens. */
export const BROWSER_PRINCIPAL = 'browser';
export const LOGIN_TTL_MS = 24 * 60 * 60 * 1000;
/** Unused codes kept at most; minting past it drops the oldest (a runaway script cannot grow memory). */
const MAX_LIVE = 200;
/** Used codes remembered, only to tell "already used" apart from "unknown". */
const MAX_USED = 1000;

export const LoginRequest = z.object({ code: z.string().min(1).max(200) }).strict();
export const LoginAnswer = z.object({
  session: z.string(),
  token: z.string().nullable(),
});
export const LinkAnswer = z.object({ code: z.string(), url: z.string(), expires_at: z.string() });

interface Pending {
  token: string | undefined;
  expiresAt: number;
  used: () => void;
  whenUsed: Promise<void>;
}

export interface MintedLink {
  code: string;
  expiresAt: Date;
  /** Settles when the code is exchanged: the page that carried it has loaded and run. */
  used: Promise<void>;
}

const hash = (code: string) => createHash('sha256').update(code).digest('hex');

/** A 401 names the scheme the API expects, as every 401 of the server does. */
const BEARER = { headers: { 'WWW-Authenticate': 'Bearer' } };

export class LoginLinks {
  readonly #live = new Map<string, Pending>();
  readonly #used = new Set<string>();

  constructor(
    private readonly sessionToken: () => string,
    private readonly now: () => number = Date.now,
    private readonly ttlMs = LOGIN_TTL_MS,
  ) {}

  /** A fresh code; `token` is the API bearer token the link hands over (none when the server needs none). */
  mint(token?: string): MintedLink {
    const code = randomBytes(32).toString('hex');
    let used!: () => void;
    const whenUsed = new Promise<void>((resolve) => (used = resolve));
    const expiresAt = this.now() + this.ttlMs;
    if (this.#live.size >= MAX_LIVE) this.#live.delete(this.#live.keys().next().value!);
    this.#live.set(hash(code), { token, expiresAt, used, whenUsed });
    return { code, expiresAt: new Date(expiresAt), used: whenUsed };
  }

  /** Consumes a code; throws a 401 that says whether it was used, expired or never ours. */
  exchange(code: string): z.infer<typeof LoginAnswer> {
    const key = hash(code);
    const pending = this.#live.get(key);
    if (!pending) throw fail(this.#used.has(key) ? 'HANGAR_CODERUN_LOGIN_LINK_USED' : 'HANGAR_CODERUN_LOGIN_LINK_UNKNOWN', {}, BEARER);
    this.#live.delete(key);
    if (pending.expiresAt <= this.now()) throw fail('HANGAR_CODERUN_LOGIN_LINK_EXPIRED', {}, BEARER);
    if (this.#used.size >= MAX_USED) this.#used.delete(this.#used.values().next().value!);
    this.#used.add(key);
    pending.used();
    return { session: this.sessionToken(), token: pending.token ?? null };
  }
}

/**
 * The API token a link minted by this process should carry: none while the server lets every
 * loopback caller in, otherwise a run-time token of the `browser` principal (minted once; requests
 * from such tabs are logged under it). Minting it keeps the server's tokens required from then on,
 * which they already were.
 */
export function browserToken(ctx: HangarContext): string | undefined {
  if (Object.keys(ctx.settings.auth.tokens).length === 0 && Object.keys(ctx.runtimeTokens).length === 0) return undefined;
  ctx.runtimeTokens[BROWSER_PRINCIPAL] ??= randomBytes(32).toString('hex');
  return ctx.runtimeTokens[BROWSER_PRINCIPAL];
}

/** `http://host:port/ui/?login=<code>`; `base` is the server's URL (or any URL on it). */
export function loginUrl(base: string, code: string): string {
  const url = new URL('/ui/', base);
  url.searchParams.set(LOGIN_PARAM, code);
  return url.href;
}

export function loginRoutes(ctx: HangarContext, links: LoginLinks, sessionToken: () => string): AnyRoute[] {
  const tags = ['login'];
  return [
    defineRoute({
      method: 'POST',
      url: LOGIN_PATH,
      summary: 'Exchange a one-time login code (from a ?login= link) for the session token and, when needed, an API token',
      description:
        'Public. A code works once and expires after 24 hours; a used, expired or unknown code answers 401 naming .hangar/code-session.json.',
      tags,
      schema: {
        body: LoginRequest,
        response: {
          200: { description: 'The tokens to keep in sessionStorage', schema: LoginAnswer },
          401: 'Used, expired or unknown code',
        },
      },
      // Public: the browser holding only the link has no bearer token yet (see the decision above).
      config: { public: true },
      handler: ({ body }) => links.exchange(body.code),
    }),
    // For `hangar login` (and scripts): proves it can read the session file, and hands the browser
    // the API token it authenticated with itself, never another one.
    defineRoute({
      method: 'POST',
      url: LOGIN_LINKS_PATH,
      summary: 'Mint a fresh one-time login link (needs X-Hangar-Session); `hangar login` calls it',
      tags,
      schema: { response: { 201: { description: 'The link', schema: LinkAnswer }, 401: 'Missing or wrong session token' } },
      handler: ({ req, reply }) => {
        if (!sessionMatches(sessionToken(), sessionTokenOf(req))) throw fail('HANGAR_CODERUN_LOGIN_SESSION_REQUIRED', {}, BEARER);
        const token = req.principal === 'local' ? undefined : presentedToken(req.raw);
        const link = links.mint(token);
        reply.code(201);
        const origin = `${req.protocol}://${req.headers.host ?? `${ctx.settings.host}:${ctx.settings.port}`}`;
        return { code: link.code, url: loginUrl(origin, link.code), expires_at: link.expiresAt.toISOString() };
      },
    }),
  ];
}

/**
 * Real upstreams for endpoint tests: node:http servers on 127.0.0.1 with ephemeral ports. Each
 * records what it received, so a test can check the credentials and the input that reached it.
 * Nothing of fetch is mocked.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { endpointRoutes } from '../../core/endpoints/routes.js';
import type { EndpointService } from '../../core/endpoints/service.js';
import { createApp } from '../../core/http/app.js';
import { mountRoutes } from '../../core/http/route.js';
import { ReconfigurableRateLimiter } from '../../core/http/security.js';
import { Logger } from '../../core/kernel/log.js';
import { Metrics } from '../../core/kernel/metrics.js';
import { SettingsSchema } from '../../core/kernel/settings.js';

export interface Received {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
  /** Set when the client went away before we answered (e.g. a cancelled FIRST_SUCCESS loser). */
  aborted: boolean;
}

export interface Loopback {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

export type Handler = (req: Received, res: ServerResponse) => void | Promise<void>;

export async function startLoopback(handler: Handler): Promise<Loopback> {
  const received: Received[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://loopback');
    const record: Received = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      aborted: false,
    };
    received.push(record);
    res.on('close', () => {
      if (!res.writableFinished) record.aborted = true;
    });
    try {
      await handler(record, res);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** An upstream answering `body` to everything (optionally after `delayMs`). */
export function fixed(body: unknown, delayMs = 0): Handler {
  return async (_req, res) => {
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
    if (!res.destroyed) json(res, 200, body);
  };
}

export interface TokenServer extends Loopback {
  /** Tokens issued so far, in order. */
  issued: string[];
  /** Token requests received (valid or not). */
  requests(): number;
}

/**
 * An OAuth2 token endpoint (client credentials, RFC 6749 §4.4). Accepts the client through HTTP
 * Basic or the form body; issues `tok-1`, `tok-2`, … with the given lifetime; answers 401
 * `invalid_client` for wrong credentials.
 */
export async function startTokenServer(options: {
  clientId: string;
  clientSecret: string;
  expiresIn?: number | null;
  delayMs?: number;
}): Promise<TokenServer> {
  const issued: string[] = [];
  const loopback = await startLoopback(async (req, res) => {
    if (options.delayMs) await new Promise((r) => setTimeout(r, options.delayMs));
    const form = new URLSearchParams(req.body);
    let id = form.get('client_id');
    let secret = form.get('client_secret');
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
    if (basic) {
      const [u, p] = Buffer.from(basic[1], 'base64').toString('utf8').split(':');
      id = decodeURIComponent(u);
      secret = decodeURIComponent(p);
    }
    if (form.get('grant_type') !== 'client_credentials') return json(res, 400, { error: 'unsupported_grant_type' });
    if (id !== options.clientId || secret !== options.clientSecret) return json(res, 401, { error: 'invalid_client' });
    const token = `tok-${issued.length + 1}`;
    issued.push(token);
    const expires = options.expiresIn === undefined ? 3600 : options.expiresIn;
    json(res, 200, { access_token: token, token_type: 'Bearer', ...(expires === null ? {} : { expires_in: expires }) });
  });
  return { ...loopback, issued, requests: () => loopback.received.length };
}

/**
 * The endpoint routes alone on the platform's real Fastify app (its body parser, 404 and error
 * handler), on loopback without tokens or rate limiting; request lines are not logged.
 */
export async function startRoutes(service: EndpointService, logs: string[] = []): Promise<Loopback> {
  const settings = SettingsSchema.parse({ root: '.', requestLog: false });
  const { app } = createApp({
    settings,
    log: new Logger('debug', (line) => logs.push(line)),
    metrics: new Metrics(),
    extraTokens: () => ({}),
    publicPaths: new Set(),
    rateLimiter: new ReconfigurableRateLimiter({ enabled: false, windowMs: 60_000, max: 600 }, new Set()),
  });
  mountRoutes(app, endpointRoutes(service, undefined, app.supportedMethods));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received: [],
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
}

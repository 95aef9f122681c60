/**
 * Where express-router endpoints run: each loaded router drop-in has its own supervised host
 * (core/kernel/dropin-host.ts: heap cap, watchdog, restarts in `/api/v1/status` and `/metrics`),
 * which serves the router over HTTP on 127.0.0.1 (router-worker.ts); this module proxies the
 * endpoint's requests there after every server hook has run (Host check, token → principal, rate
 * limit, control gate, invocation log), so none of them moves. A router registered in code, or
 * exported with `isolation: 'inline'`, is mounted on the server's thread (router.ts).
 *
 * Each request is one host call: it starts when the server asks the host for its port, and ends
 * when the server has passed the whole response on. While it runs the host must answer heartbeats,
 * so a router stuck in a loop is found by the watchdog and its thread replaced, and a heap past the
 * cap fails the request `out of memory`. The deadline (`timeout_ms`, else `endpoints.timeoutMs`)
 * is the time to the response's status line: past it the caller gets 504 `{detail}` at once and a
 * host that ignores the abort is stopped. Once the router has started answering, the response
 * streams until it ends (a router's server-sent events are legitimate), watched by the watchdog only.
 *
 * The proxy connects only to the port the host reported, on 127.0.0.1, with a path that is always
 * the router's part of the endpoint's URL; the host refuses any request without its thread's token.
 */
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DropInHosts, type DropInHostsOptions, hostedSource, isLoadedDropIn } from '../kernel/dropin-host.js';
import { type HostedTask, rebuildError, type SerializedError } from '../kernel/dropin-host-protocol.js';
import { fail, type HangarError } from '../kernel/errors.js';
import type { Registry } from '../kernel/registry.js';
import {
  CALL_HEADER,
  OUTCOME_HEADER,
  type RouterCall,
  type RouterEndpoint,
  type RouterOutcome,
  routerError,
  routerTarget,
  TOKEN_HEADER,
} from './router.js';

export interface RouterHostsOptions extends Pick<DropInHostsOptions, 'watchdogMs' | 'onRestart' | 'onWarmError'> {
  registry: Registry;
  root: string;
  /** `endpoints.maxHeapMb`, unless the router's `max_heap_mb` says otherwise. */
  maxHeapMb: number;
}

/**
 * Connection headers of one hop (RFC 9110 §7.6.1), and the body's length, which the proxy sets
 * again for the body it sends.
 */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  TOKEN_HEADER,
  CALL_HEADER,
  OUTCOME_HEADER,
]);

function forwarded(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  return out;
}

/** The body Fastify parsed, as it goes to the host: the router gets the same `req.body`. */
function bodyOf(body: unknown): { kind: RouterCall['body']; bytes?: Buffer } {
  if (body === undefined || body === null) return { kind: 'none' };
  if (Buffer.isBuffer(body)) return { kind: 'bytes', bytes: body };
  if (typeof body === 'string') return { kind: 'text', bytes: Buffer.from(body) };
  return { kind: 'json', bytes: Buffer.from(JSON.stringify(body)) };
}

type Failure = { noRoute: true } | { error: SerializedError };

export class RouterHosts {
  readonly #options: RouterHostsOptions;
  readonly #hosts: DropInHosts<HostedTask>;
  // Connections to the hosts are reused between requests; a restarted host's port is new, so a dead one is never asked again.
  readonly #agent = new http.Agent({ keepAlive: true });

  constructor(options: RouterHostsOptions) {
    this.#options = options;
    this.#hosts = new DropInHosts<HostedTask>({
      ...options,
      kind: 'endpoint',
      entry: 'core/endpoints/router-worker.ts',
      // A router keeps its data in its module (endpoints/notes-router.ts): its thread stays while the server runs.
      idleTimeoutMs: 2_147_483_647,
    });
  }

  /** Whether this router runs in a host: a loaded drop-in's, unless it asks for `isolation: 'inline'`. */
  supervises(endpoint: RouterEndpoint): boolean {
    if (endpoint.isolation === 'inline') return false;
    return isLoadedDropIn(this.#options.registry, this.#options.root, 'endpoint', endpoint.name, endpoint);
  }

  /** Start the router's host ahead of its first request (discovery loaded or reloaded it). */
  prepare(endpoint: RouterEndpoint): void {
    if (this.supervises(endpoint)) this.#hosts.prepare(endpoint.name, this.#heapOf(endpoint));
  }

  forget(name: string): void {
    this.#hosts.forget(name);
  }

  status() {
    return this.#hosts.status();
  }

  async close(): Promise<void> {
    this.#agent.destroy();
    await this.#hosts.close();
  }

  /**
   * Serve one request of the endpoint from its host. Resolves once the response has been passed on;
   * rejects with the error Fastify's error handler should answer (no route, the router's error, the
   * deadline, its host out of memory or restarted) when nothing was sent yet.
   */
  serve(
    endpoint: RouterEndpoint,
    req: FastifyRequest,
    reply: FastifyReply,
    deadlineMs: number,
    onDone: (outcome: RouterOutcome) => void,
  ): Promise<void> {
    const source = hostedSource(this.#options.registry, this.#options.root, 'endpoint', endpoint.name, endpoint);
    if (!source) throw new Error(`endpoint '${endpoint.name}' is not a loaded drop-in`);
    const res = reply.raw;
    const { url, mount, target } = routerTarget(req);
    const body = bodyOf(req.body);
    const call: RouterCall = { hash: source.hash, principal: req.principal, baseUrl: mount, originalUrl: url, body: body.kind };
    const headers = {
      ...forwarded(req.headers),
      ...(body.bytes ? { 'content-length': String(body.bytes.length) } : {}),
      [CALL_HEADER]: encodeURIComponent(JSON.stringify(call)),
    };
    // Headers Hangar set before the handler (X-Request-Id) live on Fastify's reply until it sends; the proxy writes the node response.
    for (const [header, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) res.setHeader(header, value as string | number | string[]);
    }

    return new Promise<void>((resolve, reject) => {
      let settled = false;
      let failure: Failure | undefined;
      const settle = (outcome: RouterOutcome, error?: HangarError) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        res.off('close', onClose);
        onDone(outcome);
        if (error) reject(error);
        else resolve();
      };
      const deadline = new AbortController();
      const gone = new AbortController();
      const timer = setTimeout(() => {
        const error = fail('HANGAR_ENDPOINT_TIMEOUT', { endpoint: endpoint.name, ms: deadlineMs });
        deadline.abort(error);
        settle('timeout', error);
      }, deadlineMs);
      const onClose = () => {
        if (res.writableFinished) return;
        gone.abort(new Error('the caller went away'));
        settle('cancelled');
      };
      res.on('close', onClose);
      const signal = AbortSignal.any([deadline.signal, gone.signal]);

      const proxy = (port: unknown, token: unknown) =>
        new Promise<void>((done, refuse) => {
          // The host's port is the only target: an integer the host reported, on the loopback address.
          if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65_535 || typeof token !== 'string') {
            return refuse(new Error(`the host of endpoint '${endpoint.name}' reported no port to serve it on`));
          }
          const outgoing = http.request({
            host: '127.0.0.1',
            port,
            method: req.method,
            path: target,
            headers: { ...headers, [TOKEN_HEADER]: token },
            agent: this.#agent,
            signal,
          });
          outgoing.on('error', refuse);
          outgoing.on('response', (incoming: IncomingMessage) => {
            if (incoming.headers[OUTCOME_HEADER]) {
              const chunks: Buffer[] = [];
              incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
              incoming.on('error', refuse);
              incoming.on('end', () => {
                failure = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Failure;
                done();
              });
              return;
            }
            // The router has started answering: its response streams to the end, whatever the deadline.
            clearTimeout(timer);
            if (settled) return incoming.destroy();
            relay(incoming, res);
            pipeline(incoming, res, (err) => {
              if (err) {
                res.destroy();
                refuse(err);
              } else done();
            });
          });
          outgoing.end(body.bytes);
        });

      this.#hosts
        .run({
          name: endpoint.name,
          heapMb: this.#heapOf(endpoint),
          code: source.code,
          signal,
          task: { name: endpoint.name, file: source.file, hash: source.hash },
          onCall: (method, args) =>
            method === 'proxy' ? proxy(args[0], args[1]) : Promise.reject(new Error(`unknown host call '${method}'`)),
        })
        .then(
          () => {
            if (failure && 'noRoute' in failure) {
              const path = target.split('?')[0]!;
              settle('invalid_input', fail('HANGAR_ENDPOINT_ROUTER_NO_ROUTE', { endpoint: endpoint.name, method: req.method, path }));
            } else if (failure) {
              const error = routerError(endpoint.name, rebuildError(failure.error));
              settle(error.status < 500 ? 'invalid_input' : 'handler_error', error);
            } else settle(res.statusCode >= 500 ? 'handler_error' : res.statusCode >= 400 ? 'invalid_input' : 'success');
          },
          (err: unknown) => {
            if (res.headersSent) {
              // The host failed mid-answer (stopped, out of memory, the stream broke): the response can only be cut.
              res.destroy();
              return settle('handler_error');
            }
            settle('handler_error', err as HangarError);
          },
        );
    });
  }

  #heapOf(endpoint: RouterEndpoint): number {
    return endpoint.max_heap_mb ?? this.#options.maxHeapMb;
  }
}

/** The router's status line and headers, less those of its hop. */
function relay(incoming: IncomingMessage, res: ServerResponse): void {
  res.statusCode = incoming.statusCode ?? 502;
  if (incoming.statusMessage) res.statusMessage = incoming.statusMessage;
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name) && name !== 'date') res.setHeader(name, value);
  }
  const length = incoming.headers['content-length'];
  if (length !== undefined) res.setHeader('content-length', length);
}

/**
 * The host thread an express-router endpoint runs in (router-host.ts starts it with a heap cap).
 * The router is served here by node:http on 127.0.0.1 at a port the system picks, and the server
 * proxies each request of the endpoint to it, so the router sees a real request and response
 * (streams, `res.json`, `req.params`) exactly as it did on the server's thread.
 *
 * One HTTP server per thread: each call says which build it runs (`x-hangar-call`), and a build no
 * request is using is dropped when a newer one arrives, as dropin-host-worker.ts drops versions.
 * The port is reachable by any local process, so a request must carry this thread's random token
 * (`x-hangar-host-token`), which only the server learns: anyone else gets 403 before a router runs.
 */
import '../kernel/host-thread.js';
import { randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MessagePort } from 'node:worker_threads';
import * as zod from 'zod';
import type { HostedReply, HostedTask, WarmTask } from '../kernel/dropin-host-protocol.js';
import { serializeError } from '../kernel/dropin-host-protocol.js';
import { serveHosted } from '../kernel/dropin-host-worker.js';
import { sameSecret } from '../lib/same-secret.js';
import * as sdk from '../sdk.js';
import {
  CALL_HEADER,
  type ExpressHandler,
  expressForDropIns,
  hostOf,
  isExpressHandler,
  OUTCOME_HEADER,
  type RouterCall,
  TOKEN_HEADER,
} from './router.js';

const provided: Record<string, unknown> = { hangar: sdk, zod, 'zod/v4': zod };
// Read when a drop-in imports it, so a thread whose router never makes an app never evaluates express.
Object.defineProperty(provided, 'express', { enumerable: true, get: expressForDropIns });

const token = randomBytes(32).toString('hex');
const builds = new Map<string, { router: ExpressHandler; running: number }>();
let listening: Promise<number> | undefined;

function trusted(given: string | string[] | undefined): boolean {
  return typeof given === 'string' && sameSecret(given, token);
}

async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (!trusted(req.headers[TOKEN_HEADER])) {
    res.writeHead(403).end();
    return;
  }
  const call = JSON.parse(decodeURIComponent(String(req.headers[CALL_HEADER]))) as RouterCall;
  delete req.headers[TOKEN_HEADER];
  delete req.headers[CALL_HEADER];
  const build = builds.get(call.hash);
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  const request = req as IncomingMessage & { body?: unknown; baseUrl?: string; originalUrl?: string; principal?: string };
  request.body =
    call.body === 'json'
      ? JSON.parse(raw.toString('utf8'))
      : call.body === 'text'
        ? raw.toString('utf8')
        : call.body === 'bytes'
          ? raw
          : undefined;
  request.baseUrl = call.baseUrl;
  request.originalUrl = call.originalUrl;
  if (call.principal !== undefined) request.principal = call.principal;
  const done = (err?: unknown) => {
    if (res.headersSent) {
      // Failed mid-answer: the status line is gone, so the response can only be cut.
      if (err !== undefined) res.destroy();
      return;
    }
    const noRoute = err === undefined || err === 'router' || err === 'route';
    res.writeHead(500, { [OUTCOME_HEADER]: '1', 'content-type': 'application/json' });
    res.end(JSON.stringify(noRoute ? { noRoute: true } : { error: serializeError(err) }));
  };
  if (!build) return done(new Error(`this thread has no build ${call.hash} of the router`));
  try {
    hostOf(build.router)(req, res, done);
  } catch (err) {
    done(err);
  }
}

function listen(): Promise<number> {
  listening ??= new Promise<number>((resolve, reject) => {
    const server = http.createServer((req, res) => {
      answer(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { [OUTCOME_HEADER]: '1' }).end(JSON.stringify({ error: serializeError(err) }));
        else res.destroy();
      });
    });
    // The server's own limits already applied to the request; none of node's defaults should cut a long answer here.
    server.requestTimeout = 0;
    server.headersTimeout = 0;
    server.keepAliveTimeout = 60_000;
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
  return listening;
}

export default function serveRouter(task: (HostedTask & { port: MessagePort }) | WarmTask): Promise<HostedReply> {
  if ('warm' in task) return listen().then(() => ({ value: undefined }));
  return serveHosted(task, provided, async (exports, io) => {
    const router = exports.default ?? exports.endpoint ?? exports;
    if (!isExpressHandler(router)) throw new Error(`this build of endpoint '${task.name}' is not an express router`);
    const port = await listen();
    let build = builds.get(task.hash);
    if (!build) {
      build = { router, running: 0 };
      builds.set(task.hash, build);
      for (const [hash, other] of builds) if (hash !== task.hash && other.running === 0) builds.delete(hash);
    }
    build.running++;
    try {
      // Answered once the server has passed the whole response on; meanwhile this call keeps the host watched.
      await io.call('proxy', [port, token]);
    } finally {
      build.running--;
    }
    return null;
  });
}

/**
 * The notebook CLI's own servers (the main server mounts the same routes through
 * `subsystem.ts`):
 * - `startNotebookServer`: the session API + ws + the editor page on one port (`notebook start`),
 *   or the API alone on the backend port (`notebook dev`).
 * - `startUiServer`: the editor page on the frontend port for `notebook dev`, talking to the
 *   backend's API; the page reloads when a notebook file changes on disk (hot reload).
 * - `startAppServer`: a notebook as a small interactive web app (`notebook app`): outputs only, in a
 *   layout, its interactive elements driving a live session.
 *
 * All bind to 127.0.0.1 by default: these servers run user code and have no authentication, so
 * they also refuse requests and ws upgrades whose Host (or Origin) is not a loopback name — the
 * main server's DNS-rebinding defence (`core/http/security.ts`), reused as is.
 *
 * Each is its own small Fastify instance (`createNotebookApp`), not the main app: JSON bodies up to
 * 20 MB, errors and unknown routes answered as `{detail}` like the main server.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, relative, sep } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { type WebSocket, WebSocketServer } from 'ws';
import { answerWithDetail } from '../http/app.js';
import { crossSiteGuard } from '../http/cross-site.js';
import { untrustedHtmlHeaders } from '../http/csp.js';
import { defineRoute, mountRoutes } from '../http/route.js';
import { hostCheck, upgradeChecker } from '../http/security.js';
import { fail } from '../kernel/errors.js';
import { SettingsSchema } from '../kernel/settings.js';
import { watchTree } from '../kernel/watch-tree.js';
import { APP_SHELL, APP_SHELL_POLICY, APP_SHELL_SCRIPT } from './app-bridge.js';
import { cellOutputsHtml, type Layout, reportHtml } from './export.js';
import { readNotebookFile } from './formats.js';
import { attachNotebookSocket, notebookRoutes } from './routes.js';
import { AppUiParams, UiValueBody } from './schemas.js';
import { NotebookService } from './service.js';
import { NotebookSession } from './session.js';
import { editorPageHtml } from './ui.js';

export interface RunningNotebookServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface RunningSessionServer extends RunningNotebookServer {
  service: NotebookService;
}

/**
 * Host/Origin checks for a server bound to `host` (the settings carry nothing else we use):
 * `allowOrigin` is the one other origin trusted, the dev frontend's.
 */
function guards(root: string, host: string, allowOrigin?: string) {
  const settings = SettingsSchema.parse({ root, host, allowedOrigins: allowOrigin ? [allowOrigin] : [] });
  const upgrade = upgradeChecker(settings);
  return {
    http: hostCheck(settings),
    crossSite: crossSiteGuard(settings),
    upgrade: (req: http.IncomingMessage) => upgrade(req)?.message,
  };
}

function listen(server: http.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

const closeServer = (server: http.Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections?.();
    server.close(() => resolve());
  });

/** Stop the node server (dropping every connection), then the Fastify app. */
async function closeApp(app: FastifyInstance, server: http.Server): Promise<void> {
  await closeServer(server);
  await app.close();
}

const JSON_BODY_LIMIT = 20 * 1024 * 1024;

/**
 * The frame of the CLI's servers: a Fastify app on its own node server (returned too, for ws
 * upgrades; the caller listens and closes it), refusing Hosts other than `host`'s loopback names.
 * JSON bodies as these servers always took them (express.json, strict): objects and arrays only,
 * an empty body is `{}`, bad JSON is a 400; other content types, and state-changing requests from
 * other origins, are refused (`core/http/cross-site.ts`). Errors (catalogue errors, or Fastify's own, e.g. 413) and unknown routes are
 * answered `{detail}`.
 */
export function createNotebookApp(options: { root: string; host?: string; allowOrigin?: string }): {
  app: FastifyInstance;
  server: http.Server;
} {
  const { http: hostGuard, crossSite } = guards(options.root, options.host ?? '127.0.0.1', options.allowOrigin);
  let server!: http.Server;
  const app = Fastify({
    serverFactory: (handler) => (server = http.createServer(handler)),
    bodyLimit: JSON_BODY_LIMIT,
    logger: false,
    trustProxy: false,
    routerOptions: { maxParamLength: 500 },
  });
  app.addHook('onRequest', hostGuard);
  // These servers run user code without authentication: no page on another origin may drive them.
  app.addHook('onRequest', crossSite);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = body as string;
    if (text === '') return done(null, {});
    const first = text.trimStart()[0];
    if (first !== '{' && first !== '[') return done(fail('HANGAR_NOTEBOOK_BODY_NOT_OBJECT', {}), undefined);
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(fail('HANGAR_NOTEBOOK_BODY_INVALID_JSON', { problem: (err as Error).message }), undefined);
    }
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, _body, done) => done(null, undefined));
  answerWithDetail(app);
  return { app, server };
}

/** Listen on `port` once the app's routes are ready; on failure the app is closed again. */
async function listenApp(app: FastifyInstance, server: http.Server, port: number, host: string): Promise<number> {
  try {
    await app.ready();
    return await listen(server, port, host);
  } catch (err) {
    await app.close().catch(() => undefined);
    throw err;
  }
}

export interface NotebookServerOptions {
  root: string;
  port: number;
  host?: string;
  /** Serve the editor page at `/` (start) or not (dev's backend). */
  ui?: boolean;
  /** Notebook to open in the page first (id inside notebooks/). */
  initial?: string;
  /** Origin allowed to call the API (dev's frontend). Exact match only; never `*`. */
  allowOrigin?: string;
  /** The page's cell editor (see `EditorScript`); without it the page edits cells in textareas. */
  editorScript?: EditorScript;
}

/**
 * The browser bundle of the UI's cell editor, built on first request. The composition root passes
 * it in (core/ui/assets.ts `cellEditorAsset`): a subsystem may not reach the desktop's views.
 */
export type EditorScript = () => Promise<{ body: Buffer; type: string }>;

/** Where the editor page loads its cell editor from: its own origin, never a CDN. */
const EDITOR_SCRIPT_PATH = '/cell-editor.js';

/**
 * `GET /cell-editor.js`. `no-cache` with an ETag, as the UI's bundle: the bundle changes with the
 * source, so a reload revalidates and gets a 304 while it has not.
 */
function serveEditorScript(app: FastifyInstance, script: EditorScript): void {
  let tagged: { body: Buffer; type: string; etag: string } | undefined;
  app.get(EDITOR_SCRIPT_PATH, async (req, reply) => {
    const asset = await script();
    if (tagged?.body !== asset.body) tagged = { ...asset, etag: `"${createHash('sha256').update(asset.body).digest('base64url')}"` };
    reply.headers({ 'Cache-Control': 'no-cache', ETag: tagged.etag, 'X-Content-Type-Options': 'nosniff' });
    if (req.headers['if-none-match'] === tagged.etag) return reply.code(304).send();
    return reply.type(asset.type).send(asset.body);
  });
}

export async function startNotebookServer(options: NotebookServerOptions): Promise<RunningSessionServer> {
  const host = options.host ?? '127.0.0.1';
  const service = new NotebookService({ root: options.root });
  const guard = guards(options.root, host, options.allowOrigin);
  const { app, server } = createNotebookApp({ root: options.root, host, allowOrigin: options.allowOrigin });
  if (options.allowOrigin) {
    const allowed = options.allowOrigin;
    app.addHook('onRequest', (req, reply, done) => {
      if (req.headers.origin === allowed) {
        reply.headers({
          'Access-Control-Allow-Origin': allowed,
          'Access-Control-Allow-Methods': 'GET,POST,PUT,PATCH,DELETE',
          'Access-Control-Allow-Headers': 'content-type',
          Vary: 'Origin',
        });
        // Preflight: answered here, before routing (no route has OPTIONS).
        if (req.method === 'OPTIONS') return void reply.code(204).send();
      }
      done();
    });
  }
  mountRoutes(app, notebookRoutes(service));
  if (options.ui) {
    const editorScript = options.editorScript && EDITOR_SCRIPT_PATH;
    app.get('/', (_req, reply) =>
      reply.type('text/html; charset=utf-8').send(editorPageHtml({ api: '', initial: options.initial, editorScript })),
    );
    if (options.editorScript) serveEditorScript(app, options.editorScript);
  }
  attachNotebookSocket(server, service, (req) => {
    // The dev frontend runs on another port of the same loopback host: its origin is `allowOrigin`.
    return guard.upgrade(req);
  });
  const port = await listenApp(app, server, options.port, host);
  return {
    url: `http://${host}:${port}`,
    port,
    service,
    async close() {
      await service.closeAll();
      await closeApp(app, server);
    },
  };
}

/** The dev frontend: serves the editor page pointed at the backend, and reloads it on file changes. */
export async function startUiServer(options: {
  port: number;
  host?: string;
  api: string;
  root: string;
  initial?: string;
  /** Called before pages are told to reload (dev drops the backend's stale session here). */
  onFileChange?: (id: string) => Promise<unknown>;
  editorScript?: EditorScript;
}): Promise<RunningNotebookServer> {
  const host = options.host ?? '127.0.0.1';
  const guard = guards(options.root, host);
  const { app, server } = createNotebookApp({ root: options.root, host });
  const editorScript = options.editorScript && EDITOR_SCRIPT_PATH;
  app.get('/', (_req, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .send(editorPageHtml({ api: options.api, initial: options.initial, hotReload: '/__reload', editorScript })),
  );
  if (options.editorScript) serveEditorScript(app, options.editorScript);
  const wss = new WebSocketServer({ noServer: true });
  const clients = new Set<WebSocket>();
  server.on('upgrade', (req, socket, head) => {
    if (req.url !== '/__reload') return void socket.destroy();
    const refused = guard.upgrade(req);
    if (refused) return void socket.end(`HTTP/1.1 403 Forbidden\r\n\r\n${refused}`);
    wss.handleUpgrade(req, socket, head, (ws) => {
      clients.add(ws);
      ws.on('close', () => clients.delete(ws));
    });
  });
  const notebooksDir = `${options.root}${sep}notebooks`;
  mkdirSync(notebooksDir, { recursive: true });
  // fs.watch reports an editor's save as several events; one notification per file per 100 ms.
  const pending = new Map<string, NodeJS.Timeout>();
  const watcher = watchTree(notebooksDir, (changed) => {
    const name = relative(notebooksDir, changed);
    if (!name || name.split(sep).some((part) => part.startsWith('.')) || name.endsWith('.tmp')) return;
    const id = name.split(sep).join('/');
    clearTimeout(pending.get(id));
    pending.set(
      id,
      setTimeout(() => {
        pending.delete(id);
        void (options.onFileChange?.(id) ?? Promise.resolve(true)).then(
          (changed) => {
            if (changed === false) return; // our own save: nothing new to show
            for (const ws of clients) ws.send(JSON.stringify({ type: 'file-changed', notebook: id }));
          },
          () => undefined,
        );
      }, 100),
    );
  });
  const stop = async () => {
    watcher.close();
    for (const timer of pending.values()) clearTimeout(timer);
    for (const ws of clients) ws.terminate();
    await closeApp(app, server);
  };
  let port: number;
  try {
    port = await listenApp(app, server, options.port, host);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `http://${host}:${port}`, port, close: stop };
}

/**
 * A notebook as an interactive app: one live session, run at start; the page shows the outputs
 * (code hidden) in the chosen layout, and its interactive elements drive the kernel as in the
 * editor: a change re-runs the cells that read the element and the page swaps in their new
 * outputs. `POST /rerun` takes the file again and runs it all, keeping element values.
 *
 * The report is the notebook's own HTML, so `/` is a small page of ours (app.js, the Re-run button,
 * a status line and a frame) and the report is `/report`, served sandboxed
 * (`OUTPUT_SANDBOX_POLICY`) and framed with `sandbox="allow-scripts"`: its scripts run, in an
 * opaque origin that can neither read this server's answers nor call it. Controls reach the kernel
 * through the page by messages (core/notebook/app-bridge.ts). One session serves every viewer, as
 * a local app for one user: values one viewer sets are what the next one sees.
 */
export async function startAppServer(options: {
  file: string;
  port: number;
  host?: string;
  layout: Layout;
}): Promise<RunningNotebookServer> {
  const host = options.host ?? '127.0.0.1';
  const session = new NotebookSession(await readNotebookFile(options.file), { filePath: options.file });
  const report = () =>
    reportHtml(
      { name: session.notebook.name, cells: session.cellsWithState() },
      { hideCode: true, layout: options.layout, interactive: true },
    );
  const outputsByCell = () =>
    new Map(
      session
        .cellsWithState()
        .filter((c) => c.cell_type === 'code')
        .map((c) => [c.id, cellOutputsHtml(c, { interactive: true })]),
    );
  try {
    await session.runAll();
  } catch (err) {
    await session.close();
    throw err;
  }
  const { app, server } = createNotebookApp({ root: dirname(options.file), host });
  app.get('/', (_req, reply) => reply.type('text/html; charset=utf-8').header('Content-Security-Policy', APP_SHELL_POLICY).send(APP_SHELL));
  app.get('/app.js', (_req, reply) =>
    reply.type('text/javascript; charset=utf-8').header('X-Content-Type-Options', 'nosniff').send(APP_SHELL_SCRIPT),
  );
  app.get('/report', (_req, reply) => reply.headers(untrustedHtmlHeaders).send(report()));
  mountRoutes(app, [
    defineRoute({
      method: 'POST',
      url: '/ui/:element',
      summary: "Set an interactive element's value, re-run the cells that read it, answer the outputs that changed",
      tags: ['notebook app'],
      schema: {
        params: AppUiParams,
        body: UiValueBody,
        response: { 200: '{cells: [{id, html}]}', 404: 'no such element', 422: 'invalid element id or body' },
      },
      handler: async ({ params, body }) => {
        const before = outputsByCell();
        const owner = params.element.slice(0, params.element.lastIndexOf(':'));
        await session.setUiValue(params.element, body.value);
        await session.idle();
        // The element's own cell is left alone: redrawing it would take the control from under the pointer.
        const cells = [...outputsByCell()]
          .filter(([id, html]) => id !== owner && before.get(id) !== html)
          .map(([id, html]) => ({ id, html }));
        return { cells };
      },
    }),
  ]);
  // A plain HTML form can only post a form body; the cross-site guard still checks its Origin.
  app.post('/rerun', { config: { bodyTypes: ['application/x-www-form-urlencoded'] } }, async (_req, reply) => {
    await session.reloadFromDisk();
    await session.runAll();
    return reply.redirect('/', 303);
  });
  let port: number;
  try {
    port = await listenApp(app, server, options.port, host);
  } catch (err) {
    await session.close();
    throw err;
  }
  return {
    url: `http://${host}:${port}`,
    port,
    async close() {
      await closeApp(app, server);
      await session.close();
    },
  };
}

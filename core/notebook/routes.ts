/**
 * Notebook session API (issue 8, part 6). Routes parse, call the service or session, and shape the
 * response; nothing else. Mount with `notebookRoutes(app, { root })`; live events are on the
 * ws channel from `attachNotebookSocket`.
 *
 * | method | path | what |
 * |---|---|---|
 * | GET | /api/notebooks | list notebooks in `notebooks/` |
 * | POST | /api/notebooks | create `{name, format}` → 201 |
 * | POST | /api/notebooks/run | run a posted document headlessly (remote `notebook run`) |
 * | GET | /api/notebooks/:nb | open: cells with states |
 * | DELETE | /api/notebooks/:nb/session | close the session (stops the kernel) |
 * | POST | /api/notebooks/:nb/save | write the file |
 * | GET, POST | /api/notebooks/:nb/cells | list / add a cell |
 * | GET, PATCH, DELETE | /api/notebooks/:nb/cells/:cell | read / edit / delete a cell |
 * | GET | /api/notebooks/:nb/cells/:cell/outputs.html | the cell's outputs rendered as in the HTML export, sandboxed (CSP) |
 * | PUT | /api/notebooks/:nb/order | reorder `{order: [ids]}` |
 * | POST | /api/notebooks/:nb/cells/:cell/run | run a cell and its dependents |
 * | POST | /api/notebooks/:nb/run, /run-stale, /interrupt, /restart | kernel control |
 * | GET | /api/notebooks/:nb/dependencies | reads/writes, edges, execution order, stale set, cycles |
 * | PUT | /api/notebooks/:nb/settings | `{cell_timeout_ms}` |
 *
 * `:nb` is the notebook path inside `notebooks/`, URL-encoded (`sub%2Fsales.nb.ts`). Run routes
 * wait for the run and return the cells; with `?wait=false` they answer 202 at once and the
 * outputs follow over ws.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyRequest, FastifyReply } from 'fastify';
import { WebSocketServer, type WebSocket } from 'ws';
import { parseInput } from '../http/validate.js';
import { param, queryOf } from '../http/request.js';
import { untrustedHtmlHeaders } from '../ui/csp.js';
import { renderMarkdown } from './export.js';
import { outputToHtml } from './render.js';
import { CreateCellBody, CreateNotebookBody, ReorderBody, RunDocumentBody, SettingsBody, UpdateCellBody } from './schemas.js';
import { NotebookService, toServiceError } from './service.js';
import type { NotebookSession } from './session.js';

export interface NotebookRoutesContext {
  /** Workspace folder (notebooks are in `<root>/notebooks`). Ignored when `service` is given. */
  root?: string;
  service?: NotebookService;
  cellTimeoutMs?: number;
}

type Handler = (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/**
 * Wraps a notebook handler (here and in intel/routes.ts): maps engine errors (SessionError,
 * NotebookFormatError) onto HTTP ones, which the app's error handler turns into `{detail}`, and
 * sends a bare string result as JSON.
 */
export const notebookRoute = (handler: Handler) =>
  async function notebookRoute(req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    let value: unknown;
    try {
      value = await handler(req, reply);
    } catch (err) {
      throw toServiceError(err);
    }
    if (typeof value === 'string') return reply.type('application/json; charset=utf-8').send(JSON.stringify(value));
    return value;
  };

/**
 * Adds the session API to `app` and returns the service it serves (the one given, or one made for
 * `root`), so a caller that built it from `root` can attach the ws channel and close its kernels.
 */
export function notebookRoutes(app: FastifyInstance, ctx: NotebookRoutesContext): NotebookService {
  if (!ctx.service && !ctx.root) throw new Error('notebookRoutes needs a workspace root or a NotebookService');
  const service = ctx.service ?? new NotebookService({ root: ctx.root!, cellTimeoutMs: ctx.cellTimeoutMs });

  const session = (req: FastifyRequest) => service.open(param(req, 'nb'));
  const view = async (s: NotebookSession, id: string) => ({
    id,
    name: s.notebook.name,
    metadata: s.notebook.metadata,
    cell_timeout_ms: s.cellTimeoutMs,
    kernel_generation: s.kernel.generation,
    cells: s.cellsWithState(),
  });
  const runAndAnswer = async (req: FastifyRequest, reply: FastifyReply, s: NotebookSession, run: () => Promise<void>) => {
    const done = run();
    if (queryOf(req).wait === 'false') {
      done.catch(() => undefined);
      reply.code(202);
      return { cells: s.cellsWithState().map(({ id, state }) => ({ id, state })) };
    }
    await done;
    return view(s, param(req, 'nb'));
  };

  app.get('/api/notebooks', notebookRoute(async () => ({ notebooks: await service.list() })));

  app.post('/api/notebooks', notebookRoute(async (req, reply) => {
    const body = parseInput(CreateNotebookBody, req.body);
    const id = await service.create(body);
    reply.code(201);
    return view(await service.open(id), id);
  }));

  app.post('/api/notebooks/run', notebookRoute(async (req) => {
    const body = parseInput(RunDocumentBody, req.body);
    return service.runDocument(body);
  }));

  app.get('/api/notebooks/:nb', notebookRoute(async (req) => view(await session(req), param(req, 'nb'))));

  app.delete('/api/notebooks/:nb/session', notebookRoute(async (req, reply) => {
    await service.close(param(req, 'nb'));
    return reply.code(204).send();
  }));

  app.post('/api/notebooks/:nb/save', notebookRoute(async (req) => {
    const s = await session(req);
    await s.save();
    return { saved: param(req, 'nb') };
  }));

  app.get('/api/notebooks/:nb/cells', notebookRoute(async (req) => ({ cells: (await session(req)).cellsWithState() })));

  app.post('/api/notebooks/:nb/cells', notebookRoute(async (req, reply) => {
    const body = parseInput(CreateCellBody, req.body);
    const s = await session(req);
    const cell = await s.addCell(body);
    reply.code(201);
    return { ...cell, state: s.state(cell.id) };
  }));

  app.get('/api/notebooks/:nb/cells/:cell', notebookRoute(async (req) => {
    const s = await session(req);
    const cell = s.cell(param(req, 'cell'));
    return { ...cell, state: s.state(cell.id) };
  }));

  // Outputs as HTML, rendered exactly as the HTML export renders them (tables, charts, markdown).
  // They are whatever the notebook (or an .ipynb someone sent) says, so they are served sandboxed:
  // their scripts run in an opaque origin and cannot read the API (see OUTPUT_SANDBOX_POLICY).
  app.get('/api/notebooks/:nb/cells/:cell/outputs.html', notebookRoute(async (req, reply) => {
    const cell = (await session(req)).cell(param(req, 'cell'));
    return reply.headers(untrustedHtmlHeaders).send(cell.outputs.map((o) => outputToHtml(o, renderMarkdown)).join('\n'));
  }));

  app.patch('/api/notebooks/:nb/cells/:cell', notebookRoute(async (req) => {
    const body = parseInput(UpdateCellBody, req.body);
    const s = await session(req);
    const cell = await s.updateCell(param(req, 'cell'), body);
    return { ...cell, state: s.state(cell.id) };
  }));

  app.delete('/api/notebooks/:nb/cells/:cell', notebookRoute(async (req, reply) => {
    await (await session(req)).deleteCell(param(req, 'cell'));
    return reply.code(204).send();
  }));

  app.put('/api/notebooks/:nb/order', notebookRoute(async (req) => {
    const body = parseInput(ReorderBody, req.body);
    const s = await session(req);
    s.reorder(body.order);
    return { order: s.notebook.cells.map((c) => c.id) };
  }));

  app.post('/api/notebooks/:nb/cells/:cell/run', notebookRoute(async (req, reply) => {
    const s = await session(req);
    s.cell(param(req, 'cell'));
    return runAndAnswer(req, reply, s, () => s.runCell(param(req, 'cell')));
  }));

  app.post('/api/notebooks/:nb/run', notebookRoute(async (req, reply) => {
    const s = await session(req);
    return runAndAnswer(req, reply, s, () => s.runAll());
  }));

  app.post('/api/notebooks/:nb/run-stale', notebookRoute(async (req, reply) => {
    const s = await session(req);
    return runAndAnswer(req, reply, s, () => s.runStale());
  }));

  app.post('/api/notebooks/:nb/interrupt', notebookRoute(async (req) => {
    const s = await session(req);
    await s.interrupt();
    return { kernel_generation: s.kernel.generation, cells: s.cellsWithState().map(({ id, state }) => ({ id, state })) };
  }));

  app.post('/api/notebooks/:nb/restart', notebookRoute(async (req) => {
    const s = await session(req);
    await s.restart();
    return { kernel_generation: s.kernel.generation, cells: s.cellsWithState().map(({ id, state }) => ({ id, state })) };
  }));

  app.get('/api/notebooks/:nb/dependencies', notebookRoute(async (req) => (await session(req)).dependencies()));

  app.put('/api/notebooks/:nb/settings', notebookRoute(async (req) => {
    const body = parseInput(SettingsBody, req.body);
    const s = await session(req);
    s.cellTimeoutMs = body.cell_timeout_ms;
    return { cell_timeout_ms: s.cellTimeoutMs };
  }));

  return service;
}

export const NOTEBOOK_WS_PATH = '/api/notebooks/ws';

/**
 * Live cell states and outputs over ws: connect to `/api/notebooks/ws?notebook=<id>` and receive
 * a `hello` with the current states, then every `SessionEvent` of that notebook as JSON.
 * The returned handler fits the main server's `ctx.upgrades` map (which checks Host, Origin and
 * token first); `attachNotebookSocket` wires it to a bare http server for the CLI's servers.
 */
export function notebookUpgradeHandler(service: NotebookService) {
  const wss = new WebSocketServer({ noServer: true });
  return function notebookUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const id = url.searchParams.get('notebook');
    if (!id) {
      socket.end('HTTP/1.1 400 Bad Request\r\n\r\n');
      return;
    }
    service.open(id).then(
      (s) =>
        wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
          const unsubscribe = s.subscribe((event) => ws.send(JSON.stringify(event)));
          ws.send(JSON.stringify({ type: 'hello', notebook: id, cells: s.cellsWithState().map(({ id: cell, state }) => ({ id: cell, state })) }));
          ws.on('close', unsubscribe);
        }),
      () => socket.end('HTTP/1.1 404 Not Found\r\n\r\n'),
    );
  };
}

/**
 * @param refuse returns why an upgrade must be refused (wrong Host or Origin), or undefined.
 */
export function attachNotebookSocket(server: Server, service: NotebookService, refuse?: (req: IncomingMessage) => string | undefined): void {
  const handle = notebookUpgradeHandler(service);
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Upgrades on other paths are left alone so other subsystems can share the server.
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== NOTEBOOK_WS_PATH) return;
    const refused = refuse?.(req);
    if (refused) {
      socket.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\n${refused}`);
      return;
    }
    handle(req, socket, head);
  });
}

/**
 * Notebook session API (issue 8, part 6). Routes parse, call the service or session, and shape the
 * response; nothing else. Mount with `app.use(notebookRoutes({ root }))`; live events are on the
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
 * | GET | /api/notebooks/:nb/cells/:cell/outputs.html | the cell's outputs rendered as in the HTML export |
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
import { Router, type Request, type Response, type NextFunction } from 'express';
import { WebSocketServer, type WebSocket } from 'ws';
import { parseInput } from '../http/validate.js';
import { toHttpError } from '../http/errors.js';
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

type Handler = (req: Request, res: Response) => Promise<unknown>;

/** Express 5 forwards rejections itself; this only maps engine errors onto HTTP ones first. */
const route = (handler: Handler) =>
  async function notebookRoute(req: Request, res: Response, next: NextFunction) {
    try {
      await handler(req, res);
    } catch (err) {
      next(toServiceError(err));
    }
  };

const param = (req: Request, name: string) => String(req.params[name]);

export function notebookRoutes(ctx: NotebookRoutesContext): Router & { service: NotebookService } {
  if (!ctx.service && !ctx.root) throw new Error('notebookRoutes needs a workspace root or a NotebookService');
  const service = ctx.service ?? new NotebookService({ root: ctx.root!, cellTimeoutMs: ctx.cellTimeoutMs });
  const router = Router() as Router & { service: NotebookService };
  router.service = service;

  const session = (req: Request) => service.open(param(req, 'nb'));
  const view = async (s: NotebookSession, id: string) => ({
    id,
    name: s.notebook.name,
    metadata: s.notebook.metadata,
    cell_timeout_ms: s.cellTimeoutMs,
    kernel_generation: s.kernel.generation,
    cells: s.cellsWithState(),
  });
  const runAndAnswer = async (req: Request, res: Response, s: NotebookSession, run: () => Promise<void>) => {
    const done = run();
    if (req.query.wait === 'false') {
      done.catch(() => undefined);
      res.status(202).json({ cells: s.cellsWithState().map(({ id, state }) => ({ id, state })) });
      return;
    }
    await done;
    res.json(await view(s, param(req, 'nb')));
  };

  router.get('/api/notebooks', route(async (_req, res) => res.json({ notebooks: await service.list() })));

  router.post('/api/notebooks', route(async (req, res) => {
    const body = parseInput(CreateNotebookBody, req.body);
    const id = await service.create(body);
    res.status(201).json(await view(await service.open(id), id));
  }));

  router.post('/api/notebooks/run', route(async (req, res) => {
    const body = parseInput(RunDocumentBody, req.body);
    res.json(await service.runDocument(body));
  }));

  router.get('/api/notebooks/:nb', route(async (req, res) => res.json(await view(await session(req), param(req, 'nb')))));

  router.delete('/api/notebooks/:nb/session', route(async (req, res) => {
    await service.close(param(req, 'nb'));
    res.status(204).end();
  }));

  router.post('/api/notebooks/:nb/save', route(async (req, res) => {
    const s = await session(req);
    await s.save();
    res.json({ saved: param(req, 'nb') });
  }));

  router.get('/api/notebooks/:nb/cells', route(async (req, res) => res.json({ cells: (await session(req)).cellsWithState() })));

  router.post('/api/notebooks/:nb/cells', route(async (req, res) => {
    const body = parseInput(CreateCellBody, req.body);
    const s = await session(req);
    const cell = await s.addCell(body);
    res.status(201).json({ ...cell, state: s.state(cell.id) });
  }));

  router.get('/api/notebooks/:nb/cells/:cell', route(async (req, res) => {
    const s = await session(req);
    const cell = s.cell(param(req, 'cell'));
    res.json({ ...cell, state: s.state(cell.id) });
  }));

  // Outputs as HTML, rendered exactly as the HTML export renders them (tables, charts, markdown).
  router.get('/api/notebooks/:nb/cells/:cell/outputs.html', route(async (req, res) => {
    const cell = (await session(req)).cell(param(req, 'cell'));
    res.type('html').send(cell.outputs.map((o) => outputToHtml(o, renderMarkdown)).join('\n'));
  }));

  router.patch('/api/notebooks/:nb/cells/:cell', route(async (req, res) => {
    const body = parseInput(UpdateCellBody, req.body);
    const s = await session(req);
    const cell = await s.updateCell(param(req, 'cell'), body);
    res.json({ ...cell, state: s.state(cell.id) });
  }));

  router.delete('/api/notebooks/:nb/cells/:cell', route(async (req, res) => {
    await (await session(req)).deleteCell(param(req, 'cell'));
    res.status(204).end();
  }));

  router.put('/api/notebooks/:nb/order', route(async (req, res) => {
    const body = parseInput(ReorderBody, req.body);
    const s = await session(req);
    s.reorder(body.order);
    res.json({ order: s.notebook.cells.map((c) => c.id) });
  }));

  router.post('/api/notebooks/:nb/cells/:cell/run', route(async (req, res) => {
    const s = await session(req);
    s.cell(param(req, 'cell'));
    await runAndAnswer(req, res, s, () => s.runCell(param(req, 'cell')));
  }));

  router.post('/api/notebooks/:nb/run', route(async (req, res) => {
    const s = await session(req);
    await runAndAnswer(req, res, s, () => s.runAll());
  }));

  router.post('/api/notebooks/:nb/run-stale', route(async (req, res) => {
    const s = await session(req);
    await runAndAnswer(req, res, s, () => s.runStale());
  }));

  router.post('/api/notebooks/:nb/interrupt', route(async (req, res) => {
    const s = await session(req);
    await s.interrupt();
    res.json({ kernel_generation: s.kernel.generation, cells: s.cellsWithState().map(({ id, state }) => ({ id, state })) });
  }));

  router.post('/api/notebooks/:nb/restart', route(async (req, res) => {
    const s = await session(req);
    await s.restart();
    res.json({ kernel_generation: s.kernel.generation, cells: s.cellsWithState().map(({ id, state }) => ({ id, state })) });
  }));

  router.get('/api/notebooks/:nb/dependencies', route(async (req, res) => res.json(await (await session(req)).dependencies())));

  router.put('/api/notebooks/:nb/settings', route(async (req, res) => {
    const body = parseInput(SettingsBody, req.body);
    const s = await session(req);
    s.cellTimeoutMs = body.cell_timeout_ms;
    res.json({ cell_timeout_ms: s.cellTimeoutMs });
  }));

  return router;
}

/** JSON `{detail}` error responses for servers that mount only the notebook routes (the CLI's). */
export function notebookErrorHandler(err: unknown, _req: Request, res: Response, _next: NextFunction): void {
  const error = toHttpError(err);
  res.status(error.status).set(error.headers).json(error.toBody());
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

/**
 * Notebook session API (issue 8, part 6), as a list of routes (core/http/route.ts) that both the
 * main server (subsystem.ts) and the notebook CLI's own servers (server.ts) mount. Routes parse,
 * call the service or session, and shape the response; nothing else. Live events are on the ws
 * channel (`notebookUpgradeHandler`, `attachNotebookSocket`).
 *
 * `:nb` is the notebook path inside `notebooks/`, URL-encoded (`sub%2Fsales.nb.ts`). Run routes
 * wait for the run and return the cells; with `?wait=false` they answer 202 at once and the
 * outputs follow over ws.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { type WebSocket, WebSocketServer } from 'ws';
import { untrustedHtmlHeaders } from '../http/csp.js';
import { type AnyRoute, defineRoute } from '../http/route.js';
import { applyFix } from './fixes.js';
import { outputToHtml } from './render.js';
import {
  CreateCellBody,
  CreateNotebookBody,
  FixBody,
  NOTEBOOK_WS_PATH,
  ReorderBody,
  RunDocumentBody,
  RunQuery,
  SaveBody,
  SaveQuery,
  SettingsBody,
  UiValueBody,
  UpdateCellBody,
} from './schemas.js';
import { type NotebookService, toServiceError } from './service.js';
import type { NotebookSession } from './session.js';

const tags = ['notebooks'];
const missing = { 404: 'no such notebook (or cell)' };
const invalid = { 422: 'invalid body, naming the field' };
const runAnswers = {
  200: 'the notebook with its cells, states and outputs after the run',
  202: 'started (wait=false): cell states',
  ...missing,
};

/**
 * Notebook routes (here and in intel/routes.ts) answer engine errors as catalogue errors (a file
 * that does not parse is a 422) and send a bare string result as JSON, not as text.
 */
export function withNotebookErrors(routes: AnyRoute[]): AnyRoute[] {
  return routes.map((route) => ({
    ...route,
    async handler(input) {
      let value: unknown;
      try {
        value = await route.handler(input);
      } catch (err) {
        throw toServiceError(err);
      }
      if (typeof value === 'string') return input.reply.type('application/json; charset=utf-8').send(JSON.stringify(value));
      return value;
    },
  }));
}

const view = (s: NotebookSession, id: string) => ({
  id,
  name: s.notebook.name,
  metadata: s.notebook.metadata,
  cell_timeout_ms: s.cellTimeoutMs,
  kernel_generation: s.kernel.generation,
  /** Edited since read or saved; a disk change then waits for the user's reload or overwrite. */
  dirty: s.dirty,
  cells: s.cellsWithState(),
});

const cellStates = (s: NotebookSession) => s.cellsWithState().map(({ id, state }) => ({ id, state }));

/** Starts a run; waits for it and answers the notebook, or with `wait=false` answers 202 at once. */
async function runAndAnswer(
  reply: FastifyReply,
  wait: 'true' | 'false' | undefined,
  s: NotebookSession,
  id: string,
  run: () => Promise<void>,
) {
  const done = run();
  if (wait === 'false') {
    done.catch(() => undefined);
    reply.code(202);
    return { cells: cellStates(s) };
  }
  await done;
  return view(s, id);
}

/**
 * The session API over `service`. Handlers read the body before opening the session, so a bad
 * body is a 422 even for a notebook that does not exist.
 */
export function notebookRoutes(service: NotebookService): AnyRoute[] {
  const session = (params: { nb: string }) => service.open(params.nb);
  return withNotebookErrors([
    defineRoute({
      method: 'GET',
      url: '/api/notebooks',
      summary: 'List the notebooks in notebooks/',
      tags,
      handler: async () => ({ notebooks: await service.list() }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks',
      summary: 'Create a notebook {name, format}',
      tags,
      schema: { body: CreateNotebookBody, response: { 201: 'the opened notebook', 409: 'it exists', ...invalid } },
      handler: async ({ body, reply }) => {
        const id = await service.create(body);
        reply.code(201);
        return view(await service.open(id), id);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/run',
      summary: 'Run a posted notebook document headlessly (remote `hangar notebook run`)',
      tags,
      schema: { body: RunDocumentBody, response: { 200: 'cells with outputs', ...invalid } },
      handler: ({ body }) => service.runDocument(body),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/notebooks/:nb',
      summary: 'Open a notebook (`nb`: its path inside notebooks/, URL-encoded): cells with states',
      tags,
      schema: { response: { 200: 'the notebook', ...missing } },
      // `id` is the file's (`sales.nb.ts` for a link to `sales`), so clients can correct their link.
      handler: async ({ params }) => view(await session(params), service.canonicalId(params.nb)),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/notebooks/:nb/session',
      summary: 'Close the session (stops its kernel)',
      tags,
      schema: { response: { 204: 'closed' } },
      handler: async ({ params, reply }) => {
        await service.close(params.nb);
        return reply.code(204).send();
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/:nb/save',
      summary:
        "Write the notebook file. Changed on disk since the session read it: 409 {detail, code, diff}; body {strategy: 'merge'} merges the disk's changes per cell (409 HANGAR_NOTEBOOK_MERGE_CONFLICT with {conflicts} for cells changed on both sides until {resolutions} picks a side), 'overwrite' or ?force=true overwrites",
      tags,
      schema: {
        querystring: SaveQuery,
        body: SaveBody.optional(),
        response: {
          200: '{saved, from_disk}: from_disk lists the cells a merge took from the file',
          409: 'the file changed on disk: {detail, code, diff}, and with a merge {conflicts: [{cell, base, ours, theirs}]}',
          ...missing,
          ...invalid,
        },
      },
      handler: async (input) => {
        const s = await session(input.params);
        const { strategy, resolutions } = input.body ?? SaveBody.parse({});
        if (strategy === 'merge') return { saved: input.params.nb, ...(await s.saveMerged(resolutions)) };
        await s.save(s.filePath, { force: strategy === 'overwrite' || input.query.force === 'true' });
        return { saved: input.params.nb, from_disk: [] };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/:nb/ui/:element',
      summary: "Set an interactive element's value (`ui.slider` …) and re-run the cells that read it",
      tags,
      schema: { querystring: RunQuery, body: UiValueBody, response: { ...runAnswers, ...invalid } },
      handler: async ({ params, body, query, reply }) => {
        const s = await session(params);
        return runAndAnswer(reply, query.wait, s, params.nb, () => s.setUiValue(params.element, body.value));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/:nb/reload',
      summary: "Take the file's version on disk, dropping this session's unsaved edits; changed cells become stale",
      tags,
      schema: { response: { 200: 'the notebook as now read', ...missing } },
      handler: async ({ params }) => {
        const s = await session(params);
        await s.reloadFromDisk();
        return view(s, params.nb);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/notebooks/:nb/cells',
      summary: 'Cells with their states',
      tags,
      schema: { response: { 200: '{cells}', ...missing } },
      handler: async ({ params }) => ({ cells: (await session(params)).cellsWithState() }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/:nb/cells',
      summary: 'Add a cell',
      tags,
      schema: { body: CreateCellBody, response: { 201: 'the cell with its state', ...missing, ...invalid } },
      handler: async ({ params, body, reply }) => {
        const input = body;
        const s = await session(params);
        const cell = await s.addCell(input);
        reply.code(201);
        return { ...cell, state: s.state(cell.id) };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/notebooks/:nb/cells/:cell',
      summary: 'One cell with its state and outputs',
      tags,
      schema: { response: { 200: 'the cell', ...missing } },
      handler: async ({ params }) => {
        const s = await session(params);
        const cell = s.cell(params.cell);
        return { ...cell, state: s.state(cell.id) };
      },
    }),
    // Outputs as HTML, rendered exactly as the HTML export renders them (tables, charts, markdown).
    // They are whatever the notebook (or an .ipynb someone sent) says, so they are served sandboxed:
    // their scripts run in an opaque origin and cannot read the API (see OUTPUT_SANDBOX_POLICY).
    defineRoute({
      method: 'GET',
      url: '/api/notebooks/:nb/cells/:cell/outputs.html',
      summary: "The cell's outputs rendered as in the HTML export, served sandboxed (CSP)",
      tags,
      schema: { response: { 200: { description: 'HTML', contentType: 'text/html' }, ...missing } },
      handler: async ({ params, reply }) => {
        const cell = (await session(params)).cell(params.cell);
        // The exporter (and marked in it) loads on the first render, not with the server: ~9 ms of a start.
        const { renderMarkdown } = await import('./export.js');
        return reply.headers(untrustedHtmlHeaders).send(cell.outputs.map((o) => outputToHtml(o, renderMarkdown)).join('\n'));
      },
    }),
    defineRoute({
      method: 'PATCH',
      url: '/api/notebooks/:nb/cells/:cell',
      summary: 'Edit a cell (source, type, name)',
      tags,
      schema: { body: UpdateCellBody, response: { 200: 'the cell', ...missing, ...invalid } },
      handler: async ({ params, body }) => {
        const input = body;
        const s = await session(params);
        const cell = await s.updateCell(params.cell, input);
        return { ...cell, state: s.state(cell.id) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/notebooks/:nb/cells/:cell',
      summary: 'Delete a cell',
      tags,
      schema: { response: { 204: 'deleted', ...missing } },
      handler: async ({ params, reply }) => {
        await (await session(params)).deleteCell(params.cell);
        return reply.code(204).send();
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/notebooks/:nb/order',
      summary: 'Reorder the cells {order: [ids]}',
      tags,
      schema: { body: ReorderBody, response: { 200: '{order}', ...missing, ...invalid } },
      handler: async ({ params, body }) => {
        const { order } = body;
        const s = await session(params);
        s.reorder(order);
        return { order: s.notebook.cells.map((c) => c.id) };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/:nb/cells/:cell/run',
      summary: 'Run a cell and its dependents',
      tags,
      schema: { querystring: RunQuery, response: runAnswers },
      handler: async ({ params, query, reply }) => {
        const s = await session(params);
        s.cell(params.cell);
        return runAndAnswer(reply, query.wait, s, params.nb, () => s.runCell(params.cell));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/:nb/cells/:cell/fix',
      summary:
        "Apply a problem's one-click fix (a name defined twice: rename / merge / delete; an assignment to another cell's name: merge), then run what is stale",
      tags,
      schema: {
        querystring: RunQuery,
        body: FixBody,
        response: {
          ...runAnswers,
          422: 'invalid body, or the fix does not apply (the cell has no such problem, or the result would not run): {detail}',
        },
      },
      handler: async ({ params, body, query, reply }) => {
        const s = await session(params);
        await applyFix(s, params.cell, body.name, body.action);
        return runAndAnswer(reply, query.wait, s, params.nb, () => s.runStale());
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/:nb/run',
      summary: 'Run every cell',
      tags,
      schema: { querystring: RunQuery, response: runAnswers },
      handler: async ({ params, query, reply }) => {
        const s = await session(params);
        return runAndAnswer(reply, query.wait, s, params.nb, () => s.runAll());
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/:nb/run-stale',
      summary: 'Run the stale cells',
      tags,
      schema: { querystring: RunQuery, response: runAnswers },
      handler: async ({ params, query, reply }) => {
        const s = await session(params);
        return runAndAnswer(reply, query.wait, s, params.nb, () => s.runStale());
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/:nb/interrupt',
      summary: 'Interrupt the running cell',
      tags,
      schema: { response: { 200: 'kernel generation and cell states', ...missing } },
      handler: async ({ params }) => {
        const s = await session(params);
        await s.interrupt();
        return { kernel_generation: s.kernel.generation, cells: cellStates(s) };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/:nb/restart',
      summary: 'Restart the kernel',
      tags,
      schema: { response: { 200: 'kernel generation and cell states', ...missing } },
      handler: async ({ params }) => {
        const s = await session(params);
        await s.restart();
        return { kernel_generation: s.kernel.generation, cells: cellStates(s) };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/notebooks/:nb/dependencies',
      summary: 'Reads and writes per cell, edges, execution order, stale set, cycles',
      tags,
      schema: { response: { 200: 'the dependency graph', ...missing } },
      handler: async ({ params }) => (await session(params)).dependencies(),
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/notebooks/:nb/settings',
      summary: 'Notebook settings {cell_timeout_ms}',
      tags,
      schema: { body: SettingsBody, response: { 200: '{cell_timeout_ms}', ...missing, ...invalid } },
      handler: async ({ params, body }) => {
        const { cell_timeout_ms } = body;
        const s = await session(params);
        s.cellTimeoutMs = cell_timeout_ms;
        return { cell_timeout_ms: s.cellTimeoutMs };
      },
    }),
  ]);
}

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
          ws.send(JSON.stringify({ type: 'hello', notebook: id, cells: cellStates(s) }));
          ws.on('close', unsubscribe);
        }),
      () => socket.end('HTTP/1.1 404 Not Found\r\n\r\n'),
    );
  };
}

/**
 * @param refuse returns why an upgrade must be refused (wrong Host or Origin), or undefined.
 */
export function attachNotebookSocket(
  server: Server,
  service: NotebookService,
  refuse?: (req: IncomingMessage) => string | undefined,
): void {
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

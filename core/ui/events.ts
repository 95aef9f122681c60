import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { HangarContext, UpgradeHandler } from '../kernel/context.js';
import { LOCAL_PRINCIPAL, viewerOf } from '../kernel/ownership.js';
import type { RegistryChange } from '../kernel/registry.js';
import type { Task } from '../tasks/schemas.js';
import { type WorkspaceSnapshot, workspaceSnapshot } from './workspace.js';

/**
 * `/api/v1/events`: the UI's live channel. Each connection first receives the whole workspace,
 * then a fresh copy after every batch of registry changes, with the changes that caused it:
 *
 *   { "type": "workspace", "seq": 3, "workspace": {...}, "changes": [{ "type": "updated", ... }] }
 *
 * Whole snapshots rather than deltas, because a workspace is tens of entries and a client that
 * reconnects after missing events is then right by construction — no resume protocol needed.
 * Changes are batched over `batchMs`, since a scan or a save-all emits dozens at once.
 * The server pings every `pingMs` and drops clients that did not answer the previous ping.
 *
 * Team mode (several instances on one PostgreSQL) adds what work on any instance does to the
 * board: every change of a task, wherever it runs, is announced (ids only), and each instance
 * reads the task from the store and sends it to its clients that may see it (its principal's, or
 * everyone's without tokens), batched over `taskBatchMs`:
 *
 *   { "type": "task", "seq": 4, "task": {...} }          (the task as GET /api/v1/tasks/{id} answers)
 *
 * What is relayed, decided: task changes only. Registry changes stay per instance (each loads its
 * own copy of the workspace, and its snapshot is what it serves); invoke streams and studio runs
 * are followed over their own SSE routes from any instance. On one instance the board keeps its
 * refresh (the task service announces nothing there).
 */
export type EventMessage = { type: 'workspace'; seq: number; workspace: WorkspaceSnapshot; changes: RegistryChange[] };
export type TaskMessage = { type: 'task'; seq: number; task: Task };
/** Every message of the channel. */
export type LiveMessage = EventMessage | TaskMessage;

export interface EventChannel {
  handler: UpgradeHandler;
  close(): void;
}

export function eventChannel(ctx: HangarContext, { batchMs = 50, pingMs = 25_000, taskBatchMs = 20 } = {}): EventChannel {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4 * 1024, clientTracking: true });
  let seq = 0;
  let pending: RegistryChange[] = [];
  let timer: NodeJS.Timeout | undefined;
  const alive = new WeakSet<WebSocket>();
  const principals = new WeakMap<WebSocket, string>();

  const send = (socket: WebSocket, changes: RegistryChange[]) => {
    if (socket.readyState !== socket.OPEN) return;
    const message: EventMessage = { type: 'workspace', seq, workspace: workspaceSnapshot(ctx), changes };
    socket.send(JSON.stringify(message));
  };

  const flush = () => {
    timer = undefined;
    const changes = pending;
    pending = [];
    seq += 1;
    for (const socket of wss.clients) send(socket, changes);
  };

  const onChange = (change: RegistryChange) => {
    pending.push(change);
    timer ??= setTimeout(flush, batchMs);
  };
  ctx.registry.on('change', onChange);

  // Team mode: tasks changed on any instance (this one too), read from the store once per batch.
  const changedTasks = new Set<string>();
  let taskTimer: NodeJS.Timeout | undefined;
  // Batches are sent one after another: two reads in flight at once could send a task's older
  // state after its newer one (a client saw a completed task go back to `working`).
  let sending = Promise.resolve();
  const sendTasks = async () => {
    const ids = [...changedTasks];
    changedTasks.clear();
    const tasks = ctx.services.find('tasks');
    if (!tasks?.enabled || wss.clients.size === 0) return;
    for (const id of ids) {
      const task = await tasks.get(id).catch(() => undefined);
      if (!task) continue;
      seq += 1;
      const message = JSON.stringify({ type: 'task', seq, task } satisfies TaskMessage);
      for (const socket of wss.clients) {
        const principal = principals.get(socket);
        const sees = principal !== undefined && (viewerOf({ principal }, ctx.settings) === LOCAL_PRINCIPAL || task.principal === principal);
        if (sees && socket.readyState === socket.OPEN) socket.send(message);
      }
    }
  };
  const stopRelay = ctx.services.find('team')?.on('task-event', ({ id }) => {
    changedTasks.add(id);
    taskTimer ??= setTimeout(() => {
      taskTimer = undefined;
      sending = sending.then(sendTasks).catch((err: unknown) => ctx.log.warn('task changes not sent', { error: String(err) }));
    }, taskBatchMs);
  });

  const ping = setInterval(() => {
    for (const socket of wss.clients) {
      if (!alive.has(socket)) {
        socket.terminate();
        continue;
      }
      alive.delete(socket);
      socket.ping();
    }
  }, pingMs);
  ping.unref();

  // Upgraded sockets are no longer the http server's, so its close would wait for them forever:
  // as the server stops, every client is told "going away" (1001) and reconnects elsewhere/later.
  const goingAway = (ws: WebSocket) => ws.close(1001, 'Hangar is stopping');
  ctx.lifecycle.onStopping(() => wss.clients.forEach(goingAway));

  const handler: UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer, principal: string) => {
    if (ctx.lifecycle.stopping) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      // The stop began while this handshake finished: it is told as the others were.
      if (ctx.lifecycle.stopping) return goingAway(ws);
      alive.add(ws);
      principals.set(ws, principal);
      ws.on('pong', () => alive.add(ws));
      // The channel is server → client only; anything the client sends is ignored.
      ws.on('message', () => {});
      ws.on('error', () => ws.terminate());
      send(ws, []);
    });
  };

  return {
    handler,
    close() {
      ctx.registry.off('change', onChange);
      stopRelay?.();
      clearTimeout(taskTimer);
      clearInterval(ping);
      if (timer) clearTimeout(timer);
      for (const socket of wss.clients) socket.terminate();
      wss.close();
    },
  };
}

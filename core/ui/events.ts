import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { HangarContext, UpgradeHandler } from '../kernel/context.js';
import type { RegistryChange } from '../kernel/registry.js';
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
 */
export type EventMessage = { type: 'workspace'; seq: number; workspace: WorkspaceSnapshot; changes: RegistryChange[] };

export interface EventChannel {
  handler: UpgradeHandler;
  close(): void;
}

export function eventChannel(ctx: HangarContext, { batchMs = 50, pingMs = 25_000 } = {}): EventChannel {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4 * 1024, clientTracking: true });
  let seq = 0;
  let pending: RegistryChange[] = [];
  let timer: NodeJS.Timeout | undefined;
  const alive = new WeakSet<WebSocket>();

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
  // while the server stops, every client is told "going away" (1001) and reconnects elsewhere/later.
  const stopWatch = setInterval(() => {
    if (!ctx.lifecycle.stopping) return;
    for (const socket of wss.clients) socket.close(1001, 'Hangar is stopping');
  }, 100);
  stopWatch.unref();

  const handler: UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (ctx.lifecycle.stopping) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      alive.add(ws);
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
      clearInterval(ping);
      clearInterval(stopWatch);
      if (timer) clearTimeout(timer);
      for (const socket of wss.clients) socket.terminate();
      wss.close();
    },
  };
}

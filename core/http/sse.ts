import type { IncomingMessage } from 'node:http';
import type { FastifyReply } from 'fastify';
import { fail } from '../kernel/errors.js';
import type { ReplayableSource, SequencedEvent } from '../lib/event-log.js';

/**
 * The one SSE implementation. Every stream in Hangar (invoke streams and their replay, task and A2A
 * events, studio runs) goes through `serveSse`:
 *
 * - each frame is `id: <seq>` + `data: <json>`; the last frame is `data: [DONE]`;
 * - a reader resuming with `since` / `Last-Event-ID` gets frames after that sequence, then live ones;
 * - when the resume point was evicted it first gets `{"event":"truncated",...}` and, if the caller
 *   supplies one, a snapshot frame (the current task) — then whatever is still retained. Both
 *   carry `id: <first retained − 1>`, so a client that reconnects right after them resumes at the
 *   first retained frame instead of asking for the evicted range (and the marker) again;
 * - comment heartbeats keep proxies and idle timeouts from closing the connection;
 * - a client that disconnects is unsubscribed at once and stops nothing else;
 * - a client that stops reading is cut off once `maxBufferedBytes` pile up for it, so a slow reader
 *   never holds memory for the producer; it can resume with Last-Event-ID.
 */
export interface SseOptions<T> {
  since?: number;
  headers?: Record<string, string>;
  heartbeatMs?: number;
  maxBufferedBytes?: number;
  /** Frame sent right after the truncated marker, e.g. the current task object. */
  snapshot?: () => unknown | Promise<unknown>;
  /** Map a stored event to the JSON sent on the wire (defaults to the event's data). */
  toWire?: (event: SequencedEvent<T>) => unknown;
}

export const SSE_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
} as const;

/** The resume point of a request: `?since=N` wins over the `Last-Event-ID` header; default 0. */
export function resumePoint(req: { headers: IncomingMessage['headers'] }, query: Record<string, unknown> = {}): number {
  const raw = query.since ?? req.headers['last-event-id'];
  if (raw === undefined || raw === '') return 0;
  const value = Number(Array.isArray(raw) ? raw[0] : raw);
  if (!Number.isInteger(value) || value < 0) {
    throw fail('HANGAR_SSE_RESUME_POINT', { where: query.since !== undefined ? 'query.since' : 'header Last-Event-ID' });
  }
  return value;
}

export function formatFrame(id: number | undefined, data: unknown): string {
  const json = typeof data === 'string' ? data : JSON.stringify(data);
  // JSON never contains a raw newline, but a plain string payload could: one data line per line.
  // The check first: this runs once per frame per subscriber, so the common case skips the split.
  const body = json.includes('\n')
    ? json
        .split('\n')
        .map((line) => `data: ${line}`)
        .join('\n')
    : `data: ${json}`;
  return id === undefined ? `${body}\n\n` : `id: ${id}\n${body}\n\n`;
}

export const DONE_FRAME = 'data: [DONE]\n\n';

export interface SseConnectionOptions {
  headers?: Record<string, string>;
  heartbeatMs?: number;
  maxBufferedBytes?: number;
}

/** An open SSE response: writes that stop once it is closed, and close hooks. */
export interface SseConnection {
  readonly closed: boolean;
  write(chunk: string): void;
  close(): void;
  onClose(fn: () => void): void;
}

/**
 * Start an SSE response: headers, heartbeats, cut-off of a reader that stops reading, and one close
 * path whichever side ends it. `serveSse` and the A2A JSON-RPC stream are both built on it.
 * The reply is hijacked: from here on the node response is written directly, and an error can no
 * longer become a status code — it ends the stream instead.
 */
export function openSse(reply: FastifyReply, options: SseConnectionOptions = {}): SseConnection {
  const { heartbeatMs = 15_000, maxBufferedBytes = 8 * 1024 * 1024 } = options;
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { ...SSE_HEADERS, ...options.headers });
  res.flushHeaders();
  let closed = false;
  const hooks: Array<() => void> = [];
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    for (const hook of hooks.splice(0)) hook();
    if (!res.writableEnded) res.end();
  };
  const write = (chunk: string) => {
    if (closed) return;
    res.write(chunk);
    if (res.writableLength > maxBufferedBytes) close();
  };
  const heartbeat = setInterval(() => write(': ping\n\n'), heartbeatMs);
  heartbeat.unref();
  // Only the response's 'close' means the client went away: since Node 16 the request emits
  // 'close' as soon as its body has been read, which for a POST stream (/invoke/stream) is before
  // the handler runs — listening to it would end every POST stream at once.
  res.on('close', close);
  return {
    get closed() {
      return closed;
    },
    write,
    close,
    onClose: (fn) => (closed ? fn() : hooks.push(fn)),
  };
}

export async function serveSse<T>(reply: FastifyReply, source: ReplayableSource<T>, options: SseOptions<T> = {}): Promise<void> {
  const { since = 0 } = options;
  const toWire = options.toWire ?? ((event: SequencedEvent<T>) => event.data);
  const connection = openSse(reply, options);
  try {
    await follow(connection, source, since, toWire, options.snapshot);
  } catch {
    // Headers are gone: the reader sees the stream end without [DONE] and can resume.
    connection.close();
  }
}

async function follow<T>(
  connection: SseConnection,
  source: ReplayableSource<T>,
  since: number,
  toWire: (event: SequencedEvent<T>) => unknown,
  snapshot: SseOptions<T>['snapshot'],
): Promise<void> {
  const { write } = connection;
  const finish = connection.close;

  let lastSent = since;
  let ended = false;
  const pending: SequencedEvent<T>[] = [];
  let replaying = true;

  const send = (event: SequencedEvent<T>) => {
    if (event.seq <= lastSent) return;
    lastSent = event.seq;
    write(formatFrame(event.seq, toWire(event)));
  };

  // Subscribe before replaying so nothing appended during an async replay falls in the gap;
  // events that arrive meanwhile wait in `pending` and duplicates are dropped by sequence.
  const unsubscribe = source.subscribe(
    (event) => (replaying ? pending.push(event) : send(event)),
    () => {
      ended = true;
      if (!replaying) {
        write(DONE_FRAME);
        finish();
      }
    },
  );

  connection.onClose(unsubscribe);

  const replay = await source.replay(since);
  if (replay.truncated) {
    const first = replay.events[0]?.seq;
    const resumeAt = first === undefined ? since : first - 1;
    write(formatFrame(resumeAt, { event: 'truncated', requested_after: since, first_retained: first ?? null }));
    if (snapshot) write(formatFrame(resumeAt, await snapshot()));
    lastSent = Math.max(lastSent, resumeAt);
  }
  for (const event of replay.events) send(event);
  for (const event of pending) send(event);
  replaying = false;
  if (ended || source.ended) {
    write(DONE_FRAME);
    finish();
  }
}

import { createParser } from 'eventsource-parser';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { queryOf } from '../../core/http/request.js';
import { resumePoint, serveSse } from '../../core/http/sse.js';
import { EventLog } from '../../core/lib/event-log.js';
import { eventually } from '../support/server.js';

/** A bare Fastify server serving one EventLog through the SSE helper. */
async function serve(log: EventLog<unknown>, snapshot?: () => unknown) {
  const app = Fastify();
  app.get('/', (req, reply) => serveSse(reply, log, { since: resumePoint(req, queryOf(req)), snapshot, heartbeatMs: 50 }));
  apps.push(app);
  return app.listen({ port: 0, host: '127.0.0.1' });
}
const apps: FastifyInstance[] = [];
afterEach(() => Promise.all(apps.splice(0).map((app) => app.close())));

type Frame = { id?: string; data: string };
async function read(
  url: string,
  headers: Record<string, string> = {},
  stopAfter = Infinity,
): Promise<{ frames: Frame[]; comments: number; res: Response }> {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  const frames: Frame[] = [];
  let comments = 0;
  const parser = createParser({ onEvent: (e) => frames.push({ id: e.id, data: e.data }), onComment: () => comments++ });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (frames.length >= stopAfter) {
        controller.abort();
        break;
      }
    }
  } catch (err) {
    if ((err as Error).name !== 'AbortError') throw err;
  }
  return { frames, comments, res };
}

describe('SSE helper', () => {
  it('frames events with id = sequence and ends with [DONE]', async () => {
    const log = new EventLog<unknown>();
    log.append({ n: 1 });
    log.append({ n: 2 });
    log.end();
    const { frames, res } = await read(await serve(log));
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(frames).toEqual([
      { id: '1', data: '{"n":1}' },
      { id: '2', data: '{"n":2}' },
      { id: undefined, data: '[DONE]' },
    ]);
  });

  it('replays after since or Last-Event-ID, then goes live', async () => {
    const log = new EventLog<unknown>();
    for (let i = 1; i <= 5; i++) log.append({ n: i });
    const url = await serve(log);
    expect((await read(url + '?since=3', {}, 2)).frames.map((f) => f.id)).toEqual(['4', '5']);
    const live = read(url, { 'Last-Event-ID': '4' });
    setTimeout(() => {
      log.append({ n: 6 });
      log.end();
    }, 50);
    expect((await live).frames.map((f) => f.id ?? f.data)).toEqual(['5', '6', '[DONE]']);
  });

  it('sends a truncated marker and the snapshot when the resume point was evicted', async () => {
    const log = new EventLog<unknown>(3);
    for (let i = 1; i <= 10; i++) log.append({ n: i });
    log.end();
    const { frames } = await read(await serve(log, () => ({ id: 'task-1', status: 'completed' })), { 'Last-Event-ID': '2' });
    expect(JSON.parse(frames[0]!.data)).toEqual({ event: 'truncated', requested_after: 2, first_retained: 8 });
    expect(JSON.parse(frames[1]!.data)).toEqual({ id: 'task-1', status: 'completed' });
    expect(frames.slice(2).map((f) => f.id ?? f.data)).toEqual(['8', '9', '10', '[DONE]']);
    // Both carry the id before the first retained frame: a reconnect resumes at frame 8.
    expect([frames[0]!.id, frames[1]!.id]).toEqual(['7', '7']);
  });

  it('sends heartbeats while idle and unsubscribes a client that disconnects', async () => {
    const log = new EventLog<unknown>();
    log.append({ n: 1 });
    const url = await serve(log);
    const controller = new AbortController();
    const res = await fetch(url, { signal: controller.signal });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes(': ping')) text += new TextDecoder().decode((await reader.read()).value);
    expect((log as unknown as { listeners: Set<unknown> }).listeners.size).toBe(1);
    controller.abort();
    await eventually(() => (log as unknown as { listeners: Set<unknown> }).listeners.size === 0);
    // The producer is unaffected.
    log.append({ n: 2 });
    expect(log.lastSeq).toBe(2);
  });

  it('rejects a malformed resume point', () => {
    expect(() => resumePoint({ headers: { 'last-event-id': 'abc' } } as never)).toThrow(
      'header Last-Event-ID: expected a non-negative integer',
    );
    expect(() => resumePoint({ headers: {} } as never, { since: '-1' })).toThrow('query.since');
  });
});

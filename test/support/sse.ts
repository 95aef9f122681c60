import { createParser } from 'eventsource-parser';

export interface SseFrame {
  id: string | undefined;
  /** Parsed JSON of the data line. */
  data: any;
}

export interface SseRead {
  status: number;
  headers: Headers;
  frames: SseFrame[];
  /** True when the stream ended with `[DONE]`. */
  done: boolean;
  /** The JSON body when the server answered without a stream (an error, a 202). */
  body?: any;
  /** Milliseconds from sending the request to the first frame. */
  firstFrameMs?: number;
}

export interface SseRequest {
  method?: string;
  json?: unknown;
  headers?: HeadersInit;
  /** Stop reading (and drop the connection, as a leaving client would) once this returns true. */
  stopAfter?: (frame: SseFrame, all: SseFrame[]) => boolean;
  timeoutMs?: number;
}

/**
 * The one SSE reader of the test suites: a real parser (eventsource-parser) over fetch, reading
 * until `[DONE]`, the end of the body or `stopAfter`. POST when a JSON body is given.
 */
export async function readSse(url: string, request: SseRequest = {}): Promise<SseRead> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('SSE read timed out')), request.timeoutMs ?? 15_000);
  const headers = new Headers(request.headers);
  if (request.json !== undefined) headers.set('content-type', 'application/json');
  const started = performance.now();
  const frames: SseFrame[] = [];
  try {
    const res = await fetch(url, {
      method: request.method ?? (request.json !== undefined ? 'POST' : 'GET'),
      headers,
      body: request.json !== undefined ? JSON.stringify(request.json) : undefined,
      signal: controller.signal,
    });
    if (!(res.headers.get('content-type') ?? '').includes('text/event-stream') || !res.body) {
      const text = await res.text();
      let body: unknown = text || undefined;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // not JSON: keep the text
      }
      return { status: res.status, headers: res.headers, frames, done: false, body };
    }
    let done = false;
    let stop = false;
    let firstFrameMs: number | undefined;
    const parser = createParser({
      onEvent(event) {
        if (stop) return;
        firstFrameMs ??= performance.now() - started;
        if (event.data === '[DONE]') {
          done = stop = true;
          return;
        }
        const frame = { id: event.id, data: JSON.parse(event.data) };
        frames.push(frame);
        if (request.stopAfter?.(frame, frames)) stop = true;
      },
    });
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    try {
      while (!stop) {
        const { value, done: ended } = await reader.read();
        if (ended) break;
        parser.feed(decoder.decode(value, { stream: true }));
      }
    } finally {
      await reader.cancel().catch(() => {});
    }
    return { status: res.status, headers: res.headers, frames, done, firstFrameMs };
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

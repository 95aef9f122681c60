import { createParser } from 'eventsource-parser';

export interface SseFrame {
  id: string | undefined;
  data: any;
}

/**
 * Read an SSE response (POST or GET) with a real parser until `[DONE]`, the end of the body, or
 * `stopAfter` returns true (the connection is then dropped, as a leaving client would).
 */
export async function fetchSse(
  url: string,
  init: RequestInit & { json?: unknown; stopAfter?: (frame: SseFrame, all: SseFrame[]) => boolean } = {},
): Promise<{ status: number; headers: Headers; frames: SseFrame[]; done: boolean; body?: any; firstFrameMs?: number }> {
  const { json, stopAfter, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (json !== undefined) headers.set('content-type', 'application/json');
  const controller = new AbortController();
  const started = performance.now();
  const res = await fetch(url, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body, signal: controller.signal });
  const frames: SseFrame[] = [];
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const text = await res.text();
    return { status: res.status, headers: res.headers, frames, done: false, body: text ? JSON.parse(text) : undefined };
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
      if (stopAfter?.(frame, frames)) stop = true;
    },
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  try {
    while (!stop) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    controller.abort();
    await reader.cancel().catch(() => {});
  }
  return { status: res.status, headers: res.headers, frames, done, firstFrameMs };
}

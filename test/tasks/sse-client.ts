import { createParser } from 'eventsource-parser';

export interface Frame {
  id: string | undefined;
  /** Parsed JSON, or the literal string for `[DONE]`. */
  data: any;
}

export interface SseRead {
  status: number;
  headers: Headers;
  frames: Frame[];
  /** True when the stream ended with `[DONE]`. */
  done: boolean;
}

/**
 * Read an SSE response with a real parser. Stops at `[DONE]`, at the end of the body, or once
 * `stopAfter` returns true for a frame (the connection is then dropped, as a client would).
 */
export async function readSse(
  url: string,
  options: { headers?: Record<string, string>; stopAfter?: (frame: Frame, all: Frame[]) => boolean; timeoutMs?: number } = {},
): Promise<SseRead> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('SSE read timed out')), options.timeoutMs ?? 10_000);
  const res = await fetch(url, { headers: options.headers, signal: controller.signal });
  const frames: Frame[] = [];
  let done = false;
  let stop = false;
  if (res.status !== 200 || !res.body) {
    clearTimeout(timer);
    return { status: res.status, headers: res.headers, frames, done };
  }
  const parser = createParser({
    onEvent(event) {
      if (stop) return;
      if (event.data === '[DONE]') {
        done = true;
        stop = true;
        return;
      }
      const frame = { id: event.id, data: JSON.parse(event.data) };
      frames.push(frame);
      if (options.stopAfter?.(frame, frames)) stop = true;
    },
  });
  const decoder = new TextDecoder();
  const reader = res.body.getReader();
  try {
    while (!stop) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    clearTimeout(timer);
    controller.abort();
    await reader.cancel().catch(() => {});
  }
  return { status: res.status, headers: res.headers, frames, done };
}

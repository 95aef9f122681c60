import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createParser } from 'eventsource-parser';
import { agentSource, makeWorkspace } from '../support/server.js';

const shipped = fileURLToPath(new URL('../../agents', import.meta.url));

/**
 * A workspace with the shipped studio demo, the word-stats agent it calls as a subagent and the
 * echo function agent, as a fresh install has them — plus `slow`, a test agent whose one node
 * waits until it is cancelled (for busy threads and cancellation).
 */
export async function studioWorkspace(extra: Record<string, string> = {}): Promise<string> {
  const root = await makeWorkspace({
    ...extra,
    'agents/slow.ts': agentSource(`{
      graph: {
        nodes: {
          wait: async (state, ctx) => {
            await new Promise((resolve) => {
              const timer = setTimeout(resolve, 10000);
              ctx.signal.addEventListener('abort', () => { clearTimeout(timer); resolve(undefined); });
            });
            return { response: 'waited' };
          },
          after: () => ({ response: 'after' }),
        },
        edges: [{ from: 'wait', to: 'after' }],
        entry: 'wait',
      },
    }`),
  });
  await mkdir(path.join(root, 'agents'), { recursive: true });
  for (const file of ['studio-demo.ts', 'word-stats.ts', 'echo.ts']) {
    await copyFile(path.join(shipped, file), path.join(root, 'agents', file));
  }
  return root;
}

export interface Frame {
  id: string | undefined;
  data: any;
}

export interface SseResult {
  status: number;
  headers: Headers;
  frames: Frame[];
  /** The stream ended with `data: [DONE]`. */
  done: boolean;
  /** The JSON body of a non-SSE answer (an error before the stream started). */
  body?: any;
}

/**
 * POST or GET an SSE route and read it with a real parser until [DONE], the end of the body or
 * `stopAfter` (the connection is then dropped, as a leaving client would).
 */
export async function sse(
  url: string,
  init: { method?: string; json?: unknown; headers?: Record<string, string>; stopAfter?: (frame: Frame) => boolean } = {},
): Promise<SseResult> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('SSE read timed out')), 15_000);
  const headers = new Headers(init.headers);
  if (init.json !== undefined) headers.set('content-type', 'application/json');
  const res = await fetch(url, {
    method: init.method ?? (init.json !== undefined ? 'POST' : 'GET'),
    headers,
    body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    signal: controller.signal,
  });
  const frames: Frame[] = [];
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const text = await res.text();
    clearTimeout(timer);
    return { status: res.status, headers: res.headers, frames, done: false, body: text ? JSON.parse(text) : undefined };
  }
  let done = false;
  let stop = false;
  const parser = createParser({
    onEvent(event) {
      if (stop) return;
      if (event.data === '[DONE]') {
        done = stop = true;
        return;
      }
      const frame = { id: event.id, data: JSON.parse(event.data) };
      frames.push(frame);
      if (init.stopAfter?.(frame)) stop = true;
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
    clearTimeout(timer);
    controller.abort();
    await reader.cancel().catch(() => {});
  }
  return { status: res.status, headers: res.headers, frames, done };
}

/** The event types of a stream, in order. */
export const typesOf = (frames: Frame[]) => frames.map((f) => f.data.type as string);

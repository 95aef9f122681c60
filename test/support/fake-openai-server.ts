/**
 * A real loopback HTTP server speaking the OpenAI chat-completions protocol, for tests of model
 * providers and agents that call a model. Replies are scripted (a queue), or else produced by a
 * default responder (echoes the last user message). Streaming requests get SSE chunks in the
 * protocol's framing (`data: {chunk}` … `data: [DONE]`); errors are answered with the protocol's
 * `{error: {message, type}}` body so the client library's retry logic sees what it would in
 * production. A reply may carry tool calls (whole, or streamed as the protocol's deltas: the call's
 * id and name first, then its arguments in pieces) and the token usage to report (in the body, or
 * in a last chunk when the client asked for `stream_options.include_usage`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedReply {
  /** The full answer (split into word tokens when streamed, unless `chunks` is given). */
  content?: string;
  chunks?: string[];
  /** Answer with this HTTP status and an error body instead. */
  status?: number;
  error?: string;
  /** Wait before answering (timeouts, cancellation). */
  delayMs?: number;
  /** Wait between streamed chunks. */
  chunkDelayMs?: number;
  /** Tool calls to answer with; `arguments` as an object is sent as its JSON text. */
  tool_calls?: Array<{ id?: string; name: string; arguments: string | Record<string, unknown> }>;
  /** Token usage to report (default 1 and 1). */
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** Overrides the finish_reason (default `tool_calls` when there are tool calls, else `stop`). */
  finish_reason?: string;
}

export interface RecordedRequest {
  path: string;
  authorization: string | undefined;
  body: {
    model: string;
    messages: Array<{
      role: string;
      content: string | null;
      tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
      tool_call_id?: string;
    }>;
    stream?: boolean;
    temperature?: number;
    max_tokens?: number;
    [key: string]: unknown;
  };
}

export interface FakeOpenAI {
  /** Base URL including `/v1`, as a provider's `baseUrl`. */
  baseUrl: string;
  requests: RecordedRequest[];
  enqueue(...replies: ScriptedReply[]): void;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startFakeOpenAI(
  responder: (request: RecordedRequest) => ScriptedReply = (request) => {
    const lastUser = [...request.body.messages].reverse().find((m) => m.role === 'user');
    return { content: `Echo: ${lastUser?.content ?? ''}` };
  },
): Promise<FakeOpenAI> {
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<import('node:net').Socket>();

  const server = http.createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res
        .writeHead(404, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ error: { message: 'not found', type: 'invalid_request_error' } }));
      return;
    }
    const recorded: RecordedRequest = { path: req.url, authorization: req.headers.authorization, body: JSON.parse(raw) };
    requests.push(recorded);
    const reply = queue.shift() ?? responder(recorded);
    if (reply.delayMs) await sleep(reply.delayMs);
    if (res.destroyed) return;
    if (reply.status && reply.status >= 400) {
      res.writeHead(reply.status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: { message: reply.error ?? `scripted ${reply.status}`, type: 'server_error' } }));
      return;
    }
    const content = reply.content ?? (reply.chunks ?? []).join('');
    const id = `chatcmpl-${requests.length}`;
    const created = Math.floor(Date.now() / 1000);
    const model = recorded.body.model;
    const toolCalls = (reply.tool_calls ?? []).map((c, i) => ({
      id: c.id ?? `call_${requests.length}_${i}`,
      type: 'function' as const,
      function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
    }));
    const finishReason = reply.finish_reason ?? (toolCalls.length ? 'tool_calls' : 'stop');
    const counts = reply.usage ?? { prompt_tokens: 1, completion_tokens: 1 };
    const usage = { ...counts, total_tokens: counts.prompt_tokens + counts.completion_tokens };
    if (!recorded.body.stream) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model,
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: toolCalls.length && !content ? null : content,
                ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
              },
              finish_reason: finishReason,
              logprobs: null,
            },
          ],
          usage,
        }),
      );
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    const chunks = reply.chunks ?? (content ? content.split(/(?<= )/) : []);
    const frame = (delta: Record<string, unknown>, finish: string | null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.write(frame({ role: 'assistant', content: '' }, null));
    for (const chunk of chunks) {
      if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
      if (res.destroyed) return;
      res.write(frame({ content: chunk }, null));
    }
    // As OpenAI streams them: the call's id and name first, then its arguments in pieces.
    for (const [index, call] of toolCalls.entries()) {
      res.write(
        frame({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }, null),
      );
      const args = call.function.arguments;
      const third = Math.max(1, Math.ceil(args.length / 3));
      for (let at = 0; at < args.length; at += third) {
        if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
        if (res.destroyed) return;
        res.write(frame({ tool_calls: [{ index, function: { arguments: args.slice(at, at + third) } }] }, null));
      }
    }
    res.write(frame({}, finishReason));
    const streamOptions = recorded.body.stream_options as { include_usage?: boolean } | undefined;
    if (streamOptions?.include_usage) {
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`);
    }
    res.end('data: [DONE]\n\n');
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...replies) => queue.push(...replies),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

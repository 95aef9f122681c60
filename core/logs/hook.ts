/**
 * Records calls to resources whose routes belong to other subsystems — agents, custom endpoints and
 * pipelines — from the outside: a preHandler hook reads what the matched route calls (its
 * `config.resource`, core/http/route.ts) and writes one record when the response is finished. As a
 * preHandler it runs once the body is parsed and after the control gate (a preValidation hook) let
 * the call through. Plugins and ingestors record themselves (their async runs are logged with the
 * task's real duration, not the 202).
 *
 * What is kept of a response: the JSON body (up to the size limit), or the first bytes of a stream.
 */
import type { ServerResponse } from 'node:http';
import type { preHandlerHookHandler } from 'fastify';
import { resourceCallOf } from '../http/route.js';
import type { InvocationRecorder, TokenTotals } from './types.js';

const OBSERVED = new Set(['agent', 'endpoint', 'pipeline']);

const TAIL_CHARS = 16_384;

/** The token totals of an agent's answer: a JSON body's `metadata.usage`, or a stream's last `complete` frame's. */
function usageOf(body: unknown, streamText: string): TokenTotals | null {
  const from = (value: unknown): TokenTotals | null => {
    const usage = (value as { metadata?: { usage?: Partial<TokenTotals> } } | null)?.metadata?.usage;
    if (!usage || typeof usage.prompt_tokens !== 'number' || typeof usage.completion_tokens !== 'number') return null;
    return {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens ?? usage.prompt_tokens + usage.completion_tokens,
      ...(usage.currency !== undefined ? { cost: typeof usage.cost === 'number' ? usage.cost : null, currency: usage.currency } : {}),
    };
  };
  if (body && typeof body === 'object') return from(body);
  const at = streamText.lastIndexOf('data: {"event":"complete"');
  if (at < 0) return null;
  const end = streamText.indexOf('\n', at);
  const line = streamText.slice(at + 'data: '.length, end < 0 ? undefined : end);
  try {
    return from(JSON.parse(line));
  } catch {
    return null;
  }
}

export function recordInvocations(recorder: InvocationRecorder, captureBytes: number): preHandlerHookHandler {
  return function invocationLog(req, reply, done) {
    if (!recorder.enabled) return done();
    const call = resourceCallOf(req);
    if (!call?.invocation || !OBSERVED.has(call.resource)) return done();
    // The node response: Fastify writes a JSON reply with one end(), a stream with write()s.
    const res = reply.raw;
    const started = Date.now();
    const chunks: Buffer[] = [];
    let captured = 0;
    // A stream's last frames, past the captured head: an invoke stream's `complete` frame carries
    // the run's token usage.
    let tail = '';
    const keep = (chunk: unknown, encoding?: unknown) => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
      const buffer = Buffer.isBuffer(chunk)
        ? chunk
        : Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
      if (captured >= captureBytes) {
        tail = (tail + buffer.toString('utf8')).slice(-TAIL_CHARS);
        return;
      }
      chunks.push(buffer.subarray(0, captureBytes - captured));
      captured += Math.min(buffer.length, captureBytes - captured);
    };
    const write = res.write.bind(res);
    const end = res.end.bind(res);
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      keep(chunk, rest[0]);
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as ServerResponse['write'];
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      keep(chunk, rest[0]);
      return (end as (...a: unknown[]) => ServerResponse)(chunk, ...rest);
    }) as ServerResponse['end'];

    let recorded = false;
    const finish = () => {
      if (recorded) return;
      recorded = true;
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      // Fastify passes its headers to writeHead, where the node response does not keep them.
      if (String(reply.getHeader('content-type') ?? res.getHeader('content-type') ?? '').includes('json')) {
        try {
          body = JSON.parse(text);
        } catch {
          // Cut at the capture limit: keep the text.
        }
      }
      const status = res.writableFinished ? res.statusCode : 499;
      const ok = status < 400;
      const detail = (body as { detail?: unknown } | undefined)?.detail;
      recorder.record({
        resource: call.resource,
        name: call.name,
        operation: call.operation,
        principal: req.principal ?? 'anonymous',
        started,
        ok,
        http_status: status,
        input: req.body,
        output: ok ? body : undefined,
        usage: usageOf(body, tail || text),
        error: ok
          ? null
          : status === 499
            ? 'client closed the connection before the response was complete'
            : typeof detail === 'string'
              ? detail
              : detail !== undefined
                ? JSON.stringify(detail)
                : `HTTP ${status}`,
      });
    };
    res.on('finish', finish);
    res.on('close', finish);
    done();
  };
}

/**
 * Records calls to resources whose routes belong to other subsystems — agents, custom endpoints and
 * pipelines — from the outside: the logs router sits in front of theirs, classifies the request
 * (`resourceOf`), and writes one record when the response is finished. Plugins and ingestors record
 * themselves (their async runs are logged with the task's real duration, not the 202).
 *
 * What is kept of a response: the JSON body (up to the size limit), or the first bytes of a stream.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { InvocationRecorder } from './recorder.js';
import { resourceOf } from './resource-of.js';

const OBSERVED = new Set(['agent', 'endpoint', 'pipeline']);

export function recordInvocations(recorder: InvocationRecorder, captureBytes: number): RequestHandler {
  return function invocationLog(req: Request, res: Response, next: NextFunction) {
    if (!recorder.enabled) return next();
    const call = resourceOf(req.method, req.path);
    if (!call || !call.invocation || !OBSERVED.has(call.resource)) return next();
    const started = Date.now();
    const chunks: Buffer[] = [];
    let captured = 0;
    const keep = (chunk: unknown, encoding?: unknown) => {
      if (captured >= captureBytes || chunk === undefined || chunk === null || typeof chunk === 'function') return;
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
      chunks.push(buffer.subarray(0, captureBytes - captured));
      captured += Math.min(buffer.length, captureBytes - captured);
    };
    const write = res.write.bind(res);
    const end = res.end.bind(res);
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      keep(chunk, rest[0]);
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as Response['write'];
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      keep(chunk, rest[0]);
      return (end as (...a: unknown[]) => Response)(chunk, ...rest);
    }) as Response['end'];

    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      if ((res.getHeader('content-type') ?? '').toString().includes('json')) {
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
        error: ok ? null : status === 499 ? 'client closed the connection before the response was complete' : typeof detail === 'string' ? detail : detail !== undefined ? JSON.stringify(detail) : `HTTP ${status}`,
      });
    };
    res.on('finish', finish);
    res.on('close', finish);
    next();
  };
}

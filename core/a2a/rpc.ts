/**
 * JSON-RPC 2.0 as the A2A binding speaks it: the error codes (A2A v0.3 §8), the request envelope,
 * parameters checked against a schema, how anything thrown becomes a JSON-RPC error, and how an
 * answer goes out (always HTTP 200, as the protocol wants).
 */
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { formatIssues } from '../http/validate.js';
import { errorMessage, HangarError } from '../kernel/errors.js';

/** JSON-RPC and A2A error codes (A2A v0.3 §8). */
export const RpcCode = {
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  pushNotSupported: -32003,
  unsupported: -32004,
} as const;

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

export type RpcId = string | number | null;

export interface RpcResponse {
  jsonrpc: '2.0';
  id: RpcId;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/**
 * Why a body is not a JSON-RPC request, naming the problem rather than zod's view of it: no body,
 * a batch (the A2A binding takes none), a non-object, or the field that is wrong.
 */
export function invalidRequestMessage(body: unknown, issues: z.core.$ZodIssue[]): string {
  if (body === undefined || body === null || body === '') return 'the request has no body: expected a JSON-RPC 2.0 request object';
  if (Array.isArray(body)) return 'batch requests are not supported: send one JSON-RPC 2.0 request object';
  if (typeof body !== 'object') return `the request is a JSON ${typeof body}, not a JSON-RPC 2.0 request object`;
  return `not a JSON-RPC 2.0 request: ${formatIssues(issues, 'request')}`;
}

export const Envelope = z.object({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number(), z.null()]).optional(),
  method: z.string().min(1),
  params: z.unknown().optional(),
});

/** The call's parameters checked against `schema`; InvalidParams naming the field otherwise. */
export function params<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success) throw new RpcError(RpcCode.invalidParams, formatIssues(parsed.error.issues, 'params'));
  return parsed.data;
}

export function sendJson(reply: FastifyReply, body: unknown): void {
  reply.code(200).type('application/json; charset=utf-8').send(JSON.stringify(body));
}

/** Everything thrown ends up as a JSON-RPC error: ours keep their code, HTTP errors map by status. */
export function toRpcError(err: unknown): { code: number; message: string; data?: unknown } {
  if (err instanceof RpcError) return { code: err.code, message: err.message, ...(err.data === undefined ? {} : { data: err.data }) };
  if (err instanceof HangarError) {
    const message = typeof err.detail === 'string' ? err.detail : JSON.stringify(err.detail);
    if (err.status === 422) return { code: RpcCode.invalidParams, message };
    if (err.status === 404) return { code: RpcCode.taskNotFound, message };
    if (err.status === 501) return { code: RpcCode.unsupported, message };
    return { code: RpcCode.internal, message, data: { status: err.status } };
  }
  return { code: RpcCode.internal, message: errorMessage(err) };
}

/**
 * Which resource a request calls, from its method and path alone — before any router has matched
 * it. Both the invocation log (for resources owned by other subsystems) and the control plane
 * (drain, disable) use it, so "what counts as a call to agent X" is decided in one place.
 *
 * Accepted edge case: an agent whose name is one of the fixed first segments below (`plugins`,
 * `logs`, …) cannot be told apart from those routes; such names are already shadowed by them.
 */
import type { InvokedResource } from './recorder.js';

export interface ResourceCall {
  resource: Exclude<InvokedResource, 'control'>;
  name: string;
  /** 'invoke', 'chat', 'predict', 'batch', 'run', 'GET /path' (endpoints), 'health', … */
  operation: string;
  /** True for calls that do work (invoke, predict, run); false for health, cards and listings. */
  invocation: boolean;
}

/** First path segments under /api/v1 that belong to fixed routes, never to an agent. */
const FIXED = new Set([
  'agents', 'status', 'storage', 'tasks', 'plugins', 'ingestors', 'ingestion', 'logs', 'control', 'endpoints', 'pipelines', 'events',
]);

const AGENT_OPERATIONS: Record<string, string> = {
  invoke: 'invoke',
  'invoke/stream': 'stream',
  'invoke/async': 'invoke.async',
  chat: 'chat',
  'optimize/invoke': 'optimize',
  'a2a/tasks': 'a2a',
};

const decode = (segment: string): string => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};

export function resourceOf(method: string, pathname: string): ResourceCall | undefined {
  if (!pathname.startsWith('/api/v1/')) return undefined;
  const parts = pathname.slice('/api/v1/'.length).split('/').filter(Boolean);
  const [head, second] = parts;
  if (!head) return undefined;
  const post = method === 'POST';

  if (head === 'endpoints') {
    if (!second) return undefined;
    const rest = '/' + parts.slice(2).join('/');
    return { resource: 'endpoint', name: decode(second), operation: `${method} ${rest}`, invocation: true };
  }
  if (head === 'plugins' && second && second !== 'reload') {
    const op = parts.slice(2).join('/');
    const invocation = post && (op === 'predict' || op === 'predict/batch' || op === 'predict/async');
    return { resource: 'plugin', name: decode(second), operation: invocation ? (op === 'predict' ? 'predict' : op.replace('predict/', '')) : op || 'info', invocation };
  }
  if (head === 'ingestion' && second) {
    const op = parts.slice(2).join('/');
    const invocation = post && (op === 'run' || op === 'run/async' || op === 'run/batch');
    return { resource: 'ingestor', name: decode(second), operation: invocation ? op.replace('/', '.') : op || 'info', invocation };
  }
  if (head === 'pipelines' && second) {
    const op = parts.slice(2).join('/');
    const invocation = post && /^run(\/async|\/batch)?$/.test(op);
    return { resource: 'pipeline', name: decode(second), operation: invocation ? op.replace('/', '.') : op || 'info', invocation };
  }
  if (FIXED.has(head) || !second) return undefined;
  const op = parts.slice(1).join('/');
  // Approving a suspended run resumes the agent's work, so it counts as a call too.
  const operation = AGENT_OPERATIONS[op] ?? /^threads\/[^/]+\/(approve|reject)$/.exec(op)?.[1];
  if (post && operation) return { resource: 'agent', name: decode(head), operation, invocation: true };
  if (op === 'health' || op === 'card') return { resource: 'agent', name: decode(head), operation: op, invocation: false };
  return undefined;
}

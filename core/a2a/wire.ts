/**
 * A board task as the A2A protocol (v0.3) shows it: its context id, its status with the message a
 * client reads (the answer, the error, or the approval it waits for), the answer as artifacts, and
 * the request as history.
 */
import type { InvokeResponse } from '../agents/schemas.js';
import type { Task } from '../tasks/schemas.js';
import { awaitedApproval } from './service.js';

export type WirePart = { kind: 'text'; text: string } | { kind: 'data'; data: unknown };
export interface WireMessage {
  kind: 'message';
  messageId: string;
  role: 'user' | 'agent';
  parts: WirePart[];
  contextId: string;
  taskId?: string;
}
export interface WireStatus {
  state: string;
  timestamp: string;
  message?: WireMessage;
}
export interface WireTask {
  kind: 'task';
  id: string;
  contextId: string;
  status: WireStatus;
  artifacts: Array<{ artifactId: string; name: string; parts: WirePart[] }>;
  history: WireMessage[];
  metadata: Record<string, unknown>;
}

export function contextOf(task: Task): string {
  const context = task.metadata.context_id;
  return typeof context === 'string' ? context : task.id;
}

function agentMessage(task: Task, text: string): WireMessage {
  return {
    kind: 'message',
    messageId: `${task.id}:${task.status}`,
    role: 'agent',
    parts: [{ kind: 'text', text }],
    contextId: contextOf(task),
    taskId: task.id,
  };
}

function wireStatus(task: Task): WireStatus {
  const status: WireStatus = { state: task.status, timestamp: task.updated_at };
  const awaited = awaitedApproval(task);
  if (awaited) {
    const { status: _suspended, ...approval } = awaited;
    status.message = agentMessage(task, awaited.message);
    status.message.parts.push({ kind: 'data', data: { approval } });
  } else if (task.status === 'completed') {
    status.message = agentMessage(task, (task.result as InvokeResponse).response);
  } else if (task.status === 'failed' || task.status === 'canceled') {
    status.message = agentMessage(task, task.error ?? task.status);
  }
  return status;
}

function artifacts(task: Task): WireTask['artifacts'] {
  if (task.status !== 'completed') return [];
  const result = task.result as InvokeResponse;
  return [
    {
      artifactId: `${task.id}:response`,
      name: 'response',
      parts: [
        { kind: 'text', text: result.response },
        { kind: 'data', data: result },
      ],
    },
  ];
}

export function toWireTask(task: Task, historyLength?: number): WireTask {
  const query = (task.input as { query?: string }).query ?? '';
  const messageId = typeof task.metadata.message_id === 'string' ? task.metadata.message_id : `${task.id}:input`;
  const history: WireMessage[] = [
    { kind: 'message', messageId, role: 'user', parts: [{ kind: 'text', text: query }], contextId: contextOf(task), taskId: task.id },
  ];
  return {
    kind: 'task',
    id: task.id,
    contextId: contextOf(task),
    status: wireStatus(task),
    artifacts: artifacts(task),
    history: historyLength === undefined ? history : history.slice(history.length - historyLength),
    metadata: { agent: task.target, progress: task.progress },
  };
}

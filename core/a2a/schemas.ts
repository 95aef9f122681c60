/**
 * A2A task records (spec: A2ATaskRequest, submit and status responses) and the one rule about
 * messages: text is read from `message.parts` or from a simplified `content` / `text` string.
 */
import { z } from 'zod';

const Part = z
  .object({
    /** The spec's protocol form says `type`; the public A2A protocol says `kind`. Both are read. */
    type: z.string().optional(),
    kind: z.string().optional(),
    text: z.unknown().optional(),
  })
  .loose();

export const A2AMessage = z
  .object({
    role: z.string().optional(),
    parts: z.array(Part).optional(),
    content: z.unknown().optional(),
    text: z.unknown().optional(),
  })
  .loose();
export type A2AMessage = z.output<typeof A2AMessage>;

export const A2ATaskRequest = z.object({
  message: A2AMessage,
  metadata: z.record(z.string(), z.unknown()).default({}),
});
export type A2ATaskRequest = z.output<typeof A2ATaskRequest>;

/** `?wait=true` makes submit answer once the task has finished, with its result filled in. */
export const SubmitQuery = z.object({
  wait: z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .transform((v) => v === 'true' || v === '1'),
});

/** An A2A task of an agent: `/api/v1/{agent}/a2a/tasks/{task_id}`. */
export const AgentTaskParams = z.object({ agent: z.string(), task_id: z.string() });

/**
 * The text of a message, or `undefined` when it has none worth running an agent on. Text parts
 * are joined with newlines; parts of other kinds (files, data) are ignored; whitespace-only text
 * counts as none, since an agent must never run on an empty query.
 */
export function messageText(message: A2AMessage): string | undefined {
  let text = '';
  if (typeof message.content === 'string') text = message.content;
  else if (typeof message.text === 'string') text = message.text;
  else if (message.parts) {
    text = message.parts
      .filter((part) => (part.type ?? part.kind ?? 'text') === 'text' && typeof part.text === 'string')
      .map((part) => part.text as string)
      .join('\n');
  }
  return text.trim() ? text : undefined;
}

/** The approval an `input-required` agent task waits for. */
export interface A2AAwaitedApproval {
  id: string;
  thread_id: string;
  node_name: string;
  message: string;
  links: { approve: string; reject: string; pending: string };
}

export interface A2ASubmitResponse {
  task_id: string;
  status: string;
  /** The agent's answer once completed, the approval prompt while input-required; '' while queued or running. */
  result: string;
  message: string;
  approval?: A2AAwaitedApproval;
}

export interface A2AStatusResponse {
  task_id: string;
  status: string;
  message: string;
  result?: string;
  approval?: A2AAwaitedApproval;
  progress?: { percent: number; message: string };
  error?: string | null;
  created_at?: string;
  updated_at?: string;
}

/**
 * Request and record schemas of the Threads routes (spec: Thread records).
 */
import { z } from 'zod';
import { PrintableString } from '../http/validate.js';

const JsonObject = z.record(z.string(), z.unknown());

export const CreateThreadRequest = z.object({
  thread_id: PrintableString.min(1).max(200).nullish(),
  user_id: PrintableString.min(1).default('default-user'),
  title: z.string().nullish().default(null),
  metadata: JsonObject.default({}),
});
export type CreateThreadRequest = z.output<typeof CreateThreadRequest>;

export const UpdateThreadRequest = z.object({
  title: z.string().nullish(),
  metadata: JsonObject.nullish(),
});
export type UpdateThreadRequest = z.output<typeof UpdateThreadRequest>;

export const ListThreadsQuery = z.object({
  user_id: PrintableString.min(1).optional(),
  /** Absent: every matching thread (as before paging existed). */
  limit: z.coerce.number().int().min(1).max(10_000).optional(),
  offset: z.coerce.number().int().min(0).default(0),
});

export const MessagesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(10_000).default(100),
  offset: z.coerce.number().int().min(0).default(0),
});

export const ForkThreadRequest = z.object({
  message_index: z.number().int(),
  new_thread_id: PrintableString.min(1).max(200).nullish(),
  title: z.string().nullish(),
});
export type ForkThreadRequest = z.output<typeof ForkThreadRequest>;

export const Thread = z.object({
  id: z.string(),
  user_id: z.string(),
  agent_name: z.string(),
  title: z.string().nullable(),
  metadata: JsonObject,
  created_at: z.string(),
  updated_at: z.string(),
  parent_thread_id: z.string().optional(),
  fork_message_index: z.number().int().optional(),
  /** The principal it belongs to (`local` on a server without tokens); only that principal sees it. */
  principal: z.string().optional(),
});
export type Thread = z.output<typeof Thread>;

export const Message = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  timestamp: z.string(),
  metadata: JsonObject.optional(),
});
export type Message = z.output<typeof Message>;

export const ThreadList = z.object({
  threads: z.array(Thread),
  /** How many threads this answer holds. */
  count: z.number().int(),
  /** With `limit`: how many threads match in all (absent without one, where `count` is that number). */
  total: z.number().int().optional(),
});
export const MessagesResponse = z.object({
  thread_id: z.string(),
  messages: z.array(Message),
  count: z.number().int(),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
});
export const SummaryResponse = z.object({ thread_id: z.string(), summary: z.string(), method: z.enum(['model', 'extractive']) });
const LineageEntry = z.object({
  id: z.string(),
  title: z.string().nullable(),
  parent_thread_id: z.string().nullable(),
  /** A deleted ancestor: only its id is left, and the chain of ancestors ends with it. */
  deleted: z.boolean(),
});
export const LineageResponse = z.object({ thread_id: z.string(), ancestors: z.array(LineageEntry), descendants: z.array(LineageEntry) });
export const DeleteResponse = z.object({ status: z.literal('deleted'), thread_id: z.string() });
export const ClearResponse = z.object({ status: z.literal('cleared'), thread_id: z.string() });

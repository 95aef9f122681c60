/**
 * Request and response schemas of the per-agent execution routes (spec: AgentInvokeRequest,
 * AgentInvokeResponse, AgentChatRequest, HITL records).
 *
 * A schema only a route reads (a response it documents, the body of a rarely called route) is
 * `z.lazy`: built the first time /openapi.json, a test or that route reads it, not at start. Those
 * read on every run (the invoke and chat bodies, the path parameters) are built as the module loads.
 */
import { z } from 'zod';
import { PrintableString } from '../http/validate.js';

const JsonObject = z.record(z.string(), z.unknown());
/** A run deadline in milliseconds: setTimeout's range ends at 2^31 − 1, so 24 h is the most. */
export const TimeoutMs = z.number().int().positive().max(86_400_000);

export const InvokeRequest = z.object({
  query: z.string(),
  user_id: PrintableString.min(1).default('default-user'),
  context: JsonObject.default({}),
  thread_id: PrintableString.min(1).max(200).nullish().default(null),
  /** Absent → the agent's active version (which is 'v1' unless the agent says otherwise). */
  prompt_version: z.string().min(1).optional(),
  temperature: z.number().min(0).max(2).nullish().default(null),
  max_tokens: z.number().int().positive().nullish().default(null),
  metadata: JsonObject.default({}),
  /** This run's deadline; absent → the agent's `timeout_ms`, else `agents.timeoutMs` (see `AgentService`). */
  timeout_ms: TimeoutMs.optional(),
});
export type InvokeRequest = z.output<typeof InvokeRequest>;

const Citation = z.record(z.string(), z.unknown());

export const InvokeResponse = z.lazy(() =>
  z.object({
    response: z.string(),
    output: z.unknown().nullable(),
    agent_type: z.string(),
    thread_id: z.string().nullable(),
    suggestions: z.array(z.string()),
    citations: z.array(Citation),
    steps_taken: z.array(z.string()),
    context: z.unknown().nullable(),
    metadata: JsonObject,
    duration_ms: z.number(),
  }),
);
export type InvokeResponse = z.output<typeof InvokeResponse>;

const HistoryMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  timestamp: z.string().optional(),
  name: z.string().optional(),
});

export const ChatRequest = z.object({
  content: z.string(),
  user_id: PrintableString.min(1).default('default-user'),
  thread_id: PrintableString.min(1).max(200).nullish().default(null),
  context: JsonObject.default({}),
  metadata: JsonObject.default({}),
  messages: z.array(HistoryMessage).nullish().default(null),
  include_history: z.boolean().default(true),
  max_history: z.number().int().min(0).nullish().default(null),
  persist: z.boolean().default(true),
  prompt_version: z.string().min(1).optional(),
  temperature: z.number().min(0).max(2).nullish().default(null),
  max_tokens: z.number().int().positive().nullish().default(null),
  timeout_ms: TimeoutMs.optional(),
});
export type ChatRequest = z.output<typeof ChatRequest>;

export const ChatResponse = z.lazy(() =>
  InvokeResponse.unwrap().omit({ output: true, thread_id: true }).extend({
    thread_id: z.string(),
    history_loaded: z.number().int(),
  }),
);
export type ChatResponse = z.output<typeof ChatResponse>;

/** Where to decide an approval: its thread's approve, reject and pending routes. */
export const ApprovalLinks = z.lazy(() => z.object({ approve: z.string(), reject: z.string(), pending: z.string() }));

export const SuspensionBody = z.lazy(() =>
  z.object({
    detail: z.object({
      status: z.literal('suspended'),
      approval_id: z.string(),
      /** Beside the spec's fields: the thread to approve on (also in X-Thread-Id) and the links. */
      thread_id: z.string(),
      node_name: z.string(),
      message: z.string(),
      links: ApprovalLinks,
    }),
  }),
);

/** One pending approval in the cross-thread lists, newest first. */
export const ApprovalSummary = z.lazy(() =>
  z.object({
    id: z.string(),
    agent: z.string(),
    thread_id: z.string(),
    node_name: z.string(),
    message: z.string(),
    payload: JsonObject,
    /** Which route started the run: invoke, stream, chat, invoke/async, a2a, a2a-jsonrpc, mcp, studio… */
    source: z.string(),
    /** The board task waiting in `input-required` for this approval, when a task ran the agent. */
    task_id: z.string().nullable(),
    created_at: z.string(),
    links: ApprovalLinks.unwrap().extend({ task: z.string().optional() }),
  }),
);

export const ApprovalListQuery = z.lazy(() =>
  z.object({
    limit: z.coerce.number().int().min(1).max(500).default(50),
    offset: z.coerce.number().int().min(0).default(0),
  }),
);

export const ApprovalList = z.lazy(() =>
  z.object({
    approvals: z.array(ApprovalSummary),
    count: z.number().int(),
    total: z.number().int(),
    limit: z.number().int(),
    offset: z.number().int(),
  }),
);

export const ApproveRequest = z.lazy(() =>
  z.object({
    approval_id: PrintableString.min(1),
    approved: z.boolean().default(true),
    context: JsonObject.default({}),
    /**
     * For a gated tool call (`payload.kind: 'tool_call'`): the arguments to run it with instead of
     * the model's (validated by the tool's input schema; refused ones are the call's error result).
     */
    arguments: JsonObject.optional(),
  }),
);
export type ApproveRequest = z.output<typeof ApproveRequest>;

export const RejectRequest = z.lazy(() =>
  z.object({
    approval_id: PrintableString.min(1),
    reason: z.string().nullish().default(null),
  }),
);
export type RejectRequest = z.output<typeof RejectRequest>;

export const RejectResponse = z.lazy(() =>
  z.object({ status: z.literal('rejected'), approval_id: z.string(), reason: z.string().nullable() }),
);
/** A rejected gated tool call does not end the run (the model reads the denial), so /reject may answer the run's result. */
export const RejectOrContinued = z.lazy(() => z.union([RejectResponse, InvokeResponse]));

export const PendingList = z.lazy(() =>
  z.object({
    thread_id: z.string(),
    pending: z.array(
      z.object({
        id: z.string(),
        node_name: z.string(),
        message: z.string(),
        /** What the approval is about; a gated tool call's is `{kind: 'tool_call', tool, call_id, arguments, node}`. */
        payload: JsonObject,
        state_snapshot: JsonObject,
        created_at: z.string(),
      }),
    ),
    count: z.number().int(),
  }),
);

export const ReplayQuery = z.lazy(() => z.object({ since: z.coerce.number().int().min(0).optional() }));

/** Path parameters of the per-agent routes: `/api/v1/:agent/...`. */
export const AgentParams = z.object({ agent: z.string() });
export const AgentThreadParams = AgentParams.extend({ thread_id: z.string() });
export const AgentStreamParams = AgentParams.extend({ stream_id: z.string() });

/** A `tools/` drop-in as a model is told about it, with where it lives and how it runs. */
export const ToolInfo = z.lazy(() =>
  z.object({
    name: z.string(),
    description: z.string(),
    /** The JSON Schema of the arguments, as the model gets it. */
    parameters: z.record(z.string(), z.unknown()),
    file: z.string(),
    /** true, false, or `depends` when a function decides per call. */
    needs_approval: z.union([z.boolean(), z.literal('depends')]),
    timeout_ms: z.number().nullable(),
  }),
);
export const ToolList = z.lazy(() => z.object({ tools: z.array(ToolInfo) }));
export const ToolParams = z.object({ name: z.string() });
export const TryToolRequest = z.lazy(() => z.object({ arguments: z.record(z.string(), z.unknown()).default({}) }));
export const TryToolResponse = z.lazy(() =>
  z.object({
    name: z.string(),
    arguments: z.unknown(),
    result: z.unknown().optional(),
    error: z.string().optional(),
    duration_ms: z.number(),
  }),
);

/**
 * Request and response records of the debug interface under /studio (spec: Debug (Studio)
 * records, Studio run stream event types). The request schemas validate (422 naming the field);
 * the response schemas document the routes in /openapi.json.
 *
 * Decisions where the spec is silent:
 * - A run record (`StudioRun`) is defined here; `POST /runs` answers with it, events included.
 * - `prompt_version` absent → the agent's active version ('v1' unless the agent says otherwise),
 *   as on /invoke. `temperature` and `max_tokens` are accepted as on /invoke.
 * - `checkpoint_id` needs `thread_id`: checkpoints belong to a thread.
 */
import { z } from 'zod';
import { PrintableString } from '../http/validate.js';

const JsonObject = z.record(z.string(), z.unknown());
const ThreadId = z.string().min(1).max(200);

export const StudioRunRequest = z.object({
  query: z.string(),
  user_id: PrintableString.min(1).default('default-user'),
  thread_id: ThreadId.nullish().default(null),
  context: JsonObject.default({}),
  metadata: JsonObject.default({}),
  prompt_version: z.string().min(1).optional(),
  temperature: z.number().min(0).max(2).nullish().default(null),
  max_tokens: z.number().int().positive().nullish().default(null),
  breakpoints: z.array(z.string().min(1)).default([]),
  checkpoint_id: z.string().min(1).nullish().default(null),
});
export type StudioRunRequest = z.output<typeof StudioRunRequest>;

const Message = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  timestamp: z.string().optional(),
  name: z.string().optional(),
});

/**
 * The standard state keys are checked so an edit cannot leave a state the engine or the agent
 * chokes on (a `messages` that is not a list); agent-defined keys take any JSON value.
 */
export const StudioStateUpdate = z.object({
  updates: z
    .object({
      messages: z.array(Message).optional(),
      response: z.string().optional(),
      steps_taken: z.array(z.string()).optional(),
      metadata: JsonObject.optional(),
    })
    .catchall(z.unknown()),
});
export type StudioStateUpdate = z.output<typeof StudioStateUpdate>;

export const StudioResumeRequest = z.object({
  value: z.unknown().default(null),
  action: z.enum(['approve', 'reject']).default('approve'),
  /** Why a rejection was made (kept in the state's metadata; a rejected tool call's reason is told to the model). */
  reason: z.string().nullish().default(null),
  /** For a run paused at a tool call that needs approval: the arguments to run it with instead of the model's. */
  arguments: z.record(z.string(), z.unknown()).optional(),
  /** Breakpoints for the continued execution; absent → the ones the run was started with. */
  breakpoints: z.array(z.string().min(1)).optional(),
});
export type StudioResumeRequest = z.output<typeof StudioResumeRequest>;

export const RunsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  thread_id: PrintableString.min(1).optional(),
});
export type RunsQuery = z.output<typeof RunsQuery>;

export const StateQuery = z.object({ checkpoint_id: z.string().min(1).optional() });
export const HistoryQuery = z.object({ limit: z.coerce.number().int().min(1).max(1000).optional() });
export const StreamQuery = z.object({ since: z.coerce.number().int().min(0).optional() });

// ——— responses ———

export const Info = z.object({
  version: z.string(),
  platform_title: z.string(),
  agent_count: z.number().int(),
  capabilities: z.array(z.string()),
  model_configured: z.boolean(),
});

export const AgentEntry = z.object({
  name: z.string(),
  slug: z.string(),
  description: z.string(),
  version: z.string(),
  framework: z.string(),
  capabilities: z.array(z.string()),
  has_graph: z.boolean(),
  has_config: z.boolean(),
  has_prompts: z.boolean(),
  /** Why the agent's graph does not compile (null when it does). */
  graph_error: z.string().nullable(),
});
export type AgentEntry = z.output<typeof AgentEntry>;

export const Graph = z.object({
  agent_name: z.string(),
  nodes: z.array(z.object({ id: z.string(), name: z.string(), type: z.string(), metadata: JsonObject })),
  edges: z.array(z.object({ id: z.string(), source: z.string(), target: z.string(), condition: z.string().nullable() })),
  entry_point: z.string(),
  end_points: z.array(z.string()),
});

export const Schemas = z.object({
  agent_name: z.string(),
  input_schema: JsonObject,
  output_schema: JsonObject,
  state_schema: JsonObject,
  /** 'agent' when the agent declares the model, 'default' when the platform's shape is shown. */
  sources: z.object({ input: z.enum(['agent', 'default']), output: z.enum(['agent', 'default']) }),
});

export const Config = z.object({
  agent_name: z.string(),
  kind: z.enum(['graph', 'function']),
  config: JsonObject,
  prompts: z.object({ versions: z.array(z.string()), active: z.string() }),
  model: z.object({ configured: z.boolean(), name: z.string(), required: z.boolean() }),
});

export const Checkpoint = z.object({
  id: z.string(),
  thread_id: z.string(),
  step: z.number().int(),
  state: JsonObject,
  metadata: JsonObject,
  parent_id: z.string().nullable(),
  timestamp: z.string(),
});

export const ThreadState = z.object({
  thread_id: z.string(),
  agent_name: z.string(),
  state: JsonObject,
  timestamp: z.string(),
  checkpoint_id: z.string(),
  step: z.number().int(),
  parent_id: z.string().nullable(),
  /** The node a resume runs next; null when the thread's last run finished. */
  next: z.string().nullable(),
  /** The human-approval question the thread waits on, if it is paused at one. */
  interrupt: z.object({ node: z.string(), message: z.string(), payload: JsonObject }).nullable(),
  run_id: z.string().nullable(),
});

/** The answer to a state update: the new state and the keys it changed. */
export const UpdatedState = ThreadState.extend({ updated_keys: z.array(z.string()) });

export const RUN_STATUSES = ['running', 'completed', 'interrupted', 'breakpoint', 'rejected', 'cancelled', 'error'] as const;

export const StudioEventDoc = z
  .object({
    seq: z.number().int(),
    type: z.enum([
      'run_start',
      'node_start',
      'node_end',
      'message_chunk',
      'subagent_start',
      'subagent_end',
      'task_update',
      'breakpoint_hit',
      'run_complete',
      'run_error',
      'done',
    ]),
    run_id: z.string(),
    thread_id: z.string(),
    timestamp: z.string(),
    node: z.string().nullable().optional(),
  })
  .loose();

const RunSummaryShape = {
  run_id: z.string(),
  agent_name: z.string(),
  thread_id: z.string(),
  status: z.enum(RUN_STATUSES),
  input: z.object({
    query: z.string(),
    user_id: z.string(),
    context: JsonObject,
    metadata: JsonObject,
    prompt_version: z.string(),
    temperature: z.number().nullable(),
    max_tokens: z.number().nullable(),
  }),
  breakpoints: z.array(z.string()),
  checkpoint_id: z.string().nullable(),
  last_checkpoint_id: z.string().nullable(),
  paused: z
    .object({
      node: z.string(),
      reason: z.enum(['breakpoint', 'interrupt']),
      checkpoint_id: z.string(),
      message: z.string(),
      payload: JsonObject,
    })
    .nullable(),
  result: JsonObject.nullable(),
  error: z.string().nullable(),
  error_node: z.string().nullable(),
  resumes: z.number().int(),
  event_count: z.number().int(),
  duration_ms: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
  /** The principal the run belongs to (its thread's owner). */
  principal: z.string().optional(),
};

export const RunSummary = z.object(RunSummaryShape);
export const StudioRunDoc = z.object({ ...RunSummaryShape, events: z.array(StudioEventDoc) });

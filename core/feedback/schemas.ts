/**
 * Request and record schemas of feedback and optimization (spec: Feedback and optimization records).
 *
 * Schemas only a route reads are `z.lazy`: built on first use, not at start (core/http/route.ts).
 */
import { z } from 'zod';
import { PrintableString } from '../http/validate.js';

const JsonObject = z.record(z.string(), z.unknown());

export const FEEDBACK_TYPES = ['thumbs', 'rating', 'correction', 'comment'] as const;

export const FeedbackRequest = z.lazy(() =>
  z.object({
    user_id: PrintableString.min(1).default('anonymous'),
    rating: z.number().int().min(1).max(5).nullish().default(null),
    comment: z.string().nullish().default(null),
    correction: z.string().nullish().default(null),
    feedback_type: z.enum(FEEDBACK_TYPES).default('thumbs'),
    query: z.string().default(''),
    response: z.string().default(''),
    thread_id: PrintableString.nullish().default(null),
    metadata: JsonObject.default({}),
  }),
);
export type FeedbackRequest = z.output<typeof FeedbackRequest>;

export const FeedbackRecord = z.lazy(() =>
  FeedbackRequest.unwrap().extend({
    id: z.string(),
    agent: z.string(),
    created_at: z.string(),
    /** The principal that gave it; only that principal lists and exports it. */
    principal: z.string().optional(),
  }),
);
export type FeedbackRecord = z.output<typeof FeedbackRecord>;

export const FeedbackListQuery = z.lazy(() => z.object({ limit: z.coerce.number().int().min(1).max(10_000).default(50) }));

export const FeedbackResponse = z.lazy(() => z.object({ status: z.literal('recorded'), feedback_id: z.string() }));
export const FeedbackList = z.lazy(() => z.object({ agent: z.string(), feedback: z.array(FeedbackRecord), count: z.number().int() }));
export const FeedbackExport = z.lazy(() =>
  z.object({
    agent: z.string(),
    format: z.literal('jsonl'),
    data: z.string(),
    count: z.number().int(),
  }),
);

export const OptimizeInvokeRequest = z.lazy(() =>
  z.object({
    query: z.string().min(1),
    system_prompt_override: z.string().nullish().default(null),
    user_id: PrintableString.min(1).default('optimizer'),
    context: JsonObject.default({}),
    include_retrieval_context: z.boolean().default(true),
    include_steps: z.boolean().default(true),
  }),
);
export type OptimizeInvokeRequest = z.output<typeof OptimizeInvokeRequest>;

export const OptimizeInvokeResponse = z.lazy(() =>
  z.object({
    response: z.string(),
    retrieval_context: z.array(z.string()),
    /** The run's tool calls: the model's (tool loop), with `result` or `error`, and those the agent reported with `ctx.tool()`. */
    tool_calls: z.array(z.object({ name: z.string(), args: z.unknown(), result: z.unknown().optional(), error: z.string().optional() })),
    steps_taken: z.array(z.string()),
    reasoning: z.string(),
    citations: z.array(z.record(z.string(), z.unknown())),
    duration_ms: z.number(),
    metadata: JsonObject,
  }),
);

/**
 * The run of an agent declared by `instructions` and `tools` alone, as Mastra's `Agent` works: the
 * selected prompt version as the system message, the thread's history, the query, then the tool
 * loop with the configured model and the agent's tools.
 */
import type { AgentRunFn, ChatMessage } from './types.js';

export const toolAgentRun: AgentRunFn = async (input, ctx) => {
  const messages: ChatMessage[] = [];
  if (ctx.prompt) messages.push({ role: 'system', content: ctx.prompt });
  // A stored `tool` message has no call to answer (the protocol refuses one without its call id),
  // so history brings the conversation's words only.
  for (const m of input.history) if (m.role !== 'tool') messages.push({ role: m.role, content: m.content });
  messages.push({ role: 'user', content: input.query });
  const result = await ctx.model.run(messages);
  const response =
    result.finishReason === 'max_steps' && !result.text
      ? `Stopped after ${result.steps.length} model calls (maxSteps) while the model was still calling tools; it gave no final answer.`
      : result.text;
  return { response, metadata: { finish_reason: result.finishReason, model_steps: result.steps.length } };
};

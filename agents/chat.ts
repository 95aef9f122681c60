import { defineAgent } from 'hangar';

/**
 * A conversational agent over the configured chat model, with the thread's history. Without a
 * model it answers 503 with a detail naming what to set (`model.baseUrl` in hangar.config.json or
 * `HANGAR_MODEL__BASE_URL`), because `requiresModel` is declared.
 */
export default defineAgent({
  description: 'Chats using the configured model (OpenAI-compatible: OpenAI, Ollama, llama.cpp, vLLM, LM Studio).',
  version: '1.0.0',
  requiresModel: true,
  prompts: {
    versions: {
      v1: 'You are a helpful assistant running inside Hangar, a local-first agent platform. Answer concisely.',
      v2: 'You are a meticulous assistant. Think about the question, then answer in short paragraphs with concrete examples.',
    },
  },
  run: async (input, ctx) => {
    ctx.step('model');
    const response = await ctx.model.chat([
      { role: 'system', content: ctx.prompt },
      ...input.history.map((m) => ({ role: m.role, content: m.content })),
      { role: 'user', content: input.query },
    ]);
    return { response, metadata: { model: ctx.model.name } };
  },
});

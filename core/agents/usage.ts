/**
 * Token usage of a run: every model call's prompt and completion tokens as the server reported
 * them, summed. A subagent's calls count in its parent's run, since the parent's caller pays them.
 */
import type { TokenUsage } from './model.js';

export interface ModelCallUsage extends TokenUsage {
  model: string;
}

/** What a response's `metadata.usage` holds. */
export interface RunUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** One entry per model call, in the order they finished. */
  calls: ModelCallUsage[];
}

export class UsageMeter {
  readonly calls: ModelCallUsage[] = [];

  add(model: string, usage: TokenUsage): void {
    this.calls.push({ model, prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens });
  }

  absorb(usage: RunUsage | undefined): void {
    if (usage) this.calls.push(...usage.calls);
  }

  /** The sums, counting a call whose server reported nothing as 0 (its entry keeps the nulls). */
  summary(): RunUsage {
    let prompt = 0;
    let completion = 0;
    for (const call of this.calls) {
      prompt += call.prompt_tokens ?? 0;
      completion += call.completion_tokens ?? 0;
    }
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, calls: [...this.calls] };
  }
}

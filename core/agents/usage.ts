/**
 * Token usage of a run: every model call's prompt and completion tokens as the server reported
 * them, summed. A subagent's calls count in its parent's run, since the parent's caller pays them.
 *
 * Cost, when the settings hold a price table (`model.prices`, per million tokens): each call's
 * cost from its model's price, and the run's sum. Decision: a run with any call that cannot be
 * priced (its model is not in the table, or its server reported no tokens) has `cost: null`,
 * never a partial sum that would read as the total; its priced calls still show theirs.
 */
import type { TokenUsage } from './model.js';

/** A model's price per million tokens (setting `model.prices`). */
export interface ModelPrice {
  prompt_per_1m: number;
  completion_per_1m: number;
}

/** The price table of the settings; absent when none is set (usage then has no cost fields). */
export interface Pricing {
  prices: Readonly<Record<string, ModelPrice>>;
  currency: string;
}

export interface ModelCallUsage extends TokenUsage {
  model: string;
  /** Set when a price table is: the call's cost, or null when it cannot be priced. */
  cost?: number | null;
}

/** What a response's `metadata.usage` holds. */
export interface RunUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** One entry per model call, in the order they finished. */
  calls: ModelCallUsage[];
  /** Set when a price table is: the run's cost in `currency`, or null when a call cannot be priced. */
  cost?: number | null;
  currency?: string;
}

/** Cost of `tokens` at `per1m` a million, without the float noise a sum of small products collects. */
const priced = (tokens: number, per1m: number) => (tokens * per1m) / 1_000_000;
const rounded = (amount: number) => Math.round(amount * 1e10) / 1e10;

export function callCost(pricing: Pricing, model: string, usage: TokenUsage): number | null {
  const price = pricing.prices[model];
  if (!price || usage.prompt_tokens === null || usage.completion_tokens === null) return null;
  return rounded(priced(usage.prompt_tokens, price.prompt_per_1m) + priced(usage.completion_tokens, price.completion_per_1m));
}

export class UsageMeter {
  readonly calls: ModelCallUsage[] = [];

  constructor(private readonly pricing?: Pricing) {}

  add(model: string, usage: TokenUsage): void {
    const call: ModelCallUsage = { model, prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens };
    if (this.pricing) call.cost = callCost(this.pricing, model, usage);
    this.calls.push(call);
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
    const summary: RunUsage = {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      calls: [...this.calls],
    };
    if (!this.pricing) return summary;
    let cost: number | null = 0;
    for (const call of this.calls) cost = cost === null || call.cost == null ? null : cost + call.cost;
    return { ...summary, cost: cost === null ? null : rounded(cost), currency: this.pricing.currency };
  }
}

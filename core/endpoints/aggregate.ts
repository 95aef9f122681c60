/**
 * Aggregation strategies (spec: Aggregation strategies). `runAggregation` starts the upstream calls
 * and combines them; the vote and canonical JSON are pure and exported for tests.
 *
 * - ALL: every upstream is called concurrently; success only if all succeed; the value maps
 *   upstream name → data. On failure the value is null and every result is still reported.
 * - FIRST_SUCCESS: every upstream is called concurrently; the first success wins and the calls still
 *   running are aborted (reported as `cancelled`). Fails only when all fail.
 * - MAJORITY: every upstream is called; successful answers are grouped by canonical JSON (object keys
 *   sorted, so key order does not split a vote) and each group scores the sum of its members'
 *   weights. The highest score wins — a plurality, not necessarily more than half of all weight;
 *   failed upstreams simply cast no vote. Fails only when no upstream succeeds.
 *   Tie rule: among groups with equal score, the group holding the upstream declared first in the
 *   definition wins. It is deterministic (never depends on timing) and lets the author choose the
 *   tie-breaker by ordering the upstreams.
 */
import type { Aggregation, UpstreamDefinition } from './schemas.js';
import type { FanOutResult, UpstreamCallResult, UpstreamResult } from './types.js';

export type CallFn = (upstream: UpstreamDefinition, signal: AbortSignal) => Promise<UpstreamCallResult>;

export async function runAggregation(
  aggregation: Aggregation,
  upstreams: readonly UpstreamDefinition[],
  call: CallFn,
  signal: AbortSignal,
): Promise<FanOutResult> {
  switch (aggregation) {
    case 'ALL': {
      const results = await Promise.all(upstreams.map((u) => call(u, signal)));
      const success = results.every((r) => r.ok);
      return {
        success,
        aggregated: success ? Object.fromEntries(results.map((r) => [r.name, r.data])) : null,
        upstreams: results.map(publicResult),
      };
    }
    case 'FIRST_SUCCESS':
      return firstSuccess(upstreams, call, signal);
    case 'MAJORITY': {
      const results = await Promise.all(upstreams.map((u) => call(u, signal)));
      const winner = majorityVote(results.map((r, i) => ({ ok: r.ok, data: r.data, weight: upstreams[i].weight })));
      return {
        success: winner !== null,
        aggregated: winner === null ? null : winner.value,
        upstreams: results.map(publicResult),
      };
    }
    default: {
      const never: never = aggregation;
      throw new Error(`unknown aggregation ${String(never)}`);
    }
  }
}

async function firstSuccess(upstreams: readonly UpstreamDefinition[], call: CallFn, parent: AbortSignal): Promise<FanOutResult> {
  // One controller for the losers; the parent signal (caller gone) is forwarded to it.
  const losers = new AbortController();
  const forward = () => losers.abort();
  // Stryker disable next-line ObjectLiteral,BooleanLiteral: equivalent, `once` only spares the removal the `finally` below makes anyway
  parent.addEventListener('abort', forward, { once: true });
  let winner: UpstreamCallResult | null = null;
  const results = await Promise.all(
    upstreams.map(async (u) => {
      const result = await call(u, losers.signal);
      if (result.ok && winner === null) {
        winner = result;
        losers.abort();
      }
      return result;
    }),
  ).finally(() => parent.removeEventListener('abort', forward));
  const won = winner as UpstreamCallResult | null;
  return {
    success: won !== null,
    aggregated: won === null ? null : won.data,
    upstreams: results.map(publicResult),
  };
}

export interface Ballot {
  ok: boolean;
  data?: unknown;
  weight: number;
}

/**
 * Weighted plurality over canonical JSON. `ballots` are in declaration order (the tie rule uses it).
 * Returns the winning value, its score and the index of the first upstream that voted for it.
 */
export function majorityVote(ballots: readonly Ballot[]): { value: unknown; score: number; first: number } | null {
  const groups = new Map<string, { value: unknown; score: number; first: number }>();
  ballots.forEach((ballot, index) => {
    if (!ballot.ok) return;
    const key = canonicalJson(ballot.data);
    const group = groups.get(key);
    if (group) group.score += ballot.weight;
    else groups.set(key, { value: ballot.data, score: ballot.weight, first: index });
  });
  let best: { value: unknown; score: number; first: number } | null = null;
  // Groups come in the order of their first vote (Map insertion order), so keeping the earlier group
  // unless a later one scores strictly more is the tie rule: the answer of the upstream declared first.
  for (const group of groups.values()) {
    if (best === null || group.score > best.score) best = group;
  }
  return best;
}

/** JSON with object keys sorted at every depth; `undefined` encodes as null. */
export function canonicalJson(value: unknown): string {
  if (value === undefined || value === null) return 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Drop the data: per-upstream results carry status, never payloads. */
export function publicResult(result: UpstreamCallResult): UpstreamResult {
  const { data: _data, ...rest } = result;
  return rest;
}

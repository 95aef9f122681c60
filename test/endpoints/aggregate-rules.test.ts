/**
 * The aggregation rules themselves, driven through `runAggregation` with a call function standing
 * in for the network (the HTTP path is aggregate.test.ts): data chosen so that the plausible wrong
 * rule — a later success replacing the first, a failed vote counted, a caller's abort not passed on,
 * key order splitting a vote — gives a different answer (#30).
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { type CallFn, canonicalJson, majorityVote, runAggregation } from '../../core/endpoints/aggregate.js';
import { UpstreamDefinition } from '../../core/endpoints/schemas.js';
import type { UpstreamCallResult } from '../../core/endpoints/types.js';

const upstreams = (...specs: Array<[string, number?]>) =>
  specs.map(([name, weight]) => UpstreamDefinition.parse({ name, base_url: 'http://127.0.0.1:9', ...(weight ? { weight } : {}) }));

const answer = (name: string, ok: boolean, data?: unknown): UpstreamCallResult => ({
  name,
  ok,
  outcome: ok ? 'success' : 'http_error',
  status: ok ? 200 : 500,
  duration_ms: 1,
  attempts: 1,
  error: ok ? null : 'failed',
  data,
});

/** Answers per upstream name after a delay; a call whose signal aborts first answers `cancelled`. */
function scripted(plan: Record<string, { ok: boolean; data?: unknown; after: number }>, seen: AbortSignal[] = []): CallFn {
  return (u, signal) => {
    seen.push(signal);
    const { ok, data, after } = plan[u.name];
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(answer(u.name, ok, data)), after);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve({ ...answer(u.name, false), outcome: 'cancelled', status: null });
      });
    });
  };
}

describe('MAJORITY', () => {
  it('fails with no value when every upstream fails', async () => {
    const call = scripted({ a: { ok: false, after: 0 }, b: { ok: false, after: 0 } });
    const result = await runAggregation('MAJORITY', upstreams(['a'], ['b']), call, new AbortController().signal);
    expect(result).toMatchObject({ success: false, aggregated: null });
    expect(result.upstreams.map((u) => u.ok)).toEqual([false, false]);
  });

  it('weights decide: two light votes lose to one heavy one, and a failed heavy upstream casts no vote', async () => {
    const heavy = await runAggregation(
      'MAJORITY',
      upstreams(['a'], ['b'], ['c', 3]),
      scripted({ a: { ok: true, data: 'red', after: 0 }, b: { ok: true, data: 'red', after: 0 }, c: { ok: true, data: 'blue', after: 0 } }),
      new AbortController().signal,
    );
    expect(heavy).toMatchObject({ success: true, aggregated: 'blue' });
    const failedHeavy = await runAggregation(
      'MAJORITY',
      upstreams(['a'], ['b'], ['c', 3]),
      scripted({
        a: { ok: true, data: 'red', after: 0 },
        b: { ok: true, data: 'red', after: 0 },
        c: { ok: false, data: 'blue', after: 0 },
      }),
      new AbortController().signal,
    );
    expect(failedHeavy).toMatchObject({ success: true, aggregated: 'red' });
  });

  it('vote: weights sum per answer, failed ballots count nothing, a tie goes to the answer voted first', () => {
    expect(majorityVote([])).toBeNull();
    expect(
      majorityVote([
        { ok: true, data: 'x', weight: 1 },
        { ok: true, data: 'y', weight: 1.5 },
        { ok: true, data: 'x', weight: 1 },
      ]),
    ).toEqual({ value: 'x', score: 2, first: 0 });
    expect(
      majorityVote([
        { ok: false, data: 'x', weight: 10 },
        { ok: true, data: 'y', weight: 1 },
      ]),
    ).toEqual({ value: 'y', score: 1, first: 1 });
    expect(
      majorityVote([
        { ok: true, data: 'y', weight: 2 },
        { ok: true, data: 'x', weight: 1 },
        { ok: true, data: 'x', weight: 1 },
      ]),
    ).toEqual({ value: 'y', score: 2, first: 0 });
  });
});

describe('FIRST_SUCCESS', () => {
  it('keeps the first success even when a later upstream also succeeds', async () => {
    // b ignores the abort of the losers' signal: it still answers, later, with success.
    const call: CallFn = (u) =>
      new Promise((resolve) =>
        setTimeout(() => resolve(answer(u.name, true, u.name === 'a' ? 'first' : 'second')), u.name === 'a' ? 0 : 30),
      );
    const result = await runAggregation('FIRST_SUCCESS', upstreams(['a'], ['b']), call, new AbortController().signal);
    expect(result).toMatchObject({ success: true, aggregated: 'first' });
  });

  it('passes the caller going away on to the upstream calls, and leaves no listener on the caller signal', async () => {
    const caller = new AbortController();
    const seen: AbortSignal[] = [];
    const running = runAggregation(
      'FIRST_SUCCESS',
      upstreams(['a'], ['b']),
      scripted({ a: { ok: true, data: 1, after: 60_000 }, b: { ok: true, data: 2, after: 60_000 } }, seen),
      caller.signal,
    );
    await new Promise((r) => setTimeout(r, 10));
    caller.abort();
    const result = await running;
    expect(seen.every((s) => s.aborted)).toBe(true);
    expect(result).toMatchObject({ success: false, aggregated: null });
    expect(result.upstreams.map((u) => u.outcome)).toEqual(['cancelled', 'cancelled']);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });

  it('removes its listener from the caller signal when it completes normally', async () => {
    const caller = new AbortController();
    await runAggregation('FIRST_SUCCESS', upstreams(['a']), scripted({ a: { ok: true, data: 1, after: 0 } }), caller.signal);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });
});

describe('canonical JSON', () => {
  it('sorts keys at every depth whatever their order, and writes undefined as null', () => {
    expect(canonicalJson({ c: 1, b: { z: 1, y: 2, x: 3 }, a: [3, undefined, null] })).toBe(
      '{"a":[3,null,null],"b":{"x":3,"y":2,"z":1},"c":1}',
    );
    expect(canonicalJson({ d: 4, c: 3, b: 2, a: 1 })).toBe(canonicalJson({ a: 1, b: 2, c: 3, d: 4 }));
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
  });
});

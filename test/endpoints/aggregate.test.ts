import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { canonicalJson, majorityVote } from '../../core/endpoints/aggregate.js';
import { EndpointService } from '../../core/endpoints/service.js';
import { eventually } from '../support/server.js';
import { fixed, type Handler, json, type Loopback, startLoopback } from './loopback.js';

const open: Loopback[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((l) => l.close()));
});
async function upstream(handler: Handler): Promise<Loopback> {
  const l = await startLoopback(handler);
  open.push(l);
  return l;
}
const fail =
  (status: number): Handler =>
  (_req, res) =>
    json(res, status, { error: 'down' });

function endpoint(aggregation: 'ALL' | 'FIRST_SUCCESS' | 'MAJORITY', upstreams: Array<{ name: string; url: string; weight?: number }>) {
  const s = new EndpointService({ metrics: new Registry() });
  s.register({
    name: 'e',
    aggregation,
    upstreams: upstreams.map((u) => ({ name: u.name, base_url: u.url, weight: u.weight, retries: 0 })),
  });
  return s;
}

describe('ALL', () => {
  it('maps each upstream name to its data when every upstream succeeds', async () => {
    const a = await upstream(fixed({ t: 1 }));
    const b = await upstream(fixed({ t: 2 }));
    const result = await endpoint('ALL', [
      { name: 'a', url: a.url },
      { name: 'b', url: b.url },
    ]).invoke('e', 'POST', { q: 1 });
    expect(result.success).toBe(true);
    expect(result.aggregated).toEqual({ a: { t: 1 }, b: { t: 2 } });
    expect(result.upstreams.map((u) => [u.name, u.status, u.ok, u.error])).toEqual([
      ['a', 200, true, null],
      ['b', 200, true, null],
    ]);
    expect(JSON.parse(a.received[0].body)).toEqual({ q: 1 });
  });

  it('fails with 502 naming the failed upstream when one fails, still reporting the others', async () => {
    const a = await upstream(fixed({ t: 1 }));
    const b = await upstream(fail(500));
    const err = await endpoint('ALL', [
      { name: 'a', url: a.url },
      { name: 'b', url: b.url },
    ])
      .invoke('e', 'POST', {})
      .catch((e) => e);
    expect(err.status).toBe(502);
    expect(err.detail).toMatch(/^endpoint 'e' failed \(ALL needs every upstream\): upstream 'b' http_error: HTTP 500/);
    expect(err.toBody()).toMatchObject({
      success: false,
      aggregated: null,
      upstreams: [
        { name: 'a', ok: true, status: 200 },
        { name: 'b', ok: false, status: 500, outcome: 'http_error' },
      ],
    });
  });
});

describe('FIRST_SUCCESS', () => {
  it('returns the first successful answer and cancels the upstreams still running', async () => {
    const fast = await upstream(fixed({ from: 'fast' }, 20));
    const slow = await upstream(fixed({ from: 'slow' }, 10_000));
    const started = Date.now();
    const result = await endpoint('FIRST_SUCCESS', [
      { name: 'slow', url: slow.url },
      { name: 'fast', url: fast.url },
    ]).invoke('e', 'POST', {});
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result.success).toBe(true);
    expect(result.aggregated).toEqual({ from: 'fast' });
    expect(result.upstreams).toMatchObject([
      { name: 'slow', ok: false, outcome: 'cancelled', status: null },
      { name: 'fast', ok: true, outcome: 'success' },
    ]);
    // The slow upstream saw its connection closed, not merely ignored.
    await eventually(() => slow.received[0]?.aborted);
  });

  it('skips failures and fails (502) only when every upstream fails', async () => {
    const bad = await upstream(fail(503));
    const good = await upstream(fixed({ ok: 1 }, 30));
    const s = endpoint('FIRST_SUCCESS', [
      { name: 'bad', url: bad.url },
      { name: 'good', url: good.url },
    ]);
    expect((await s.invoke('e', 'POST', {})).aggregated).toEqual({ ok: 1 });

    const bad2 = await upstream(fail(500));
    const s2 = endpoint('FIRST_SUCCESS', [
      { name: 'bad', url: bad.url },
      { name: 'bad2', url: bad2.url },
    ]);
    const err = await s2.invoke('e', 'POST', {}).catch((e) => e);
    expect(err.status).toBe(502);
    expect(err.detail).toContain("FIRST_SUCCESS found no successful upstream): upstream 'bad' http_error: HTTP 503");
    expect(err.detail).toContain("upstream 'bad2' http_error: HTTP 500");
  });
});

describe('MAJORITY', () => {
  it('returns the answer with the highest total weight, comparing answers by canonical JSON', async () => {
    const a = await upstream(fixed({ x: 1, y: 2 }));
    const b = await upstream(fixed({ y: 2, x: 1 })); // same answer, other key order
    const c = await upstream(fixed({ x: 9 }));
    const s = endpoint('MAJORITY', [
      { name: 'a', url: a.url },
      { name: 'b', url: b.url },
      { name: 'c', url: c.url, weight: 1.5 },
    ]);
    expect((await s.invoke('e', 'POST', {})).aggregated).toEqual({ x: 1, y: 2 });
  });

  it('lets a heavier single upstream outvote two light ones', async () => {
    const a = await upstream(fixed('red'));
    const b = await upstream(fixed('red'));
    const c = await upstream(fixed('blue'));
    const s = endpoint('MAJORITY', [
      { name: 'a', url: a.url },
      { name: 'b', url: b.url },
      { name: 'c', url: c.url, weight: 3 },
    ]);
    expect((await s.invoke('e', 'POST', {})).aggregated).toBe('blue');
  });

  it('breaks a weighted tie in favour of the answer of the upstream declared first', async () => {
    const a = await upstream(fixed('blue', 40)); // declared first, answers last
    const b = await upstream(fixed('red'));
    const c = await upstream(fixed('red'));
    const d = await upstream(fixed('blue'));
    const s = endpoint('MAJORITY', [
      { name: 'a', url: a.url, weight: 2 },
      { name: 'b', url: b.url, weight: 1 },
      { name: 'c', url: c.url, weight: 2 },
      { name: 'd', url: d.url, weight: 1 },
    ]);
    // blue 3 (a+d) vs red 3 (b+c): tie, a is declared first → blue, whatever the arrival order.
    expect((await s.invoke('e', 'POST', {})).aggregated).toBe('blue');
  });

  it('ignores failed upstreams (they cast no vote) and fails only when none succeeds', async () => {
    const a = await upstream(fail(500));
    const b = await upstream(fixed({ v: 1 }));
    const s = endpoint('MAJORITY', [
      { name: 'a', url: a.url, weight: 5 },
      { name: 'b', url: b.url },
    ]);
    const result = await s.invoke('e', 'POST', {});
    expect(result).toMatchObject({ success: true, aggregated: { v: 1 } });
    expect(result.upstreams[0]).toMatchObject({ name: 'a', ok: false, status: 500 });
  });

  it('vote and canonical JSON are pure', () => {
    expect(canonicalJson({ b: [1, { d: 1, c: 2 }], a: null, u: undefined })).toBe('{"a":null,"b":[1,{"c":2,"d":1}]}');
    expect(majorityVote([])).toBeNull();
    expect(majorityVote([{ ok: false, weight: 9 }])).toBeNull();
    expect(
      majorityVote([
        { ok: true, data: 1, weight: 1 },
        { ok: true, data: 2, weight: 1 },
      ]),
    ).toMatchObject({ value: 1, score: 1, first: 0 });
  });
});

describe('response model per upstream', () => {
  it('an answer failing the response model fails that upstream only', async () => {
    const good = await upstream(fixed({ temp: 20 }));
    const bad = await upstream(fixed({ temp: 'hot' }));
    const s = new EndpointService({ metrics: new Registry() });
    s.register({
      name: 'e',
      aggregation: 'FIRST_SUCCESS',
      response: z.object({ temp: z.number() }),
      upstreams: [
        { name: 'bad', base_url: bad.url },
        { name: 'good', base_url: good.url },
      ],
    });
    const result = await s.invoke('e', 'POST', {});
    expect(result.aggregated).toEqual({ temp: 20 });
    const badResult = result.upstreams.find((u) => u.name === 'bad')!;
    // bad may have been cancelled if good won first; when it finished, it must say why it failed.
    if (badResult.outcome !== 'cancelled') {
      expect(badResult).toMatchObject({ outcome: 'invalid_response', status: 200 });
      expect(badResult.error).toContain('response.temp');
    }
    s.register(
      { name: 'e', aggregation: 'ALL', response: z.object({ temp: z.number() }), upstreams: [{ name: 'bad', base_url: bad.url }] },
      { replace: true },
    );
    const err = await s.invoke('e', 'POST', {}).catch((e) => e);
    expect(err.upstreams[0]).toMatchObject({ outcome: 'invalid_response', status: 200 });
    expect(err.upstreams[0].error).toMatch(/answer fails the response model: response\.temp: .*expected number/);
  });
});

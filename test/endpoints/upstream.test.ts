import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { UpstreamDefinitionInput } from '../../core/endpoints/schemas.js';
import { EndpointService } from '../../core/endpoints/service.js';
import { backoff, joinUrl, MAX_ANSWER_BYTES, parseRetryAfter } from '../../core/endpoints/upstream.js';
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

/** Answers with `statuses` in turn, then 200 {ok:true}. */
function sequence(statuses: Array<number | [number, Record<string, string>]>): Handler {
  let i = 0;
  return (_req, res) => {
    const next = statuses[i++];
    if (next === undefined) return json(res, 200, { ok: true });
    const [status, headers] = Array.isArray(next) ? next : [next, {}];
    json(res, status, { error: 'try later' }, headers);
  };
}

function one(up: Partial<UpstreamDefinitionInput> & { base_url: string }, methods: string[] = ['POST', 'GET', 'PUT']) {
  const registry = new Registry();
  const s = new EndpointService({ metrics: registry });
  s.register({ name: 'e', methods, upstreams: [{ name: 'u', retry_backoff_ms: 10, ...up }] });
  return { s, registry };
}

describe('retries', () => {
  it('retries an idempotent call on 503 and succeeds, counting attempts and the retry metric', async () => {
    const up = await upstream(sequence([503, 502]));
    const { s, registry } = one({ base_url: up.url });
    const result = await s.invoke('e', 'GET', {});
    expect(result.success).toBe(true);
    expect(result.upstreams[0]).toMatchObject({ attempts: 3, status: 200 });
    expect(up.received).toHaveLength(3);
    expect(await registry.getSingleMetricAsString('platform_upstream_retries_total')).toContain(
      'platform_upstream_retries_total{endpoint="e",upstream="u",method="GET"} 2',
    );
  });

  it('never retries POST by default: a replay could act twice', async () => {
    const up = await upstream(sequence([503]));
    const { s } = one({ base_url: up.url });
    const err = await s.invoke('e', 'POST', {}).catch((e) => e);
    expect(err.status).toBe(502);
    expect(up.received).toHaveLength(1);
    expect(err.upstreams[0]).toMatchObject({ attempts: 1, status: 503, outcome: 'http_error' });
  });

  it('retries POST when retry_non_idempotent is set', async () => {
    const up = await upstream(sequence([503]));
    const { s } = one({ base_url: up.url, retry_non_idempotent: true });
    expect((await s.invoke('e', 'POST', {})).upstreams[0].attempts).toBe(2);
  });

  it('does not retry a 4xx other than 408/425/429', async () => {
    const up = await upstream(sequence([404]));
    const { s } = one({ base_url: up.url });
    await expect(s.invoke('e', 'GET', {})).rejects.toMatchObject({ status: 502 });
    expect(up.received).toHaveLength(1);
  });

  it('gives up after `retries` retries and says how many attempts were made', async () => {
    const up = await upstream(sequence([500, 500, 500, 500]));
    const { s } = one({ base_url: up.url, retries: 2 });
    const err = await s.invoke('e', 'PUT', {}).catch((e) => e);
    expect(err.upstreams[0]).toMatchObject({ attempts: 3, status: 500 });
    expect(err.upstreams[0].error).toMatch(/^HTTP 500: .* \(after 3 attempts\)$/);
    expect(up.received).toHaveLength(3);
    expect(err.status).toBe(502); // an upstream that answered wrong: not a timeout
  });

  it('waits as long as Retry-After asks (seconds form) before retrying', async () => {
    const up = await upstream(sequence([[429, { 'retry-after': '1' }]]));
    const { s } = one({ base_url: up.url, retry_backoff_ms: 1 });
    const started = Date.now();
    const result = await s.invoke('e', 'GET', {});
    expect(result.success).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('reports instead of waiting when Retry-After exceeds retry_max_backoff_ms', async () => {
    const up = await upstream(sequence([[503, { 'retry-after': '120' }]]));
    const { s } = one({ base_url: up.url, retry_max_backoff_ms: 2_000 });
    const started = Date.now();
    const err = await s.invoke('e', 'GET', {}).catch((e) => e);
    expect(Date.now() - started).toBeLessThan(10_000); // not the 120 s asked for
    expect(err.upstreams[0].error).toContain('Retry-After 120 s exceeds retry_max_backoff_ms');
    expect(up.received).toHaveLength(1);
  });

  it('backoff doubles per retry, is capped, and jitters within ±50 %', () => {
    const u = { retry_backoff_ms: 100, retry_max_backoff_ms: 1_000 };
    expect(backoff(u, 1, () => 0.5)).toBe(100);
    expect(backoff(u, 2, () => 0.5)).toBe(200);
    expect(backoff(u, 3, () => 0)).toBe(200);
    expect(backoff(u, 3, () => 0.999)).toBe(600);
    expect(backoff(u, 10, () => 0.5)).toBe(1_000);
  });

  it('parses both Retry-After forms', () => {
    expect(parseRetryAfter('3')).toBe(3_000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter(null)).toBeNull();
  });
});

describe('timeouts and bad answers', () => {
  it('cuts an upstream that hangs at its timeout_ms (and retries it like any transient failure)', async () => {
    const up = await upstream(() => {
      /* never answers */
    });
    const { s } = one({ base_url: up.url, timeout_ms: 150, retries: 1 });
    const started = Date.now();
    const err = await s.invoke('e', 'GET', {}).catch((e) => e);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(5_000); // the upstream never answers: only the timeout ends this
    expect(err.upstreams[0]).toMatchObject({ outcome: 'timeout', status: null, attempts: 2 });
    expect(err.upstreams[0].error).toBe('timed out after 150 ms (after 2 attempts)');
    // Every failed upstream timed out: a gateway timeout, not a bad answer.
    expect(err.status).toBe(504);
  });

  it('cuts an upstream that sends headers and then stalls the body', async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"partial":');
    });
    const { s } = one({ base_url: up.url, timeout_ms: 150, retries: 0 });
    const err = await s.invoke('e', 'GET', {}).catch((e) => e);
    expect(err.upstreams[0]).toMatchObject({ outcome: 'timeout' });
  });

  it('cuts an answer larger than MAX_ANSWER_BYTES and reports it, keeping the server whole', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    const up = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      for (let i = 0; i <= MAX_ANSWER_BYTES / chunk.length; i++) res.write(chunk);
      res.end('{}');
    });
    const { s } = one({ base_url: up.url, retries: 0 });
    const err = await s.invoke('e', 'GET', {}).catch((e) => e);
    expect(err.status).toBe(502);
    expect(err.upstreams[0]).toMatchObject({ outcome: 'network_error', error: `answer larger than ${MAX_ANSWER_BYTES} bytes` });
  });

  it('reports a header value node refuses (a control character from the environment) without its value', async () => {
    const up = await upstream(fixed({}));
    const s = new EndpointService({ metrics: new Registry(), env: () => ({ TENANT: 'acme\r\nx-injected: 1' }) });
    s.register({
      name: 'e',
      methods: ['GET'],
      upstreams: [{ name: 'u', base_url: up.url, retries: 0, headers: { 'x-tenant': '${TENANT}' } }],
    });
    const err = await s.invoke('e', 'GET', {}).catch((e) => e);
    expect(err.upstreams[0]).toMatchObject({ outcome: 'network_error', status: null });
    expect(err.upstreams[0].error).toContain('x-tenant');
    expect(JSON.stringify(err.toBody())).not.toContain('acme');
    expect(up.received).toHaveLength(0);
  });

  it('reports invalid JSON per upstream without failing the others', async () => {
    const bad = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{not json');
    });
    const good = await upstream(fixed({ fine: true }));
    const s = new EndpointService({ metrics: new Registry() });
    s.register({
      name: 'e',
      upstreams: [
        { name: 'bad', base_url: bad.url },
        { name: 'good', base_url: good.url },
      ],
    });
    const err = await s.invoke('e', 'POST', {}).catch((e) => e);
    expect(err.upstreams).toMatchObject([
      { name: 'bad', outcome: 'invalid_response', status: 200, error: 'HTTP 200 answer is not valid JSON: {not json' },
      { name: 'good', ok: true },
    ]);
  });

  it('reports a refused connection as a network error', async () => {
    const up = await upstream(fixed({}));
    await up.close();
    const { s } = one({ base_url: up.url, retries: 0 });
    const err = await s.invoke('e', 'GET', {}).catch((e) => e);
    expect(err.upstreams[0]).toMatchObject({ outcome: 'network_error', status: null });
    expect(err.upstreams[0].error).toContain('ECONNREFUSED');
  });
});

describe('what is sent upstream', () => {
  it('POST input goes as a JSON body to base_url + path; GET input as query parameters', async () => {
    const up = await upstream(fixed({}));
    const { s } = one({ base_url: `${up.url}/v1/`, path: '/items' });
    await s.invoke('e', 'POST', { a: 1, tags: ['x'] });
    await s.invoke('e', 'GET', { a: 1, tags: ['x', 'y'], where: { k: 'v' }, none: null });
    expect(up.received[0]).toMatchObject({ method: 'POST', path: '/v1/items', body: '{"a":1,"tags":["x"]}' });
    expect(up.received[0].headers['content-type']).toBe('application/json');
    expect(up.received[1]).toMatchObject({ method: 'GET', path: '/v1/items', body: '' });
    expect([...up.received[1].query]).toEqual([
      ['a', '1'],
      ['tags', 'x'],
      ['tags', 'y'],
      ['where', '{"k":"v"}'],
    ]);
  });

  it('an upstream method overrides the incoming one, and HEAD reads with GET', async () => {
    const up = await upstream(fixed({ v: 1 }));
    const s = new EndpointService({ metrics: new Registry() });
    s.register({
      name: 'e',
      methods: ['GET'],
      upstreams: [
        { name: 'u', base_url: up.url },
        { name: 'p', base_url: up.url, method: 'post' },
      ],
    });
    const result = await s.invoke('e', 'HEAD', {});
    expect(result.success).toBe(true);
    expect(up.received.map((r) => r.method).sort()).toEqual(['GET', 'POST']);
  });

  it('joins base and path with one slash', () => {
    expect(joinUrl('http://h/a/', '/b')).toBe('http://h/a/b');
    expect(joinUrl('http://h/a', 'b?x=1')).toBe('http://h/a/b?x=1');
    expect(joinUrl('http://h/a', '')).toBe('http://h/a');
  });
});

import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { coerceQuery } from '../../core/endpoints/query.js';
import { EndpointService } from '../../core/endpoints/service.js';
import { fixed, json, type Loopback, startLoopback, startRoutes } from './loopback.js';

const Search = z.object({
  q: z.string(),
  tags: z.array(z.string()).default([]),
  ids: z.array(z.number().int()).optional(),
  limit: z.number().int().max(50).default(10),
  exact: z.boolean().default(false),
  where: z.object({ city: z.string(), min: z.number() }).optional(),
  zip: z.string().optional(),
  mode: z.union([z.literal('fast'), z.literal('slow')]).optional(),
});

let upstream: Loopback;
let api: Loopback;
let service: EndpointService;
const logs: string[] = [];

beforeEach(async () => {
  // The upstream echoes what it received so the tests can see the coerced, validated input.
  upstream = await startLoopback((req, res) =>
    json(res, 200, {
      method: req.method,
      query: Object.fromEntries([...new Set(req.query.keys())].map((k) => [k, req.query.getAll(k)])),
      body: req.body ? JSON.parse(req.body) : null,
    }),
  );
  service = new EndpointService({ metrics: new Registry() });
  service.register({
    name: 'search',
    description: 'Search two ways',
    path: '/find',
    methods: ['GET', 'POST', 'put'],
    aggregation: 'FIRST_SUCCESS',
    request: Search,
    upstreams: [{ name: 'echo', base_url: upstream.url, method: 'POST' }],
  });
  api = await startRoutes(service, logs);
});
afterEach(async () => {
  await api.close();
  await upstream.close();
});

const get = (path: string, init?: RequestInit) => fetch(api.url + path, init);
const read = (res: Response): Promise<any> => res.json();
const echoed = async (res: Response) => (await read(res)).aggregated.body;

describe('GET input from query parameters', () => {
  it('coerces repeated parameters to arrays, numbers, booleans and URL-encoded JSON objects', async () => {
    const where = encodeURIComponent(JSON.stringify({ city: 'Oslo', min: 3 }));
    const res = await get(`/api/v1/endpoints/search/find?q=rain&tags=a&tags=b&ids=1&ids=2&limit=5&exact=true&where=${where}&zip=01234`);
    expect(res.status).toBe(200);
    expect(await echoed(res)).toEqual({
      q: 'rain',
      tags: ['a', 'b'],
      ids: [1, 2],
      limit: 5,
      exact: true,
      where: { city: 'Oslo', min: 3 },
      zip: '01234', // a string field keeps its leading zero
    });
  });

  it('applies the same model as the POST body (defaults included)', async () => {
    const viaGet = await echoed(await get('/api/v1/endpoints/search/find?q=x&tags=solo'));
    const viaPost = await echoed(
      await get('/api/v1/endpoints/search/find', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ q: 'x', tags: ['solo'] }),
      }),
    );
    expect(viaGet).toEqual({ q: 'x', tags: ['solo'], limit: 10, exact: false });
    expect(viaPost).toEqual(viaGet);
  });

  it('answers 422 naming the query parameter that fails', async () => {
    const tooBig = await get('/api/v1/endpoints/search/find?q=x&limit=500');
    expect(tooBig.status).toBe(422);
    expect((await read(tooBig)).detail).toMatch(/^query\.limit: /);

    const notNumber = await get('/api/v1/endpoints/search/find?q=x&ids=1&ids=two');
    expect((await read(notNumber)).detail).toMatch(/^query\.ids\.1: .*expected number/);

    const badJson = await get('/api/v1/endpoints/search/find?q=x&where=%7Bnope');
    expect((await read(badJson)).detail).toMatch(/^query\.where: .*expected object/);

    const missing = await get('/api/v1/endpoints/search/find');
    expect((await read(missing)).detail).toMatch(/^query\.q: /);

    const twice = await get('/api/v1/endpoints/search/find?q=a&q=b');
    expect((await read(twice)).detail).toMatch(/^query\.q: .*expected string, received array/);
  });

  it('answers 422 naming the body field for write methods', async () => {
    const res = await get('/api/v1/endpoints/search/find', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ q: 1 }),
    });
    expect(res.status).toBe(422);
    expect((await read(res)).detail).toMatch(/^body\.q: /);
  });

  it('HEAD is served wherever GET is: same status, no body', async () => {
    const res = await get('/api/v1/endpoints/search/find?q=x', { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
    expect(res.headers.get('content-type')).toContain('application/json');
  });

  it('answers 405 with Allow for an undeclared method, and OPTIONS lists them', async () => {
    const res = await get('/api/v1/endpoints/search/find', { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST, PUT');
    const options = await get('/api/v1/endpoints/search/find', { method: 'OPTIONS' });
    expect(options.status).toBe(204);
    expect(options.headers.get('allow')).toBe('GET, HEAD, POST, PUT, OPTIONS');
  });

  it('answers 404 for an unknown endpoint or sub-path', async () => {
    expect((await get('/api/v1/endpoints/nope/find')).status).toBe(404);
    const res = await get('/api/v1/endpoints/search/elsewhere');
    expect(res.status).toBe(404);
    expect((await read(res)).detail).toContain("endpoint 'search' has no route /elsewhere");
  });
});

describe('list, info and health', () => {
  it('lists every endpoint', async () => {
    const body = await read(await get('/api/v1/endpoints'));
    expect(body.endpoints).toEqual([
      {
        name: 'search',
        description: 'Search two ways',
        version: '0.0.0',
        path: '/find',
        methods: ['GET', 'POST', 'PUT'],
        aggregation: 'FIRST_SUCCESS',
        custom_handler: false,
        upstreams: ['echo'],
        url: '/api/v1/endpoints/search/find',
        router: false,
      },
    ]);
  });

  it('info describes routes, upstreams and schemas', async () => {
    const info = await read(await get('/api/v1/endpoints/search/info'));
    expect(info.routes).toEqual({
      main: '/api/v1/endpoints/search/find',
      health: '/api/v1/endpoints/search/health',
      info: '/api/v1/endpoints/search/info',
    });
    expect(info.upstreams[0]).toMatchObject({ name: 'echo', method: 'POST', weight: 1, timeout_ms: 10_000, retries: 2, auth: null });
    expect(info.input_schema.properties.tags).toEqual({ default: [], type: 'array', items: { type: 'string' } });
  });

  it('health is 200 when ready and 503 with the failing upstream when not', async () => {
    const ok = await get('/api/v1/endpoints/search/health');
    expect(ok.status).toBe(200);
    expect(await read(ok)).toMatchObject({ name: 'search', ready: true, upstreams: [{ name: 'echo', ready: true, status: 200 }] });

    await upstream.close();
    const down = await get('/api/v1/endpoints/search/health');
    expect(down.status).toBe(503);
    const body = await read(down);
    expect(body).toMatchObject({
      ready: false,
      rule: 'FIRST_SUCCESS: at least one upstream must be ready',
      upstreams: [{ name: 'echo', ready: false, status: null }],
    });
    expect(body.upstreams[0].error).toContain('ECONNREFUSED');
  });

  it('ALL is ready only when every upstream is; a health_path must answer 2xx', async () => {
    const good = await startLoopback(fixed({}));
    const noHealth = await startLoopback((req, res) => (req.path === '/healthz' ? json(res, 404, {}) : json(res, 200, {})));
    try {
      service.register({
        name: 'both',
        upstreams: [
          { name: 'good', base_url: good.url, path: '/missing' },
          { name: 'strict', base_url: noHealth.url, health_path: '/healthz' },
        ],
      });
      const res = await get('/api/v1/endpoints/both/health');
      expect(res.status).toBe(503);
      expect((await read(res)).upstreams).toMatchObject([
        { name: 'good', ready: true },
        { name: 'strict', ready: false, status: 404, error: 'HTTP 404' },
      ]);
    } finally {
      await good.close();
      await noHealth.close();
    }
  });
});

describe('coerceQuery', () => {
  it('keeps strings when there is no model, grouping repeats into arrays', () => {
    expect(coerceQuery(undefined, new URLSearchParams('a=1&b=2&b=3'))).toEqual({ a: '1', b: ['2', '3'] });
  });

  it('reads unions and enums: a numeric-or-boolean field coerces, a nullable one reads null', () => {
    const model = z.object({ n: z.union([z.number(), z.boolean()]), m: z.number().nullable(), e: z.enum(['1', '2']) });
    expect(coerceQuery(model, new URLSearchParams('n=false&m=null&e=1'))).toEqual({ n: false, m: null, e: '1' });
    expect(coerceQuery(model, new URLSearchParams('n=4.5&m=7'))).toEqual({ n: 4.5, m: 7 });
  });
});

describe('request ids', () => {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

  it("forwards the caller's X-Request-Id to the upstream and answers it back", async () => {
    const res = await get('/api/v1/endpoints/search/find?q=rain', { headers: { 'x-request-id': 'trace-42/a' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('trace-42/a');
    expect(upstream.received.map((r) => r.headers['x-request-id'])).toEqual(['trace-42/a']);
  });

  it('makes a fresh UUID when the caller sends none, or one that is not short printable ASCII', async () => {
    const ids: string[] = [];
    for (const given of [undefined, 'has space', 'x'.repeat(129)]) {
      const res = await get('/api/v1/endpoints/search/find?q=rain', given === undefined ? {} : { headers: { 'x-request-id': given } });
      expect(res.status).toBe(200);
      const id = res.headers.get('x-request-id')!;
      expect(id).toMatch(UUID);
      ids.push(id);
    }
    expect(new Set(ids).size).toBe(3);
    expect(upstream.received.map((r) => r.headers['x-request-id'])).toEqual(ids);
  });

  it('answers the id on errors too, and names it in the failure log line', async () => {
    const missing = await get('/api/v1/endpoints/nothing-here', { headers: { 'x-request-id': 'lost-1' } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-request-id')).toBe('lost-1');

    const warned: Array<Record<string, unknown> | undefined> = [];
    const logged = new EndpointService({ metrics: new Registry(), log: { warn: (_message, fields) => warned.push(fields) } });
    logged.register({ name: 'down', methods: ['GET'], upstreams: [{ name: 'gone', base_url: upstream.url, retries: 0 }] });
    const downApi = await startRoutes(logged);
    await upstream.close();
    try {
      const failed = await fetch(`${downApi.url}/api/v1/endpoints/down`, { headers: { 'x-request-id': 'down-7' } });
      expect(failed.status).toBe(502);
      expect(failed.headers.get('x-request-id')).toBe('down-7');
      expect(warned).toEqual([expect.objectContaining({ endpoint: 'down', request_id: 'down-7' })]);
    } finally {
      await downApi.close();
    }
  });
});

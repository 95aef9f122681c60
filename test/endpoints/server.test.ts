import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startTestServer, type TestServer } from '../support/server.js';
import { json, type Loopback, startLoopback, startTokenServer } from './loopback.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const example = (name: string) => readFile(path.join(repo, 'endpoints', `${name}.ts`), 'utf8');

let server: TestServer | undefined;
const open: Loopback[] = [];
const envKeys: string[] = [];
afterEach(async () => {
  await server?.stop();
  server = undefined;
  await Promise.all(open.splice(0).map((l) => l.close()));
  for (const key of envKeys.splice(0)) delete process.env[key];
});
function setEnv(values: Record<string, string>) {
  Object.assign(process.env, values);
  envKeys.push(...Object.keys(values));
}
async function loopback<T extends Loopback>(p: Promise<T>): Promise<T> {
  const l = await p;
  open.push(l);
  return l;
}

describe('the shipped examples, discovered from endpoints/', () => {
  it('weather: ALL over two authenticated providers, by GET query and by POST body', async () => {
    const cityOf = (req: { method: string; query: URLSearchParams; body: string }) =>
      req.method === 'GET' ? req.query.get('city') : JSON.parse(req.body).city;
    const a = await loopback(
      startLoopback((req, res) =>
        req.headers['x-api-key'] === 'key-a' ? json(res, 200, { city: cityOf(req), temp_c: 4.5, conditions: 'rain' }) : json(res, 401, {}),
      ),
    );
    const b = await loopback(
      startLoopback((req, res) => {
        if (req.headers.authorization !== 'Bearer token-b') return json(res, 401, {});
        json(res, 200, { city: cityOf(req), temp_c: 5, conditions: 'drizzle' });
      }),
    );
    setEnv({ WEATHER_A_URL: a.url, WEATHER_A_KEY: 'key-a', WEATHER_B_URL: b.url, WEATHER_B_TOKEN: 'token-b' });
    server = await startTestServer({ files: { 'endpoints/weather.ts': await example('weather') } });

    const viaGet = await server.request('/api/v1/endpoints/weather/current?city=Oslo');
    expect(viaGet.status).toBe(200);
    expect(viaGet.body.aggregated).toEqual({
      provider_a: { city: 'Oslo', temp_c: 4.5, conditions: 'rain' },
      provider_b: { city: 'Oslo', temp_c: 5, conditions: 'drizzle' },
    });
    expect(a.received[0]).toMatchObject({ method: 'GET', path: '/v1/current' });
    expect(a.received[0].query.get('units')).toBe('metric');

    const viaPost = await server.request('/api/v1/endpoints/weather/current', { method: 'POST', json: { city: 'Bergen' } });
    expect(viaPost.body.aggregated.provider_b.city).toBe('Bergen');

    const bad = await server.request('/api/v1/endpoints/weather/current?city=Oslo&units=kelvin');
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toMatch(/^query\.units: /);

    const health = await server.request('/api/v1/endpoints/weather/health');
    expect(health.status).toBe(200);
  });

  it('quote: custom logic calls FX only when needed, through OAuth2', async () => {
    const catalog = await loopback(
      startLoopback((req, res) =>
        req.headers['x-catalog-key'] === 'cat-key' ? json(res, 200, { sku: req.query.get('sku'), price_usd: 10 }) : json(res, 401, {}),
      ),
    );
    const tokens = await loopback(startTokenServer({ clientId: 'fx-client', clientSecret: 'fx-secret' }));
    const fx = await loopback(
      startLoopback((req, res) =>
        req.headers.authorization === 'Bearer tok-1'
          ? json(res, 200, { base: req.query.get('base'), quote: req.query.get('quote'), rate: 0.9 })
          : json(res, 401, {}),
      ),
    );
    setEnv({
      CATALOG_URL: catalog.url,
      CATALOG_KEY: 'cat-key',
      FX_URL: fx.url,
      FX_TOKEN_URL: tokens.url,
      FX_CLIENT_ID: 'fx-client',
      FX_CLIENT_SECRET: 'fx-secret',
    });
    server = await startTestServer({ files: { 'endpoints/quote.ts': await example('quote') } });

    const usd = await server.request('/api/v1/endpoints/quote', { method: 'POST', json: { sku: 'A-1', quantity: 3 } });
    expect(usd.status).toBe(200);
    expect(usd.body).toMatchObject({
      success: true,
      aggregated: { sku: 'A-1', quantity: 3, currency: 'USD', unit_price: 10, total: 30, rate: 1 },
      upstreams: [{ name: 'catalog', ok: true }],
    });
    expect(fx.received).toHaveLength(0);

    const eur = await server.request('/api/v1/endpoints/quote', { method: 'POST', json: { sku: 'A-1', quantity: 3, currency: 'eur' } });
    expect(eur.body.aggregated).toEqual({ sku: 'A-1', quantity: 3, currency: 'EUR', unit_price: 9, total: 27, rate: 0.9 });
    expect(eur.body.upstreams.map((u: { name: string }) => u.name)).toEqual(['catalog', 'fx']);
    expect(tokens.requests()).toBe(1);

    // The FX service failing is a 502 naming it, with the per-upstream results.
    await fx.close();
    const down = await server.request('/api/v1/endpoints/quote', { method: 'POST', json: { sku: 'A-1', currency: 'EUR' } });
    expect(down.status).toBe(502);
    expect(down.body.detail).toContain("upstream 'fx' network_error");
    expect(down.body.upstreams.map((u: { name: string; ok: boolean }) => [u.name, u.ok])).toEqual([
      ['catalog', true],
      ['fx', false],
    ]);
  });
});

describe('in the server', () => {
  const source = (methods: string) => `import { defineEndpoint, z } from 'hangar';
export default defineEndpoint({
  description: 'echo',
  path: '/run',
  methods: ${methods},
  request: z.object({ n: z.number(), tags: z.array(z.string()).optional() }),
  response: z.object({ ok: z.boolean() }),
  aggregation: 'FIRST_SUCCESS',
  upstreams: [{ name: 'u', base_url: '\${HANGAR_T_ECHO}' }],
});
`;

  it('publishes every method with its live input and output schema in /openapi.json, following hot reloads', async () => {
    const up = await loopback(startLoopback((_req, res) => json(res, 200, { ok: true })));
    setEnv({ HANGAR_T_ECHO: up.url });
    server = await startTestServer({ files: { 'endpoints/echo.ts': source(`['GET', 'POST']`) } });

    let doc = (await server.request('/openapi.json')).body;
    const item = doc.paths['/api/v1/endpoints/echo/run'];
    expect(Object.keys(item).sort()).toEqual(['get', 'post']);
    expect(item.get.parameters).toEqual([
      { name: 'n', in: 'query', required: true, schema: { type: 'number' } },
      { name: 'tags', in: 'query', required: false, schema: { type: 'array', items: { type: 'string' } } },
    ]);
    expect(item.get.requestBody).toBeUndefined();
    expect(item.post.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      properties: { n: { type: 'number' } },
      required: ['n'],
    });
    for (const op of [item.get, item.post]) {
      const ok = op.responses['200'].content['application/json'].schema;
      expect(ok.properties.aggregated).toMatchObject({
        anyOf: [{ type: 'object', properties: { ok: { type: 'boolean' } } }, { type: 'null' }],
      });
      expect(ok.properties.upstreams.type).toBe('array');
      expect(op.responses['422']).toBeDefined();
      expect(op.responses['502']).toBeDefined();
    }
    expect(doc.paths['/api/v1/endpoints/echo/health'].get).toBeDefined();
    expect(doc.paths['/api/v1/endpoints/echo/info'].get).toBeDefined();
    expect(doc.paths['/api/v1/endpoints'].get).toBeDefined();

    await server.write('endpoints/echo.ts', source(`['PUT', 'DELETE', 'HEAD']`));
    doc = await eventually(async () => {
      const d = (await server!.request('/openapi.json')).body;
      return d.paths['/api/v1/endpoints/echo/run']?.put ? d : undefined;
    });
    expect(Object.keys(doc.paths['/api/v1/endpoints/echo/run']).sort()).toEqual(['delete', 'head', 'put']);
    expect((await server.request('/api/v1/endpoints/echo/run?n=1')).status).toBe(405);
    const put = await server.request('/api/v1/endpoints/echo/run', { method: 'PUT', json: { n: 1 } });
    expect(put.body).toMatchObject({ success: true, aggregated: { ok: true } });

    await rm(path.join(server.root, 'endpoints/echo.ts'));
    await eventually(async () => (await server!.request('/api/v1/endpoints/echo/info')).status === 404);
    expect((await server.request('/openapi.json')).body.paths['/api/v1/endpoints/echo/run']).toBeUndefined();
  });

  it('keeps serving the last good version of a broken drop-in and reports the error', async () => {
    const up = await loopback(startLoopback((_req, res) => json(res, 200, { ok: true })));
    setEnv({ HANGAR_T_ECHO: up.url });
    server = await startTestServer({ files: { 'endpoints/echo.ts': source(`['POST']`) } });
    await server.write('endpoints/echo.ts', source(`['POST']`).replace("aggregation: 'FIRST_SUCCESS'", "aggregation: 'SOME'"));
    const problem = await eventually(async () => (await server!.request('/api/v1/status')).body.errors?.[0]);
    expect(problem).toMatchObject({ kind: 'endpoint', entry: 'endpoints/echo.ts' });
    expect(problem.message).toContain('aggregation');
    expect((await server.request('/api/v1/endpoints/echo/run', { method: 'POST', json: { n: 1 } })).status).toBe(200);
  });

  it('accepts endpoints registered in code, and counts calls in /metrics', async () => {
    const up = await loopback(startLoopback((_req, res) => json(res, 200, { v: 1 })));
    server = await startTestServer();
    server.ctx.services.get('endpoints').register({ name: 'coded', upstreams: [{ name: 'u', base_url: up.url }] });
    expect((await server.request('/api/v1/endpoints')).body.endpoints.map((e: { name: string }) => e.name)).toEqual(['coded']);
    expect((await server.request('/openapi.json')).body.paths['/api/v1/endpoints/coded'].post).toBeDefined();
    await server.request('/api/v1/endpoints/coded', { method: 'POST', json: {} });
    await server.request('/api/v1/endpoints/coded', { method: 'POST', json: {} });

    const metrics = (await server.request('/metrics')).text;
    expect(metrics).toContain('platform_endpoint_calls_total{endpoint="coded",method="POST",outcome="success"} 2');
    expect(metrics).toMatch(/platform_endpoint_duration_seconds_count\{endpoint="coded",method="POST",outcome="success"\} 2/);
    expect(metrics).toContain('platform_upstream_calls_total{endpoint="coded",upstream="u",method="POST",outcome="success"} 2');
    expect(metrics).toMatch(
      /platform_upstream_duration_seconds_bucket\{le="[^"]+",endpoint="coded",upstream="u",method="POST",outcome="success"\}/,
    );
  });
});

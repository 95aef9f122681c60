/**
 * express routers as endpoint drop-ins (issue #21, item 5): mounted under
 * /api/v1/endpoints/{name}/ behind Hangar's security hooks, counted in metrics and the invocation
 * log, and hot-reloaded like any drop-in.
 */
import { readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPRESS_EXPORTS, expressForDropIns } from '../../core/endpoints/router.js';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

const TOKEN = 'router-test-token-123';
const auth = { authorization: `Bearer ${TOKEN}` };

const example = () => readFile(path.join(import.meta.dirname, '../../endpoints/notes-router.ts'), 'utf8');

/** A router whose answers say which version of the file served them. */
const versioned = (version: string) => `
import express from 'express';
const router = express.Router();
router.get('/version', (_req, res) => { res.json({ version: '${version}' }); });
router.get('/items/:id', (req, res) => { res.json({ id: req.params.id, q: req.query.q ?? null, base: req.baseUrl, original: req.originalUrl }); });
router.get('/boom', () => { throw new Error('the router broke'); });
router.get('/later', (_req, _res, next) => { Promise.resolve().then(() => next(new Error('async failure'))); });
router.get('/half', (_req, res, next) => { res.status(200).type('json'); res.write('{"partial":'); next(new Error('cut off')); });
export default router;
`;

/** A whole express app, with its own express.json(): Hangar has read the body already, so it passes. */
const wholeApp = `
import express from 'express';
const app = express();
app.use(express.json());
app.post('/echo', (req, res) => { res.json({ received: req.body, type: req.get('content-type') }); });
export default app;
`;

/** The same folder also holds a declarative endpoint, which must keep its exact behaviour. */
const declared = `
import { defineEndpoint, z } from 'hangar';
export default defineEndpoint({
  path: '/add',
  request: z.object({ a: z.number(), b: z.number() }),
  handler: (input) => ({ sum: input.a + input.b }),
});
`;

describe('an express Router exported by an endpoint drop-in', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      files: {
        'endpoints/notes-router.ts': await example(),
        'endpoints/versioned.ts': versioned('1'),
        'endpoints/sum.ts': declared,
        'endpoints/whole-app.ts': wholeApp,
      },
      settings: { auth: { tokens: { alice: TOKEN } }, logs: { enabled: true } },
    });
  });
  afterAll(() => server?.stop());

  const get = (p: string) => server.request(p, { headers: auth });
  const post = (p: string, json: unknown, headers: Record<string, string> = {}) =>
    server.request(p, { method: 'POST', json, headers: { ...auth, ...headers } });

  it('reaches the router with its params, query and JSON body, and the caller as req.principal', async () => {
    const created = await post('/api/v1/endpoints/notes-router/notes', { text: 'buy milk' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: 1, text: 'buy milk', author: 'alice' });
    expect(created.headers.get('location')).toBe('/api/v1/endpoints/notes-router/notes/1');
    expect(created.headers.get('x-request-id')).toBeTruthy();
    await post('/api/v1/endpoints/notes-router/notes', { text: 'call Bob' });

    const one = await get('/api/v1/endpoints/notes-router/notes/1');
    expect(one.status).toBe(200);
    expect(one.body.text).toBe('buy milk');
    const filtered = await get('/api/v1/endpoints/notes-router/notes?q=bob');
    expect(filtered.body.notes.map((n: { text: string }) => n.text)).toEqual(['call Bob']);
    const refused = await post('/api/v1/endpoints/notes-router/notes', { text: '' });
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({ detail: 'body.text: a non-empty string is required' });

    const item = await get('/api/v1/endpoints/versioned/items/42?q=x');
    expect(item.body).toEqual({
      id: '42',
      q: 'x',
      base: '/api/v1/endpoints/versioned',
      original: '/api/v1/endpoints/versioned/items/42?q=x',
    });
  });

  it('mounts a whole express app too; its express.json() finds the body Hangar parsed', async () => {
    const res = await post('/api/v1/endpoints/whole-app/echo', { nested: { list: [1, 2] } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: { nested: { list: [1, 2] } }, type: 'application/json' });
  });

  it('runs behind the token check: no token is 401 before the router runs', async () => {
    const before = (await get('/api/v1/endpoints/notes-router/notes')).body.notes.length;
    const res = await server.request('/api/v1/endpoints/notes-router/notes', { method: 'POST', json: { text: 'sneaky' } });
    expect(res.status).toBe(401);
    expect(res.body.detail).toBeTruthy();
    expect((await get('/api/v1/endpoints/notes-router/notes')).body.notes.length).toBe(before);
  });

  it('runs behind the cross-site guard: a cross-site POST is 403', async () => {
    const res = await post(
      '/api/v1/endpoints/notes-router/notes',
      { text: 'csrf' },
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    );
    expect(res.status).toBe(403);
    expect(res.body.detail).toContain('cross-origin');
  });

  it('answers an unmatched path with 404 {detail}, and a thrown or passed-on error with 500 {detail} and no stack', async () => {
    const missing = await get('/api/v1/endpoints/versioned/nothing-here');
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toBe("endpoint 'versioned' has no route for GET /nothing-here");

    for (const route of ['boom', 'later']) {
      const res = await get(`/api/v1/endpoints/versioned/${route}`);
      expect(res.status).toBe(500);
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(res.body.detail).toMatch(/^endpoint 'versioned' router failed: (the router broke|async failure)$/);
      expect(res.body).not.toHaveProperty('stack');
      expect(res.text).not.toMatch(/\n\s+at /);
    }
    expect((await get('/api/v1/endpoints/versioned/boom')).body).toMatchObject({ file: 'endpoints/versioned.ts', line: 6 });
    // Failing after the status line went out: the only honest answer left is a cut connection.
    await expect(get('/api/v1/endpoints/versioned/half')).rejects.toThrow();
  });

  it('is counted in the endpoint metrics and recorded in the invocation log', async () => {
    await get('/api/v1/endpoints/versioned/version');
    const metrics = (await get('/metrics')).text;
    expect(metrics).toMatch(/platform_endpoint_calls_total\{endpoint="versioned",method="GET",outcome="success"\} \d+/);
    expect(metrics).toMatch(/platform_endpoint_calls_total\{endpoint="versioned",method="GET",outcome="handler_error"\} \d+/);
    const page = await eventually(async () => {
      const { body } = await get('/api/v1/logs?resource=endpoint&name=notes-router');
      return body.logs?.some((r: { operation: string }) => r.operation === 'POST /notes') ? body : undefined;
    });
    const record = page.logs.find((r: { input?: { text?: string } }) => r.input?.text === 'buy milk');
    expect(record).toMatchObject({
      operation: 'POST /notes',
      principal: 'alice',
      status: 'ok',
      http_status: 201,
      output: { id: 1, text: 'buy milk' },
    });
  });

  it('publishes the routes the router declares in /openapi.json, path parameters included', async () => {
    const { paths } = (await get('/openapi.json')).body;
    expect(Object.keys(paths['/api/v1/endpoints/notes-router/notes']).sort()).toEqual(['get', 'post']);
    expect(paths['/api/v1/endpoints/notes-router/notes/{id}'].get.parameters).toEqual([
      { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
    ]);
    expect(paths['/api/v1/endpoints/sum/add'].post).toBeDefined();
  });

  it('is listed, and a declarative endpoint in the same folder works exactly as before', async () => {
    const list = (await get('/api/v1/endpoints')).body.endpoints;
    expect(list.find((e: { name: string }) => e.name === 'versioned')).toMatchObject({
      router: true,
      url: '/api/v1/endpoints/versioned',
      methods: [],
    });
    expect(list.find((e: { name: string }) => e.name === 'sum')).toMatchObject({ router: false, path: '/add', aggregation: 'ALL' });
    const sum = await post('/api/v1/endpoints/sum/add', { a: 2, b: 3 });
    expect(sum.status).toBe(200);
    expect(sum.body).toEqual({ success: true, aggregated: { sum: 5 }, upstreams: [] });
    expect((await get('/api/v1/endpoints/sum/info')).body.routes.main).toBe('/api/v1/endpoints/sum/add');
  });

  it('hot-reloads: a save swaps the router, a deletion removes its routes', async () => {
    expect((await get('/api/v1/endpoints/versioned/version')).body).toEqual({ version: '1' });
    await server.write('endpoints/versioned.ts', versioned('2'));
    await eventually(async () => (await get('/api/v1/endpoints/versioned/version')).body.version === '2');

    await rm(path.join(server.root, 'endpoints/versioned.ts'));
    const gone = await eventually(async () => {
      const res = await get('/api/v1/endpoints/versioned/version');
      return res.status === 404 ? res : undefined;
    });
    expect(gone.body.detail).toBe("endpoint 'versioned' not found");
    expect((await get('/api/v1/endpoints')).body.endpoints.map((e: { name: string }) => e.name)).not.toContain('versioned');
  });
});

describe('a router behind the control plane', () => {
  const CONTROL = 'router-control-token-123';
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      files: { 'endpoints/notes-router.ts': await example() },
      settings: { control: { enabled: true, token: CONTROL } },
    });
  });
  afterAll(() => server?.stop());

  const control = (p: string) =>
    server.request(`/api/v1/control${p}`, { method: 'POST', json: {}, headers: { 'x-control-token': CONTROL } });
  const add = (text: string) => server.request('/api/v1/endpoints/notes-router/notes', { method: 'POST', json: { text } });

  it('is refused with 503 while an operator disables it, before the router runs', async () => {
    expect((await control('/resources/endpoint/notes-router/disable')).status).toBe(200);
    const refused = await add('while disabled');
    expect(refused.status).toBe(503);
    expect(refused.body.detail).toContain('disabled');
    await control('/resources/endpoint/notes-router/enable');
    const created = await add('after');
    expect(created.status).toBe(201);
    // The refused call never reached the router: the first note it stored is this one.
    expect(created.body.id).toBe(1);
  });
});

describe('the express drop-ins import', () => {
  it("is express's default export and its exports, Router and Route the very objects express exports", () => {
    const express = createRequire(import.meta.url)('express') as Record<string, unknown>;
    const given = expressForDropIns() as Record<string, unknown> & (() => { handle: unknown });
    expect([...EXPRESS_EXPORTS].sort()).toEqual(Object.keys(express).sort());
    expect(given.Router).toBe(express.Router);
    expect(given.Route).toBe(express.Route);
    expect(given.json).toBe(express.json);
    expect(typeof given().handle).toBe('function');
    expect(expressForDropIns()).toBe(given);
  });
});

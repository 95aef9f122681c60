import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineRoute, mountRoutes, resourceCallOf } from '../../core/http/route.js';
import type { Subsystem } from '../../core/kernel/context.js';
import { fail } from '../../core/kernel/errors.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer | undefined;
afterEach(async () => server?.stop());

const KNOWN = new Set(['ada']);
let bodyParses = 0;

/** Routes declared as data, as every subsystem declares them (core/http/route.ts). */
const routes = [
  defineRoute({
    method: 'POST',
    url: '/t/:agent/greet',
    summary: 'Greet',
    tags: ['t'],
    schema: {
      params: z.object({ agent: z.string() }),
      body: z.object({ name: z.string().min(1) }),
      response: { 200: z.object({ text: z.string() }) },
    },
    config: { resource: { kind: 'agent', param: 'agent', operation: 'greet', invocation: true } },
    // The agent is checked before the body is read (not destructured: that would read it first), so an
    // unknown agent with a bad body is a 404.
    handler: (input) => {
      if (!KNOWN.has(input.params.agent)) throw fail('HANGAR_AGENT_NOT_FOUND', { agent: input.params.agent });
      return { text: `hello ${input.body.name}`, call: resourceCallOf(input.req) };
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/t/open',
    summary: 'Reachable without a token',
    config: { public: true },
    handler: () => ({ open: true }),
  }),
  defineRoute({ method: 'GET', url: '/t/closed', summary: 'Needs the token', handler: () => ({ open: false }) }),
  defineRoute({
    method: 'GET',
    url: '/t/method',
    summary: 'Says which method it was called with',
    handler: ({ req, reply }) => reply.header('x-method', req.method).send({ method: req.method }),
  }),
  defineRoute({
    method: 'POST',
    url: '/t/:agent/count',
    summary: 'Reads each input twice',
    schema: {
      params: z.object({ agent: z.string() }),
      querystring: z.object({ n: z.coerce.number() }),
      body: z.object({ name: z.string() }).transform((body) => ({ ...body, parsedAs: ++bodyParses })),
    },
    handler: (input) => {
      const { params, query, body } = input;
      return { params, query, body, again: input.body === body && input.query === query && input.params === params };
    },
  }),
  defineRoute({ method: 'GET', url: '/t/secret-docs', summary: 'Not in the document', config: { hidden: true }, handler: () => ({}) }),
];
const testSubsystem: Subsystem = { name: 'route-test', routes: (app: FastifyInstance) => mountRoutes(app, routes) };

describe('routes declared as data', () => {
  it('parses inputs when the handler reads them, so 404 comes before 422, and the route config names the call', async () => {
    server = await startTestServer({ start: { subsystems: [testSubsystem] } });
    expect((await server.request('/t/ada/greet', { method: 'POST', json: { name: 'Bo' } })).body).toEqual({
      text: 'hello Bo',
      call: { resource: 'agent', name: 'ada', operation: 'greet', invocation: true },
    });
    const unknown = await server.request('/t/nobody/greet', { method: 'POST', json: { name: '' } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('HANGAR_AGENT_NOT_FOUND');
    const bad = await server.request('/t/ada/greet', { method: 'POST', json: { name: '' } });
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ code: 'HANGAR_REQUEST_INVALID' });
    expect(bad.body.detail).toMatch(/^body\.name: /);
  });

  it('parses each input once, however often or however the handler reads it (destructured or not)', async () => {
    server = await startTestServer({ start: { subsystems: [testSubsystem] } });
    const before = bodyParses;
    const res = await server.request('/t/ada/count?n=3', { method: 'POST', json: { name: 'Bo' } });
    expect(res.body).toEqual({ params: { agent: 'ada' }, query: { n: 3 }, body: { name: 'Bo', parsedAs: before + 1 }, again: true });
    expect(bodyParses).toBe(before + 1);
  });

  it('lets a route declared public through without the token, and only that one', async () => {
    server = await startTestServer({ settings: { auth: { tokens: { ci: 'sekret' } } }, start: { subsystems: [testSubsystem] } });
    expect((await server.request('/t/open')).status).toBe(200);
    expect((await server.request('/t/closed')).status).toBe(401);
    expect((await server.request('/t/closed', { headers: { authorization: 'Bearer sekret' } })).status).toBe(200);
  });

  it('answers HEAD from the GET route: its status and headers, no body, and the request is a HEAD to its handler', async () => {
    server = await startTestServer({ start: { subsystems: [testSubsystem] } });
    const get = await fetch(`${server.url}/t/method`);
    expect(await get.json()).toEqual({ method: 'GET' });
    const head = await fetch(`${server.url}/t/method`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('x-method')).toBe('HEAD');
    expect(head.headers.get('content-length')).toBe(String(JSON.stringify({ method: 'HEAD' }).length));
    expect(await head.text()).toBe('');
    expect((await fetch(`${server.url}/t/nowhere`, { method: 'HEAD' })).status).toBe(404);
    // Only GET routes answer HEAD: a POST route's path is not found for it.
    expect((await fetch(`${server.url}/t/ada/greet`, { method: 'HEAD' })).status).toBe(404);
  });

  it('refuses a route that takes HEAD without GET, since HEAD is answered by the GET route', async () => {
    const headOnly = defineRoute({ method: 'HEAD', url: '/t/head-only', summary: 'HEAD alone', handler: () => '' });
    await expect(
      startTestServer({ start: { subsystems: [{ name: 'head-only', routes: (app) => mountRoutes(app, [headOnly]) }] } }),
    ).rejects.toThrow(/HEAD route needs GET/);
  });

  it('refuses a route that gives Fastify a JSON schema: inputs are declared with zod, and Fastify compiles nothing', async () => {
    const withJsonSchema: Subsystem = {
      name: 'json-schema',
      routes: (app) => app.post('/t/json-schema', { schema: { body: { type: 'object' } } }, async () => ({})),
    };
    await expect(startTestServer({ start: { subsystems: [withJsonSchema] } })).rejects.toThrow(/declare its schemas with zod/);
  });

  it('documents each declared route in /openapi.json from its declaration, and leaves hidden ones out', async () => {
    server = await startTestServer({
      start: {
        subsystems: [
          testSubsystem,
          { name: 'docs', routes: (app) => app.get('/openapi.json', () => server!.ctx.services.get('openapi').document()) },
        ],
      },
    });
    const { paths } = (await server.request('/openapi.json')).body;
    const greet = paths['/t/{agent}/greet'].post;
    expect(greet.summary).toBe('Greet');
    expect(greet.tags).toEqual(['t']);
    expect(greet.requestBody.content['application/json'].schema.required).toEqual(['name']);
    expect(greet.responses['200'].content['application/json'].schema.properties.text).toEqual({ type: 'string' });
    expect(paths['/t/open'].get.summary).toBe('Reachable without a token');
    expect(paths['/t/secret-docs']).toBeUndefined();
  });
});

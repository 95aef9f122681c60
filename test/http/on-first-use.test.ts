/**
 * A subsystem loaded on its first request (core/http/on-first-use.ts), on the real server: nothing
 * of it loads at start, the first request loads it once (however many arrive together), requests
 * reach its routes with their parameters, HEAD and unknown paths are answered as elsewhere, a
 * failed load is answered and tried again, /openapi.json lists its routes, and it is stopped with
 * the server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SUBSYSTEMS } from '../../core/app/subsystems.js';
import { mountOnFirstUse } from '../../core/http/on-first-use.js';
import { type AnyRoute, defineRoute } from '../../core/http/route.js';
import type { HangarContext, Subsystem } from '../../core/kernel/context.js';
import { startTestServer, type TestServer } from '../support/server.js';

const counts = { loads: 0, closes: 0 };
/** The next loads that fail, and the routes a load returns. */
const plan = { failures: 0, routes: [] as AnyRoute[] };

const itemRoutes: AnyRoute[] = [
  defineRoute({
    method: 'GET',
    url: '/later/items/:id',
    summary: 'An item of the subsystem loaded on first use',
    schema: { params: z.object({ id: z.coerce.number().int() }) },
    handler: ({ params }) => ({ id: params.id, loads: counts.loads }),
  }),
  defineRoute({
    method: 'POST',
    url: '/later/items',
    summary: 'Add an item',
    schema: { body: z.object({ name: z.string() }) },
    handler: ({ body }) => ({ added: body.name }),
  }),
];

const mounted = new WeakMap<HangarContext, { close(): Promise<void> }>();
const later: Subsystem = {
  name: 'later',
  routes: (app, ctx) => {
    const mount = mountOnFirstUse(app, ctx.services.get('openapi'), {
      prefixes: ['/later'],
      load: async () => {
        counts.loads++;
        // Slow enough that requests sent together all arrive while it loads.
        await new Promise((resolve) => setTimeout(resolve, 50));
        if (plan.failures > 0) {
          plan.failures--;
          throw new Error('the set-up failed');
        }
        return {
          routes: plan.routes,
          close: async () => {
            counts.closes++;
          },
        };
      },
    });
    mounted.set(ctx, mount);
  },
  close: (ctx) => mounted.get(ctx)?.close(),
};

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ start: { subsystems: [...SUBSYSTEMS, later] } });
});
afterAll(() => server?.stop());

describe('a subsystem loaded on first use', () => {
  it('is not loaded at start; a request whose load fails is answered 500', async () => {
    expect(counts.loads).toBe(0);
    plan.failures = 1;
    plan.routes = itemRoutes;
    const failed = await server.request('/later/items/1');
    expect(failed.status).toBe(500);
    expect(failed.body).toHaveProperty('detail');
    expect(counts.loads).toBe(1);
  });

  it('is loaded again by the next request, once however many arrive while it loads', async () => {
    const answers = await Promise.all([1, 2, 3].map((id) => server.request(`/later/items/${id}`)));
    expect(answers.map((a) => [a.status, a.body])).toEqual([1, 2, 3].map((id) => [200, { id, loads: 2 }]));
    expect(counts.loads).toBe(2);
    expect((await server.request('/later/items/4')).body).toEqual({ id: 4, loads: 2 });
  });

  it('answers with its routes: parameters and bodies parsed, HEAD by GET, unknown paths 404', async () => {
    expect((await server.request('/later/items/x')).status).toBe(422);
    expect(await server.request('/later/items', { method: 'POST', json: { name: 'a' } })).toMatchObject({
      status: 200,
      body: { added: 'a' },
    });
    expect((await server.request('/later/items', { method: 'POST', json: {} })).status).toBe(422);
    const head = await server.request('/later/items/3', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    const unknown = await server.request('/later/nothing');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(expect.objectContaining({ detail: expect.stringContaining('/later/nothing') }));
    expect((await server.request('/later/items/3', { method: 'DELETE' })).status).toBe(404);
  });

  it('has its routes in /openapi.json, not the catch-all', async () => {
    const paths = (await server.request('/openapi.json')).body.paths as Record<string, Record<string, { summary: string }>>;
    expect(paths['/later/items/{id}']?.get?.summary).toBe('An item of the subsystem loaded on first use');
    expect(paths['/later/items']?.post?.summary).toBe('Add an item');
    expect(Object.keys(paths).filter((path) => path.startsWith('/later/{') || path === '/later')).toEqual([]);
  });

  it("labels its requests in /metrics with each route's own URL, not the catch-all's", async () => {
    const metrics = (await server.request('/metrics')).text;
    expect(metrics).toMatch(/^http_requests_total\{method="GET",route="\/later\/items\/:id",status="200"\} 4$/m);
    expect(metrics).toMatch(/^http_requests_total\{method="POST",route="\/later\/items",status="422"\} 1$/m);
    // The request whose load failed reached no route of the subsystem: it keeps the catch-all's label.
    expect(metrics).toMatch(/^http_requests_total\{method="GET",route="\/later\/\*",status="500"\} 1$/m);
  });

  it('is stopped with the server', async () => {
    expect(counts.closes).toBe(0);
    await server.stop();
    expect(counts.closes).toBe(1);
  });
});

describe('a subsystem whose routes cannot be loaded on first use', () => {
  it('refuses a route outside its prefix or with a config, as an answer, not a crash', async () => {
    const outside = defineRoute({ method: 'GET', url: '/elsewhere', summary: 'outside', handler: () => 'no' });
    const configured = defineRoute({
      method: 'GET',
      url: '/later/public',
      summary: 'public',
      config: { public: true },
      handler: () => 'no',
    });
    for (const [route, problem] of [
      [outside, '/elsewhere is not under /later'],
      [configured, '/later/public has a config (public)'],
    ] as const) {
      plan.routes = [route];
      const own = await startTestServer({ start: { subsystems: [...SUBSYSTEMS, later] } });
      try {
        const answer = await own.request('/later/public');
        expect(answer.status).toBe(500);
        expect(own.logs.join('\n')).toContain(problem);
        expect((await own.request('/health')).status).toBe(200);
      } finally {
        await own.stop();
      }
    }
  });
});

describe('a subsystem under several prefixes, behind the guard of its scope', () => {
  const guarded = { loads: 0 };
  const routes = [
    defineRoute({ method: 'GET', url: '/guarded-a/one', summary: 'one', handler: () => ({ route: 'one' }) }),
    defineRoute({
      method: 'GET',
      url: '/guarded-b/:id',
      summary: 'two',
      schema: { params: z.object({ id: z.string() }) },
      handler: ({ params }) => ({ route: 'two', id: params.id }),
    }),
  ];
  const behindGuard: Subsystem = {
    name: 'guarded',
    routes: (app, ctx) => {
      app.register(async (scope) => {
        scope.addHook('onRequest', (req, reply, done) => {
          if (req.headers['x-pass'] !== 'yes') return void reply.code(401).send({ detail: 'no pass' });
          done();
        });
        mountOnFirstUse(scope, ctx.services.get('openapi'), {
          prefixes: ['/guarded-a', '/guarded-b'],
          load: async () => {
            guarded.loads++;
            return { routes };
          },
        });
      });
    },
  };

  it('answers the guard before loading, then routes under each prefix', async () => {
    const own = await startTestServer({ start: { subsystems: [...SUBSYSTEMS, behindGuard] } });
    try {
      const refused = await own.request('/guarded-b/7');
      expect(refused.status).toBe(401);
      expect((await own.request('/guarded-a/anything')).status).toBe(401);
      expect(guarded.loads).toBe(0);

      const pass = { headers: { 'x-pass': 'yes' } };
      expect((await own.request('/guarded-a/one', pass)).body).toEqual({ route: 'one' });
      expect((await own.request('/guarded-b/7', pass)).body).toEqual({ route: 'two', id: '7' });
      expect((await own.request('/guarded-a/nothing', pass)).status).toBe(404);
      expect(guarded.loads).toBe(1);
    } finally {
      await own.stop();
    }
  });
});

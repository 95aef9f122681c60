/**
 * /openapi.json is built from the routes Fastify registers (core/http/openapi.ts), so no route the
 * server answers may be missing from it. The routes are collected the way the document is, through
 * an `onRoute` hook, by a subsystem listed first: its hook is on the app before any other subsystem
 * adds a route, so it sees every one of them, plugin-scoped ones included.
 */
import type { RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBSYSTEMS } from '../../core/app/subsystems.js';
import { openApiPath } from '../../core/http/openapi.js';
import type { DeclaredRouteConfig } from '../../core/http/route.js';
import type { Subsystem } from '../../core/kernel/context.js';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';

/** The methods an OpenAPI path item of ours holds; HEAD is Fastify's companion of GET. */
const DOCUMENTED = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

const registered: RouteOptions[] = [];
const collector: Subsystem = {
  name: 'route-collector',
  routes: (app) => {
    app.addHook('onRoute', (route) => {
      registered.push(route);
    });
  },
};

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    files: { 'agents/echo.ts': agentSource(`{ run: async (i) => 'echo: ' + i.query }`) },
    start: { subsystems: [collector, ...SUBSYSTEMS] },
  });
});
afterAll(() => server?.stop());

describe('/openapi.json', () => {
  it('lists every route the server registered, except HEAD and hidden ones', async () => {
    const paths = (await server.request('/openapi.json')).body.paths as Record<string, Record<string, unknown>>;
    const expected = registered
      .filter(
        (route) => !(route.config as DeclaredRouteConfig | undefined)?.hidden && !(route.schema as { hide?: boolean } | undefined)?.hide,
      )
      .flatMap((route) =>
        (Array.isArray(route.method) ? route.method : [route.method])
          .filter((m) => DOCUMENTED.has(m))
          .map((m) => `${m.toLowerCase()} ${openApiPath(route.url)}`),
      );
    expect(expected.length).toBeGreaterThan(50);
    const missing = expected.filter((entry) => {
      const [method, path] = entry.split(' ') as [string, string];
      return paths[path]?.[method] === undefined;
    });
    expect(missing).toEqual([]);
  });

  it('documents the routes of every subsystem, agent routes once with the agents as their parameter', async () => {
    const paths = (await server.request('/openapi.json')).body.paths as Record<
      string,
      Record<string, { parameters?: Array<{ name: string; schema: { enum?: string[] } }> }>
    >;
    for (const path of ['/health', '/api/v1/storage/stats', '/openapi.json', '/mcp', '/api/v1/{agent}/a2a/tasks'])
      expect(paths[path], path).toBeDefined();
    expect(Object.keys(paths).filter((path) => path.startsWith('/api/v1/echo/'))).toEqual([]);
    const agent = paths['/api/v1/{agent}/health']!.get!.parameters!.find((p) => p.name === 'agent')!;
    expect(agent.schema.enum).toEqual(['echo']);
    // Files served as they are (Swagger UI's) are not API routes.
    expect(Object.keys(paths).filter((path) => path.startsWith('/docs/'))).toEqual([]);
  });
});

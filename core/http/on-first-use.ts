/**
 * A rarely used subsystem loaded on its first request instead of at start: Fastify takes no route
 * once the server is ready, so its routes are catch-alls under its prefixes, and the first request
 * imports the subsystem's modules, sets it up and finds each request's route with a router of its
 * own (find-my-way, the router Fastify uses, with the same options). Everything it answers is under
 * its prefixes, and its routes have no `config`, so the guards read the same config on a catch-all
 * as they would on the route itself (checked when it loads); hooks of the scope the catch-alls are
 * registered in (the coding runs' session guard) run before the load. `/openapi.json` loads every
 * such subsystem before it is built, so it still lists their routes.
 *
 * Measured (the example workspace to `/readiness`, alternating medians of 11): the studio alone,
 * its modules, its set-up and 15 routes, cost a start ~21 ms. Vite's optimised dependencies and
 * VS Code's extensions activated on their first use are the same trade: the first request pays.
 */
import type { FastifyInstance, HTTPMethods } from 'fastify';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import { ROUTER_OPTIONS } from './app.js';
import type { OpenApiRegistry } from './openapi.js';
import { pathOf, setRoutedUrl } from './request.js';
import { type AnyRoute, callRoute, ROUTED_METHODS } from './route.js';

/** What a subsystem is once loaded: its routes, and how to stop it. */
export interface LoadedOnFirstUse {
  routes: AnyRoute[];
  close?(): Promise<void>;
}

export interface OnFirstUse {
  /** Everything the subsystem answers is under one of them: `['/studio']`. */
  prefixes: readonly string[];
  /** Import the subsystem's modules and set it up. A failure is answered as an error and tried again by the next request. */
  load(): Promise<LoadedOnFirstUse>;
}

interface Loaded extends LoadedOnFirstUse {
  find(method: string, path: string): { route: AnyRoute; params: Record<string, string> } | undefined;
}

export function mountOnFirstUse(app: FastifyInstance, openapi: OpenApiRegistry, options: OnFirstUse): { close(): Promise<void> } {
  let loading: Promise<Loaded> | undefined;
  const loaded = () => {
    if (!loading) {
      loading = load(options);
      // A set-up that failed is tried again by the next request, not remembered as the answer.
      loading.catch(() => (loading = undefined));
    }
    return loading;
  };
  openapi.addOnFirstUse(async () => (await loaded()).routes);
  for (const url of options.prefixes.flatMap((prefix) => [prefix, `${prefix}/*`])) {
    app.route({
      method: ROUTED_METHODS as HTTPMethods[],
      url,
      config: { hidden: true },
      async handler(req, reply) {
        const { find } = await loaded();
        // HEAD is answered by the GET route (core/http/app.ts, headAsGet).
        const found = find(req.method === 'HEAD' ? 'GET' : req.method, pathOf(req));
        if (!found) return reply.callNotFound();
        setRoutedUrl(req, found.route.url);
        return callRoute(found.route, req, reply, found.params);
      },
    });
  }
  return {
    async close() {
      const subsystem = await loading?.catch(() => undefined);
      await subsystem?.close?.();
    },
  };
}

async function load({ prefixes, load: loadSubsystem }: OnFirstUse): Promise<Loaded> {
  const subsystem = await loadSubsystem();
  const router = FindMyWay(ROUTER_OPTIONS);
  for (const route of subsystem.routes) {
    if (!prefixes.some((prefix) => route.url.startsWith(`${prefix}/`) || route.url === prefix))
      throw new Error(`${route.url} is not under ${prefixes.join(' or ')}, where it is loaded on first use`);
    if (route.config && Object.keys(route.config).length > 0)
      throw new Error(
        `${route.url} has a config (${Object.keys(route.config).join(', ')}), which the catch-alls under ${prefixes.join(', ')} cannot carry`,
      );
    for (const method of [route.method].flat()) router.on(method, route.url, () => undefined, route);
  }
  return {
    ...subsystem,
    find(method, path) {
      const match = router.find(method as HTTPMethod, path);
      return match ? { route: match.store as AnyRoute, params: match.params as Record<string, string> } : undefined;
    },
  };
}

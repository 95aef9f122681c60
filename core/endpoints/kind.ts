/**
 * The `endpoint` drop-in kind: how discovery turns `endpoints/<name>.ts` (or
 * `endpoints/<name>/index.ts`) into a validated endpoint — a `defineEndpoint` definition or an
 * express Router/app (router.ts) — and how the service reads them back from the kernel's registry.
 * Both are one kind in one folder, so a name is either one or the other, and turning a file from
 * one into the other is an ordinary reload.
 */
import type { DropInKind, Registry } from '../kernel/registry.js';
import { isExpressHandler, isRouterEndpoint, type RouterEndpoint, routerEndpoint } from './router.js';
import type { EndpointConfig } from './schemas.js';
import { type EndpointCatalog, parseEndpointDefinition } from './service.js';

export const endpointKind: DropInKind<EndpointConfig | RouterEndpoint> = {
  kind: 'endpoint',
  folder: 'endpoints',
  load(exported, defaultName) {
    // A router has no name of its own to declare: the file name is its route segment.
    if (isExpressHandler(exported)) return routerEndpoint(exported, defaultName.toLowerCase());
    if (exported === null || typeof exported !== 'object') {
      throw new Error('expected the module to export default defineEndpoint({...}) or an express Router');
    }
    const definition = exported as Record<string, unknown>;
    // The file name is the default name, as for agents (endpoints/weather.ts → weather).
    return parseEndpointDefinition({ ...definition, name: definition.name ?? defaultName.toLowerCase() });
  },
  nameOf: (config) => config.name,
};

/** The drop-in endpoints of a registry, read live on every call; routers apart from definitions. */
export function registryCatalog(registry: Registry): EndpointCatalog {
  type Loaded = EndpointConfig | RouterEndpoint;
  return {
    get: (name) => {
      const found = registry.get<Loaded>('endpoint', name)?.definition;
      return found && !isRouterEndpoint(found) ? found : undefined;
    },
    list: () =>
      registry
        .list<Loaded>('endpoint')
        .map((entry) => entry.definition)
        .filter((found): found is EndpointConfig => !isRouterEndpoint(found)),
    router: (name) => {
      const found = registry.get<Loaded>('endpoint', name)?.definition;
      return found && isRouterEndpoint(found) ? found : undefined;
    },
    routers: () =>
      registry
        .list<Loaded>('endpoint')
        .map((entry) => entry.definition)
        .filter(isRouterEndpoint),
    problem: (name) => registry.problemNamed('endpoint', name),
  };
}

/**
 * The `endpoint` drop-in kind: how discovery turns `endpoints/<name>.ts` (or
 * `endpoints/<name>/index.ts`) into a validated endpoint, and how the service reads them back from
 * the kernel's registry.
 */
import type { DropInKind, Registry } from '../kernel/registry.js';
import type { EndpointConfig } from './schemas.js';
import { parseEndpointDefinition, type EndpointCatalog } from './service.js';

export const endpointKind: DropInKind<EndpointConfig> = {
  kind: 'endpoint',
  folder: 'endpoints',
  load(exported, defaultName) {
    if (exported === null || typeof exported !== 'object') {
      throw new Error('expected the module to export default defineEndpoint({...})');
    }
    const definition = exported as Record<string, unknown>;
    // The file name is the default name, as for agents (endpoints/weather.ts → weather).
    return parseEndpointDefinition({ ...definition, name: definition.name ?? defaultName.toLowerCase() });
  },
  nameOf: (config) => config.name,
};

/** The drop-in endpoints of a registry, read live on every call. */
export function registryCatalog(registry: Registry): EndpointCatalog {
  return {
    get: (name) => registry.get<EndpointConfig>('endpoint', name)?.definition,
    list: () => registry.list<EndpointConfig>('endpoint').map((entry) => entry.definition),
    problem: (name) => registry.problemNamed('endpoint', name),
  };
}

/**
 * The set-up order of the subsystems, computed from what each `provides` and `depends` on (or
 * `uses`, when present) and checked before anything starts, as Fastify's plugin-utils checks a
 * plugin's dependencies: a missing provider, a name provided twice or a cycle stops start-up with
 * a message naming the subsystems, instead of a service read before it exists.
 *
 * Among subsystems that are ready at the same time, the one listed first in core/app/subsystems.ts
 * goes first, so the order is stable and the list still reads top to bottom.
 */

import type { Subsystem } from '../kernel/context.js';
import type { ServiceName } from '../kernel/services.js';
import { buildGraph, cycles, topologicalOrder } from '../lib/graph.js';

/** The provider name of what the composition root provides itself (it is set up before every subsystem). */
const HOST = 'the composition root';

export class WiringError extends Error {
  override readonly name = 'WiringError';
}

export function planSubsystems(subsystems: readonly Subsystem[], providedByHost: readonly ServiceName[] = []): Subsystem[] {
  const byName = new Map<string, Subsystem>();
  const providerOf = new Map<ServiceName, string>(providedByHost.map((name) => [name, HOST]));
  for (const subsystem of subsystems) {
    if (byName.has(subsystem.name)) throw new WiringError(`two subsystems are named "${subsystem.name}"`);
    byName.set(subsystem.name, subsystem);
    for (const service of subsystem.provides ?? []) {
      const other = providerOf.get(service);
      if (other) throw new WiringError(`service "${service}" is provided by both ${other} and ${subsystem.name}`);
      providerOf.set(service, subsystem.name);
    }
  }
  const missing = subsystems.flatMap((s) =>
    (s.depends ?? []).filter((d) => !providerOf.has(d)).map((d) => `${s.name} depends on "${d}", which no subsystem provides`),
  );
  if (missing.length) throw new WiringError(missing.join('; '));

  const graph = buildGraph(
    subsystems.map((s) => s.name),
    (name) => {
      const subsystem = byName.get(name)!;
      const needed = [...(subsystem.depends ?? []), ...(subsystem.uses ?? []).filter((u) => providerOf.has(u))];
      return needed.map((service) => providerOf.get(service)!).filter((provider) => provider !== name && provider !== HOST);
    },
  );
  const { order, blocked } = topologicalOrder(graph);
  if (blocked.length) {
    const loops = cycles(graph).map((cycle) => cycle.join(' → '));
    throw new WiringError(`subsystems depend on each other in a cycle: ${loops.join('; ') || blocked.join(', ')}`);
  }
  return order.map((name) => byName.get(name)!);
}

/** After a subsystem's setup: it provided everything it declared (a declaration that lies is a bug). */
export function checkProvided(subsystem: Subsystem, has: (name: ServiceName) => boolean): void {
  const absent = (subsystem.provides ?? []).filter((name) => !has(name));
  if (absent.length)
    throw new WiringError(
      `${subsystem.name} declares it provides ${absent.map((n) => `"${n}"`).join(', ')} but did not provide it at setup`,
    );
}

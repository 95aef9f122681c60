/**
 * The typed service map: the one way a subsystem reaches another subsystem's service.
 *
 * A subsystem that owns a service names it in its `provides` and adds its type to `ServiceMap` by
 * declaration merging, next to the service, as Fastify's `decorate` typings do:
 *
 * ```ts
 * declare module '../kernel/services.js' {
 *   interface ServiceMap { threads: ThreadService }
 * }
 * ```
 *
 * A subsystem that calls it names it in `depends` and reads `ctx.services.get('threads')`, typed.
 * The composition root (core/app/plan.ts) orders set-up from these declarations and refuses to
 * start when a dependency has no provider, two subsystems provide one name, or they form a cycle —
 * the checks Fastify's plugin-utils makes of plugin dependencies.
 */

// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging in each subsystem
export interface ServiceMap {}

export type ServiceName = keyof ServiceMap & string;

/** A programming error in the wiring: a service read before it is provided, or provided twice. */
export class ServiceWiringError extends Error {
  override readonly name = 'ServiceWiringError';
}

type Entry = { built: true; value: unknown } | { built: false; build: () => unknown };

export class Services {
  readonly #entries = new Map<string, Entry>();

  provide<K extends ServiceName>(name: K, value: ServiceMap[K]): void {
    this.#claim(name);
    this.#entries.set(name, { built: true, value });
  }

  /**
   * A service built on its first `get`: subsystems rarely used in a session (the notebook runtime,
   * coding runs) provide theirs this way, so the server's start-up does not pay for them.
   */
  provideLazy<K extends ServiceName>(name: K, build: () => ServiceMap[K]): void {
    this.#claim(name);
    this.#entries.set(name, { built: false, build });
  }

  get<K extends ServiceName>(name: K): ServiceMap[K] {
    const entry = this.#entries.get(name);
    if (!entry)
      throw new ServiceWiringError(`service "${name}" is not provided on this server (is its subsystem set up, and named in depends?)`);
    if (entry.built) return entry.value as ServiceMap[K];
    const value = entry.build();
    this.#entries.set(name, { built: true, value });
    return value as ServiceMap[K];
  }

  /** The service when it is provided; for optional collaborators (the invocation log, when a test server runs without it). */
  find<K extends ServiceName>(name: K): ServiceMap[K] | undefined {
    return this.#entries.has(name) ? this.get(name) : undefined;
  }

  has(name: ServiceName): boolean {
    return this.#entries.has(name);
  }

  /** Whether a lazily provided service has been built (shutdown closes only what was started). */
  isBuilt(name: ServiceName): boolean {
    return this.#entries.get(name)?.built === true;
  }

  #claim(name: string): void {
    if (this.#entries.has(name)) throw new ServiceWiringError(`service "${name}" is provided twice`);
  }
}

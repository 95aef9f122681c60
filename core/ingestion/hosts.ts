/**
 * Where ingestors' functions run: each loaded ingestor drop-in has its own supervised host
 * (core/kernel/dropin-host.ts), so one that loops, allocates without bound or hangs costs its own
 * thread and its own run, never the server or another ingestor. An ingestor that asks for
 * `isolation: 'inline'` runs on the server's thread.
 */
import { DropInHosts, type DropInHostsOptions, hostedSource, isLoadedDropIn } from '../kernel/dropin-host.js';
import type { HostedTask } from '../kernel/dropin-host-protocol.js';
import type { Registry } from '../kernel/registry.js';
import type { IngestContext, IngestResource } from './define.js';
import type { LoadedIngestor } from './kind.js';

/** One call of an ingestor's function, as the host runs it. */
export interface IngestorTask extends HostedTask {
  fn: 'discover' | 'read' | 'health';
  resource?: IngestResource;
  workspace: string;
  options: Record<string, unknown>;
}

export interface IngestorHostsOptions extends Pick<DropInHostsOptions, 'watchdogMs' | 'onRestart' | 'onWarmError'> {
  registry: Registry;
  root: string;
  /** `ingestors.maxHeapMb`, unless the ingestor's `max_heap_mb` says otherwise. */
  maxHeapMb: number;
}

export class IngestorHosts {
  readonly #options: IngestorHostsOptions;
  readonly #hosts: DropInHosts<IngestorTask>;

  constructor(options: IngestorHostsOptions) {
    this.#options = options;
    this.#hosts = new DropInHosts<IngestorTask>({ ...options, kind: 'ingestor', entry: 'core/ingestion/ingestor-worker.ts' });
  }

  supervises(definition: LoadedIngestor): boolean {
    if (definition.isolation === 'inline') return false;
    return isLoadedDropIn(this.#options.registry, this.#options.root, 'ingestor', definition.name, definition);
  }

  forget(name: string): void {
    this.#hosts.forget(name);
  }

  /** Call `fn` of the ingestor in its host; `signal` ends the call (and a host that ignores it). */
  run(definition: LoadedIngestor, fn: IngestorTask['fn'], ctx: IngestContext, resource?: IngestResource): Promise<unknown> {
    const { name } = definition;
    const source = hostedSource(this.#options.registry, this.#options.root, 'ingestor', name, definition);
    if (!source) throw new Error(`ingestor '${name}' is not a loaded drop-in`);
    return this.#hosts.run({
      name,
      heapMb: definition.max_heap_mb ?? this.#options.maxHeapMb,
      code: source.code,
      signal: ctx.signal,
      task: {
        name,
        file: source.file,
        hash: source.hash,
        fn,
        workspace: ctx.workspace,
        options: ctx.options,
        ...(resource ? { resource } : {}),
      },
    });
  }

  status() {
    return this.#hosts.status();
  }

  close(): Promise<void> {
    return this.#hosts.close();
  }
}

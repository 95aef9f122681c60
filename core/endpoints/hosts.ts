/**
 * Where endpoints' custom handlers run: each loaded drop-in endpoint with a handler has its own
 * supervised host (core/kernel/dropin-host.ts), so a handler that loops, allocates without bound or
 * never returns costs its own thread. A handler registered in code, or one that asks for
 * `isolation: 'inline'`, runs on the server's thread.
 */
import { DropInHosts, type DropInHostsOptions, hostedSource, isLoadedDropIn } from '../kernel/dropin-host.js';
import type { HostedTask } from '../kernel/dropin-host-protocol.js';
import type { Registry } from '../kernel/registry.js';
import { RouterHosts } from './router-host.js';
import type { EndpointConfig } from './schemas.js';
import type { FanOutResult, UpstreamResult } from './types.js';

/** One handler call, as the host runs it. */
export interface HandlerTask extends HostedTask {
  method: string;
  upstreams: string[];
  input: unknown;
}

/** What `ctx.call` in the host gets back: the upstream's public result, and its data when it succeeded. */
export interface HostedUpstreamCall {
  result: UpstreamResult;
  data?: unknown;
}

/** The server's side of a hosted handler's `ctx`. */
export interface HandlerRemote {
  call(upstream: string, options: Record<string, unknown>): Promise<HostedUpstreamCall>;
  fanOut(input: { default: true } | { input: unknown }, only: readonly string[] | null): Promise<FanOutResult>;
}

export interface EndpointHostsOptions extends Pick<DropInHostsOptions, 'watchdogMs' | 'onRestart' | 'onWarmError'> {
  registry: Registry;
  root: string;
  /** `endpoints.maxHeapMb`, unless the endpoint's `max_heap_mb` says otherwise. */
  maxHeapMb: number;
}

export class EndpointHosts {
  readonly #options: EndpointHostsOptions;
  readonly #hosts: DropInHosts<HandlerTask>;
  /** The hosts of express-router endpoints (router-host.ts), with the same settings. */
  readonly routers: RouterHosts;

  constructor(options: EndpointHostsOptions) {
    this.#options = options;
    this.#hosts = new DropInHosts<HandlerTask>({ ...options, kind: 'endpoint', entry: 'core/endpoints/handler-worker.ts' });
    this.routers = new RouterHosts(options);
  }

  /** Whether this endpoint's handler runs in a host: a loaded drop-in's, unless it asks for `isolation: 'inline'`. */
  supervises(config: EndpointConfig): boolean {
    if (!config.handler || config.isolation === 'inline') return false;
    return isLoadedDropIn(this.#options.registry, this.#options.root, 'endpoint', config.name, config);
  }

  /** Start the endpoint's host ahead of its first call (discovery loaded or reloaded it). */
  prepare(config: EndpointConfig): void {
    if (this.supervises(config)) this.#hosts.prepare(config.name, this.#heapOf(config));
  }

  forget(name: string): void {
    this.#hosts.forget(name);
    this.routers.forget(name);
  }

  run(config: EndpointConfig, method: string, input: unknown, signal: AbortSignal, remote: HandlerRemote): Promise<unknown> {
    const source = hostedSource(this.#options.registry, this.#options.root, 'endpoint', config.name, config);
    if (!source) throw new Error(`endpoint '${config.name}' is not a loaded drop-in`);
    return this.#hosts.run({
      name: config.name,
      heapMb: this.#heapOf(config),
      code: source.code,
      signal,
      task: {
        name: config.name,
        file: source.file,
        hash: source.hash,
        method,
        upstreams: config.upstreams.map((u) => u.name),
        input,
      },
      onCall: (name, args) => {
        if (name === 'call') return remote.call(args[0] as string, args[1] as Record<string, unknown>);
        if (name === 'fanOut') return remote.fanOut(args[0] as { input: unknown }, args[1] as string[] | null);
        return Promise.reject(new Error(`unknown host call '${name}'`));
      },
    });
  }

  status() {
    return [...this.#hosts.status(), ...this.routers.status()].sort((a, b) => a.name.localeCompare(b.name));
  }

  async close(): Promise<void> {
    await Promise.all([this.#hosts.close(), this.routers.close()]);
  }

  #heapOf(config: EndpointConfig): number {
    return config.max_heap_mb ?? this.#options.maxHeapMb;
  }
}

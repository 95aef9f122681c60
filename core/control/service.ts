/**
 * The control plane's state and actions: per-resource states (drain, disable), maintenance mode,
 * in-flight counts, rediscovery, and run-time log level and rate limits.
 *
 * Decisions the spec leaves open:
 * - What drain and disable refuse: calls that do work (invoke, chat, predict, run, custom endpoint
 *   calls — the routes whose `config.resource` says `invocation: true`), with 503 and Retry-After. Health, cards and listings keep
 *   answering, so an operator and the probes can see the state. Work already accepted on the task
 *   board runs to its end; "in flight" counts HTTP calls.
 * - Drain ends when its in-flight count reaches zero (state `drained`); the resource keeps refusing
 *   until `enable`. `wait_ms` lets the caller wait for that moment in the same request.
 * - Maintenance answers 503 to everything except /health, /ready, /readiness, any `…/health`
 *   route and the control plane itself.
 * - States live in memory: a restart serves everything again (what an operator expects after a
 *   deploy). Changes to log level and rate limits likewise last until the next start.
 * - Changing rate limits starts a fresh counting window.
 */
import type { ResourceCall } from '../http/route.js';
import type { HangarContext } from '../kernel/context.js';
import { errorMessage, fail, type HangarError } from '../kernel/errors.js';
import type { LogLevel } from '../kernel/log.js';
import { redactSettings } from '../kernel/settings.js';
import { nameFromEntry } from '../predictors/service.js';
import { CONTROLLED_RESOURCES } from './resources.js';
import type { ControlledResource, MaintenanceStatus, ResourceState, ResourceStatus } from './schemas.js';

interface Held {
  state: Exclude<ResourceState, 'active' | 'drained'>;
  since: string;
  reason: string | null;
  retryAfter: number;
}

const key = (resource: string, name: string) => `${resource}\u0000${name}`;

export class ControlPlane {
  private readonly held = new Map<string, Held>();
  private readonly inFlight = new Map<string, number>();
  private readonly idleWaiters = new Map<string, Set<() => void>>();
  private maintenance: MaintenanceStatus = { enabled: false, message: null, retry_after: 60, since: null };
  constructor(private readonly ctx: HangarContext) {}

  // ---- request gate ----------------------------------------------------------------------------

  get maintenanceStatus(): MaintenanceStatus {
    return { ...this.maintenance };
  }

  /** The 503 a call must be refused with now, or undefined to let it through. */
  refusal(call: ResourceCall): HangarError | undefined {
    if (!call.invocation) return undefined;
    const held = this.held.get(key(call.resource, call.name));
    if (!held) return undefined;
    const params = { resource: call.resource, name: call.name, reason: held.reason ? `: ${held.reason}` : '' };
    if (held.state === 'disabled') return fail('HANGAR_CONTROL_RESOURCE_DISABLED', params);
    return fail('HANGAR_CONTROL_RESOURCE_DRAINING', params, { headers: { 'Retry-After': String(held.retryAfter) } });
  }

  /** The 503 of maintenance mode, or undefined when it is off. */
  maintenanceRefusal(): HangarError | undefined {
    const { enabled, message, retry_after } = this.maintenance;
    if (!enabled) return undefined;
    return fail(
      'HANGAR_CONTROL_MAINTENANCE',
      { message: message ? `: ${message}` : '' },
      { headers: { 'Retry-After': String(retry_after) } },
    );
  }

  /** How an operator holds a resource back, if at all: its health reports it. */
  heldState(resource: ControlledResource, name: string): 'disabled' | 'draining' | undefined {
    return this.held.get(key(resource, name))?.state;
  }

  /** Count a call in flight; the returned function ends it (idempotent). */
  enter(call: ResourceCall): () => void {
    const k = key(call.resource, call.name);
    this.inFlight.set(k, (this.inFlight.get(k) ?? 0) + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const n = (this.inFlight.get(k) ?? 1) - 1;
      // A count that reaches zero stays (one per resource): deleting it would make the Map rebuild
      // its table every few calls, which keeps old calls' objects alive (core/lib/in-flight.ts).
      this.inFlight.set(k, n);
      if (n > 0) return;
      for (const wake of this.idleWaiters.get(k) ?? []) wake();
      this.idleWaiters.delete(k);
    };
  }

  // ---- resources -------------------------------------------------------------------------------

  private status(resource: ControlledResource, name: string, file: string | null, error: string | null): ResourceStatus {
    const k = key(resource, name);
    const held = this.held.get(k);
    const inFlight = this.inFlight.get(k) ?? 0;
    const state: ResourceState = !held ? 'active' : held.state === 'draining' && inFlight === 0 ? 'drained' : held.state;
    return { resource, name, state, in_flight: inFlight, since: held?.since ?? null, reason: held?.reason ?? null, file, error };
  }

  /** Saved pipelines are files read by their own service, not registry entries. */
  private async pipelines(): Promise<Array<{ name: string; file: string; error: string | null }>> {
    const service = this.ctx.services.find('pipelines');
    if (!service) return []; // a server built without the pipelines subsystem
    return (await service.list()).map((p) => ({
      name: p.name,
      file: p.file,
      error: p.valid ? null : p.errors.map((e) => e.message).join('; '),
    }));
  }

  async list(): Promise<ResourceStatus[]> {
    const { registry } = this.ctx;
    const out: ResourceStatus[] = [];
    for (const p of await this.pipelines()) out.push(this.status('pipeline', p.name, p.file, p.error));
    for (const resource of CONTROLLED_RESOURCES) {
      if (resource === 'pipeline') continue;
      const names = new Set<string>();
      for (const entry of registry.list(resource)) {
        names.add(entry.name);
        const problem = registry.problemsOf(resource).find((p) => p.entry === entry.file);
        out.push(this.status(resource, entry.name, entry.file, problem?.message ?? null));
      }
      for (const problem of registry.problemsOf(resource)) {
        const name = nameFromEntry(problem.entry);
        if (!names.has(name) && !registry.byFile(resource, problem.entry))
          out.push(this.status(resource, name, problem.entry, problem.message));
      }
    }
    return out.sort((a, b) => a.resource.localeCompare(b.resource) || a.name.localeCompare(b.name));
  }

  async get(resource: ControlledResource, name: string): Promise<ResourceStatus> {
    const found = (await this.list()).find((r) => r.resource === resource && r.name === name);
    if (!found) throw fail('HANGAR_CONTROL_RESOURCE_NOT_FOUND', { resource, name });
    return found;
  }

  async drain(
    resource: ControlledResource,
    name: string,
    options: { retry_after: number; wait_ms: number; reason?: string },
  ): Promise<ResourceStatus> {
    await this.get(resource, name);
    const k = key(resource, name);
    this.held.set(k, {
      state: 'draining',
      since: new Date().toISOString(),
      reason: options.reason ?? null,
      retryAfter: options.retry_after,
    });
    if (options.wait_ms > 0 && (this.inFlight.get(k) ?? 0) > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, options.wait_ms);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        let waiters = this.idleWaiters.get(k);
        if (!waiters) this.idleWaiters.set(k, (waiters = new Set()));
        waiters.add(done);
      });
    }
    return this.get(resource, name);
  }

  async disable(resource: ControlledResource, name: string, reason?: string): Promise<ResourceStatus> {
    await this.get(resource, name);
    this.held.set(key(resource, name), { state: 'disabled', since: new Date().toISOString(), reason: reason ?? null, retryAfter: 0 });
    return this.get(resource, name);
  }

  async enable(resource: ControlledResource, name: string): Promise<ResourceStatus> {
    await this.get(resource, name);
    this.held.delete(key(resource, name));
    return this.get(resource, name);
  }

  setMaintenance(request: { enabled: boolean; message?: string; retry_after: number }): MaintenanceStatus {
    this.maintenance = request.enabled
      ? { enabled: true, message: request.message ?? null, retry_after: request.retry_after, since: new Date().toISOString() }
      : { enabled: false, message: null, retry_after: request.retry_after, since: null };
    return this.maintenanceStatus;
  }

  // ---- server ----------------------------------------------------------------------------------

  async rediscover(): Promise<{
    ms: number;
    loaded: Record<string, number>;
    errors: Array<{ kind: string; file: string; message: string }>;
  }> {
    const started = Date.now();
    await this.ctx.discovery.scan();
    const loaded: Record<string, number> = {};
    for (const kind of this.ctx.registry.kinds()) loaded[kind] = this.ctx.registry.list(kind).length;
    const errors = this.ctx.registry.problemsOf().map((p) => ({ kind: p.kind, file: p.entry, message: p.message }));
    return { ms: Date.now() - started, loaded, errors };
  }

  settings(): Record<string, unknown> {
    return {
      ...redactSettings(this.ctx.settings),
      // What is in effect now, where the control plane changed it.
      logLevel: this.ctx.log.level,
      rateLimit: this.rateLimit(),
    };
  }

  setLogLevel(level: LogLevel): { level: LogLevel; previous: LogLevel } {
    const previous = this.ctx.log.level;
    this.ctx.log.level = level;
    return { level, previous };
  }

  rateLimit(): { enabled: boolean; window_ms: number; max: number } {
    const limits = this.ctx.services.get('rateLimiter').limits;
    return { enabled: limits.enabled, window_ms: limits.windowMs, max: limits.max };
  }

  setRateLimit(change: { enabled?: boolean; window_ms?: number; max?: number }) {
    const current = this.ctx.services.get('rateLimiter').limits;
    this.ctx.services.get('rateLimiter').reconfigure({
      enabled: change.enabled ?? current.enabled,
      windowMs: change.window_ms ?? current.windowMs,
      max: change.max ?? current.max,
    });
    return this.rateLimit();
  }

  /** Log a call the gate refused (503), as the invocation log's middleware would have. */
  refused(call: ResourceCall, principal: string, input: unknown, error: string): void {
    this.ctx.services.find('invocations')?.record({
      resource: call.resource,
      name: call.name,
      operation: call.operation,
      principal,
      started: Date.now(),
      duration_ms: 0,
      ok: false,
      http_status: 503,
      input,
      error,
    });
  }

  /** Log a control action to the invocation log and the server log. */
  audit(
    action: string,
    target: string,
    principal: string,
    started: number,
    outcome: { ok: boolean; input?: unknown; output?: unknown; error?: unknown },
  ): void {
    this.ctx.services.find('invocations')?.record({
      resource: 'control',
      name: action,
      operation: target,
      principal,
      started,
      ok: outcome.ok,
      http_status: outcome.ok ? 200 : undefined,
      input: outcome.input,
      output: outcome.output,
      error: outcome.ok ? null : errorMessage(outcome.error),
    });
    this.ctx.log.info(`control: ${action} ${target}`, { principal, ok: outcome.ok });
  }
}

/**
 * The invocation log as the server wires it: the `InvocationLog` published as `ctx.invocations`
 * (every subsystem records through it), the recording middleware for agents, endpoints and
 * pipelines, and the /api/v1/logs routes. It is mounted right after the control plane's gate and
 * before every other router, so the middleware sees every request the gate lets through.
 */
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { resolveSecret } from '../kernel/settings.js';
import { recordInvocations } from './hook.js';
import { LOG_DOCS, logRoutes } from './routes.js';
import { InvocationLog } from './service.js';

const logs = new WeakMap<HangarContext, InvocationLog>();

export function invocationLogOf(ctx: HangarContext): InvocationLog {
  const log = logs.get(ctx);
  if (!log) throw new Error('the logs subsystem is not set up on this server');
  return log;
}

/** The secret values this server knows, resolved now: they are scrubbed from logged text. */
function knownSecrets(ctx: HangarContext): string[] {
  const refs = [...Object.values(ctx.settings.auth.tokens), ...Object.values(ctx.runtimeTokens), ctx.settings.model.apiKey, ctx.settings.control.token];
  return refs.flatMap((ref) => {
    try {
      const value = resolveSecret(ref);
      return value ? [value] : [];
    } catch {
      return [];
    }
  });
}

export const logsSubsystem: Subsystem = {
  name: 'logs',
  setup(ctx) {
    const { enabled, retain, maxFieldChars } = ctx.settings.logs;
    const log = new InvocationLog({ enabled, retain, maxFieldChars, dir: ctx.paths.logs, store: ctx.store, log: ctx.log, knownSecrets: () => knownSecrets(ctx) });
    logs.set(ctx, log);
    ctx.invocations = log;
    ctx.openapi.add(...LOG_DOCS);
  },
  routes(app, ctx) {
    const log = invocationLogOf(ctx);
    app.addHook('preHandler', recordInvocations(log, ctx.settings.logs.maxFieldChars * 2));
    logRoutes(app, log);
  },
  async close(ctx) {
    await logs.get(ctx)?.drain();
  },
};

/**
 * The invocation log as the server wires it: the `InvocationLog`, provided as the `invocations`
 * service (every subsystem that calls a resource records through it), the recording hook for
 * agents, endpoints and pipelines, and the /api/v1/logs routes. The hook is a preHandler, so it
 * sees the calls the control gate (a preValidation hook) lets through, wherever either subsystem
 * sits in the list.
 *
 * The routes and their schemas are loaded by the first request under /api/v1/logs
 * (core/http/on-first-use.ts), not at start: the recording hook and the service do not need them.
 */

import { mountOnFirstUse } from '../http/on-first-use.js';
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { resolveSecret } from '../kernel/settings.js';
import { recordInvocations } from './hook.js';
import { InvocationLog } from './service.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    invocations: InvocationLog;
  }
}

/** The secret values this server knows, resolved now: they are scrubbed from logged text. */
function knownSecrets(ctx: HangarContext): string[] {
  const refs = [
    ...Object.values(ctx.settings.auth.tokens),
    ...Object.values(ctx.runtimeTokens),
    ctx.settings.model.apiKey,
    ctx.settings.control.token,
  ];
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
  provides: ['invocations'],
  setup(ctx) {
    const { enabled, retain, maxFieldChars } = ctx.settings.logs;
    const log = new InvocationLog({
      enabled,
      retain,
      maxFieldChars,
      dir: ctx.paths.logs,
      store: ctx.store,
      log: ctx.log,
      knownSecrets: () => knownSecrets(ctx),
    });
    ctx.services.provide('invocations', log);
  },
  routes(app, ctx) {
    const log = ctx.services.get('invocations');
    app.addHook('preHandler', recordInvocations(log, ctx.settings.logs.maxFieldChars * 2));
    mountOnFirstUse(app, ctx.services.get('openapi'), {
      prefixes: ['/api/v1/logs'],
      load: async () => ({ routes: (await import('./routes.js')).logRoutes(log) }),
    });
  },
  async close(ctx) {
    await ctx.services.find('invocations')?.drain();
  },
};

import { mountRoutes } from '../http/route.js';
import type { Subsystem } from '../kernel/context.js';
import { type EventChannel, eventChannel } from './events.js';
import { UI_PUBLIC_PATHS, uiRoutes } from './routes.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    uiEvents: EventChannel;
  }
}

export const EVENTS_PATH = '/api/v1/events';

/**
 * The `ui` subsystem: the views of desktop/views/ at /ui/ (routes.ts says why they are public) and
 * the live channel at /api/v1/events, provided as `uiEvents`.
 */
export const uiSubsystem: Subsystem = {
  name: 'ui',
  provides: ['uiEvents'],
  setup(ctx) {
    for (const path of UI_PUBLIC_PATHS) ctx.publicPaths.add(path);
    const channel = eventChannel(ctx);
    ctx.services.provide('uiEvents', channel);
    ctx.upgrades.set(EVENTS_PATH, channel.handler);
  },
  routes: (app) => mountRoutes(app, uiRoutes()),
  close(ctx) {
    ctx.services.find('uiEvents')?.close();
  },
};

import { randomBytes } from 'node:crypto';
import { Router, type NextFunction, type Request, type Response } from 'express';
import type { Subsystem } from '../kernel/context.js';
import { uiAssets, UI_FILES } from './assets.js';
import { uiContentSecurityPolicy } from './csp.js';
import { eventChannel, type EventChannel } from './events.js';

/**
 * The `ui` subsystem: the views of desktop/views/ at /ui/ (the same UI the Electron window shows,
 * for any browser), and the live channel at /api/v1/events.
 *
 * Decision: the UI files (page, bundle, styles, their source maps) are public paths. They hold no
 * data, and a browser pointed at /ui/ cannot send a bearer token with a page load; every API call
 * the UI then makes carries the token (from the desktop bridge, or typed once into the UI when the
 * server has tokens configured). They are added to the server's `ctx.publicPaths` at setup.
 */
const channels = new WeakMap<object, EventChannel>();
export const EVENTS_PATH = '/api/v1/events';

export const uiSubsystem: Subsystem = {
  name: 'ui',
  setup(ctx) {
    for (const file of ['', ...UI_FILES]) ctx.publicPaths.add(`/ui/${file}`);
    const channel = eventChannel(ctx);
    channels.set(ctx, channel);
    ctx.upgrades.set(EVENTS_PATH, channel.handler);
  },
  routes() {
    const router = Router();
    // A regex, because the string '/ui' would also match '/ui/' (non-strict routing) and loop.
    router.get(/^\/ui$/, (_req, res) => res.redirect(301, '/ui/'));
    router.get(/^\/ui\/(.*)$/, async (req: Request, res: Response, next: NextFunction) => {
      // The views route with the URL hash (#/studio/echo), so the server only knows a few files.
      const name = String((req.params as Record<string, string>)[0] ?? '') || 'index.html';
      if (!(UI_FILES as readonly string[]).includes(name)) return next();
      const asset = (await uiAssets()).get(name)!;
      const origin = `${req.protocol}://${req.headers.host ?? ''}`;
      let body = asset.body;
      let nonce: string | undefined;
      if (name === 'index.html') {
        nonce = randomBytes(16).toString('base64');
        body = Buffer.from(body.toString('utf8').replace('content="{{STYLE_NONCE}}"', `content="${nonce}"`));
      }
      res
        .status(200)
        .type(asset.type)
        .set({
          'Content-Security-Policy': uiContentSecurityPolicy(origin, nonce),
          'X-Content-Type-Options': 'nosniff',
          'Referrer-Policy': 'no-referrer',
          'Cross-Origin-Opener-Policy': 'same-origin',
          // The bundle changes with the source; a reload must pick it up.
          'Cache-Control': 'no-cache',
        })
        .send(body);
    });
    return router;
  },
  close(ctx) {
    channels.get(ctx)?.close();
  },
};

import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sentPathOf } from '../http/request.js';
import type { Subsystem } from '../kernel/context.js';
import { uiAssets, UI_FILES } from './assets.js';
import { OUTPUT_SANDBOX_POLICY, uiContentSecurityPolicy } from './csp.js';
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
    // `/ui` is the page's normalised path (`/ui/` as sent).
    for (const file of UI_FILES) ctx.publicPaths.add(`/ui/${file}`);
    ctx.publicPaths.add('/ui');
    const channel = eventChannel(ctx);
    channels.set(ctx, channel);
    ctx.upgrades.set(EVENTS_PATH, channel.handler);
  },
  routes(app) {
    // `/ui` and `/ui/` both land here (the path is normalised without its trailing slash); only
    // `/ui/` as sent may serve the page, or its relative asset URLs would resolve against `/`.
    app.get('/ui', async (req, reply) => (sentPathOf(req).endsWith('/') ? serve('index.html', req, reply) : reply.redirect('/ui/', 301)));
    app.get('/ui/*', async (req, reply) => serve((req.params as { '*': string })['*'] || 'index.html', req, reply));
    // The views route with the URL hash (#/studio/echo), so the server only knows a few files.
    async function serve(name: string, req: FastifyRequest, reply: FastifyReply) {
      if (!(UI_FILES as readonly string[]).includes(name)) return reply.callNotFound();
      const asset = (await uiAssets()).get(name)!;
      const origin = `${req.protocol}://${req.headers.host ?? ''}`;
      let body = asset.body;
      let nonce: string | undefined;
      if (name === 'index.html') {
        nonce = randomBytes(16).toString('base64');
        body = Buffer.from(body.toString('utf8').replace('content="{{STYLE_NONCE}}"', `content="${nonce}"`));
      }
      return reply
        .code(200)
        .type(asset.type)
        .headers({
          // The output frame holds a cell's markup: sandboxed, never the UI's own policy.
          'Content-Security-Policy': name === 'output-frame.html' ? OUTPUT_SANDBOX_POLICY : uiContentSecurityPolicy(origin, nonce),
          'X-Content-Type-Options': 'nosniff',
          'Referrer-Policy': 'no-referrer',
          'Cross-Origin-Opener-Policy': 'same-origin',
          // The bundle changes with the source; a reload must pick it up.
          'Cache-Control': 'no-cache',
        })
        .send(body);
    }
  },
  close(ctx) {
    channels.get(ctx)?.close();
  },
};

import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OUTPUT_SANDBOX_POLICY, uiContentSecurityPolicy } from '../http/csp.js';
import { sentPathOf } from '../http/request.js';
import { type AnyRoute, defineRoute } from '../http/route.js';
import { UI_FILES, type UiFile, uiAssets } from './assets.js';

/**
 * The UI's files at /ui/: the views of desktop/views/ (the same UI the Electron window shows, for
 * any browser). One route per file: the views route with the URL hash (#/studio/echo), so the
 * server only knows these few files, and any other path under /ui/ is the server's ordinary 404.
 *
 * Decision: the files (page, bundle, styles, their source maps) are public. They hold no data, and
 * a browser pointed at /ui/ cannot send a bearer token with a page load; every API call the UI
 * then makes carries the token (from the desktop bridge, or typed once into the UI when the server
 * has tokens configured). They are kept out of /openapi.json: they are not API.
 */
export function uiRoutes(): AnyRoute[] {
  const config = { hidden: true, public: true };
  return [
    // `/ui` and `/ui/` both land here (the path is normalised without its trailing slash); only
    // `/ui/` as sent may serve the page, or its relative asset URLs would resolve against `/`.
    defineRoute({
      method: 'GET',
      url: '/ui',
      summary: 'The UI page',
      config,
      handler: ({ req, reply }) => (sentPathOf(req).endsWith('/') ? serve('index.html', req, reply) : reply.redirect('/ui/', 301)),
    }),
    ...UI_FILES.map((file) =>
      defineRoute({
        method: 'GET',
        url: `/ui/${file}`,
        summary: `The UI's ${file}`,
        config,
        handler: ({ req, reply }) => serve(file, req, reply),
      }),
    ),
  ];
}

/** The public paths the UI's routes add (the security hooks read the server's set). */
export const UI_PUBLIC_PATHS: readonly string[] = ['/ui', ...UI_FILES.map((file) => `/ui/${file}`)];

async function serve(name: UiFile, req: FastifyRequest, reply: FastifyReply) {
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

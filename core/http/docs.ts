import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { OpenApiRegistry } from './openapi.js';
import { type AnyRoute, defineRoute, mountRoutes } from './route.js';

/**
 * GET /openapi.json (built live) and GET /docs, Swagger UI served from the swagger-ui-dist package
 * — no CDN, so the docs work offline. The page loads only same-origin scripts, allowing a strict CSP.
 */
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'";

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hangar API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script></body></html>`;

const tags = ['platform'];

/**
 * One collapsed section per tag, sorted, under a search box: the page opens as a short table of
 * contents instead of every operation expanded at once (some 30,000 pixels). Swagger UI's own
 * filter matches tag names only; the plugin below also matches an operation's path, method and
 * summary, so typing `invoke` or `/threads` finds the routes wherever they are tagged (a tag whose
 * name matches keeps all its operations). Deep links (`/docs#/agents/…`) still open one operation.
 */
const INIT_SCRIPT = `const searchEverything = () => ({
  fn: {
    opsFilter: (taggedOps, phrase) => {
      const query = String(phrase).trim().toLowerCase();
      if (!query) return taggedOps;
      return taggedOps
        .map((tagged, tag) =>
          String(tag).toLowerCase().includes(query)
            ? tagged
            : tagged.set('operations', tagged.get('operations').filter((op) =>
                [op.get('path'), op.get('method'), op.getIn(['operation', 'summary']), op.getIn(['operation', 'operationId'])]
                  .join(' ').toLowerCase().includes(query))),
        )
        .filter((tagged) => tagged.get('operations').size > 0);
    },
  },
});
window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  docExpansion: 'none',
  filter: true,
  tagsSorter: 'alpha',
  displayRequestDuration: true,
  plugins: [searchEverything],
});
`;

export function docsRoutes(openapi: OpenApiRegistry): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/openapi.json',
      summary: 'This OpenAPI 3.1 document, built from the routes the server has (agents listed as the values of {agent})',
      tags,
      handler: async () => openapi.document(),
    }),
    defineRoute({
      method: 'GET',
      url: '/docs',
      summary: 'Swagger UI over /openapi.json (HTML, served offline)',
      tags,
      schema: { response: { 200: { description: 'OK', contentType: 'text/html' } } },
      handler: async ({ reply }) => reply.type('text/html; charset=utf-8').header('Content-Security-Policy', CSP).send(PAGE),
    }),
    defineRoute({
      method: 'GET',
      url: '/docs/init.js',
      summary: "The docs page's start-up script",
      // A file of the page, as its assets are, not an API.
      config: { hidden: true },
      handler: async ({ reply }) => reply.type('text/javascript; charset=utf-8').send(INIT_SCRIPT),
    }),
  ];
}

/**
 * Swagger UI's files under one wildcard route, sent by `@fastify/send` (what @fastify/static is
 * built on: ranges, ETags, conditional GETs), imported on the first request: @fastify/static loaded
 * send, glob and a plugin version check at every start (~10 ms of CPU, a profile of a cold start)
 * for a page few starts open. The package folder holds only its files; send refuses paths that
 * leave it and dotfiles, and anything it cannot send is the app's own 404.
 */
function assetsRoute(): AnyRoute {
  const root = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  let sender: Promise<typeof import('@fastify/send').default> | undefined;
  return defineRoute({
    method: 'GET',
    url: '/docs/assets/*',
    summary: "Swagger UI's files",
    config: { hidden: true },
    handler: async ({ req, reply }) => {
      const send = await (sender ??= import('@fastify/send').then((m) => m.default));
      // send URI-decodes the path it is given; the router has decoded it once already.
      const file = encodeURI(`/${(req.params as { '*': string })['*']}`);
      const sent = await send(req.raw, file, { root, index: false, maxAge: '1h' });
      // A file, or its 304 / 412 / 416 (conditional and ranged requests) with send's headers.
      if (sent.type === 'file') return reply.code(sent.statusCode).headers(sent.headers).send(sent.stream);
      return reply.callNotFound();
    },
  });
}

export function mountDocs(app: FastifyInstance, openapi: OpenApiRegistry): void {
  mountRoutes(app, [...docsRoutes(openapi), assetsRoute()]);
}

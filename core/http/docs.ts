import { createRequire } from 'node:module';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
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
      handler: async ({ reply }) =>
        reply
          .type('text/javascript; charset=utf-8')
          .send(`window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true });`),
    }),
  ];
}

/** The routes above and Swagger UI's files, one route each (`wildcard: false`): nothing else of the package folder is reachable. */
export function mountDocs(app: FastifyInstance, openapi: OpenApiRegistry): void {
  mountRoutes(app, docsRoutes(openapi));
  const assets = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  app.register(fastifyStatic, { root: assets, prefix: '/docs/assets/', index: false, maxAge: '1h', decorateReply: false, wildcard: false });
}

import { createRequire } from 'node:module';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import type { OpenApiRegistry } from './openapi.js';

/**
 * GET /openapi.json (built live) and GET /docs, Swagger UI served from the swagger-ui-dist package
 * — no CDN, so the docs work offline. The page loads only same-origin scripts, allowing a strict CSP.
 */
export function docsRoutes(app: FastifyInstance, openapi: OpenApiRegistry): void {
  const assets = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const csp = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'";

  app.get('/openapi.json', async () => openapi.document());
  app.get('/docs', async (_req, reply) =>
    reply.type('text/html; charset=utf-8').header('Content-Security-Policy', csp).send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hangar API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script></body></html>`),
  );
  app.get('/docs/init.js', async (_req, reply) =>
    reply.type('text/javascript; charset=utf-8').send(`window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true });`),
  );
  app.register(fastifyStatic, { root: assets, prefix: '/docs/assets/', index: false, maxAge: '1h', decorateReply: false, wildcard: false });
}

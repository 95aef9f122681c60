import { createRequire } from 'node:module';
import path from 'node:path';
import express, { Router } from 'express';
import type { OpenApiRegistry } from './openapi.js';

/**
 * GET /openapi.json (built live) and GET /docs, Swagger UI served from the swagger-ui-dist package
 * — no CDN, so the docs work offline. The page loads only same-origin scripts, allowing a strict CSP.
 */
export function docsRoutes(openapi: OpenApiRegistry): Router {
  const router = Router();
  const assets = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const csp = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'";

  router.get('/openapi.json', (_req, res) => {
    res.json(openapi.document());
  });
  router.get('/docs', (_req, res) => {
    res.type('html').set('Content-Security-Policy', csp).send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hangar API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script></body></html>`);
  });
  router.get('/docs/init.js', (_req, res) => {
    res.type('js').send(`window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true });`);
  });
  router.use('/docs/assets', express.static(assets, { index: false, fallthrough: false, maxAge: '1h' }));
  return router;
}

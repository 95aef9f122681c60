/** The docs subsystem: /openapi.json, generated from the routes every other subsystem declares, and Swagger UI at /docs. */
import type { Subsystem } from '../kernel/context.js';
import { mountDocs } from './docs.js';

export const docsSubsystem: Subsystem = {
  name: 'docs',
  routes: (app, ctx) => mountDocs(app, ctx.services.get('openapi')),
};

import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { HangarContext } from '../kernel/context.js';

export const StorageStats = z.object({
  backend: z.string(),
  path: z.string(),
  files: z.number().int(),
  bytes: z.number().int(),
  collections: z.record(z.string(), z.object({ records: z.number().int(), files: z.number().int(), bytes: z.number().int() })),
});

export function storageRoutes(app: FastifyInstance, ctx: HangarContext): void {
  app.get('/api/v1/storage/stats', async () => {
    return ctx.store.stats();
  });
  ctx.openapi.add({
    method: 'get',
    path: '/api/v1/storage/stats',
    summary: 'Storage backend statistics: files, records per collection, bytes',
    tags: ['platform'],
    responses: { 200: { description: 'OK', schema: StorageStats } },
  });
}

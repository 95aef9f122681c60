import { Router } from 'express';
import { z } from 'zod';
import type { HangarContext } from '../kernel/context.js';

export const StorageStats = z.object({
  backend: z.string(),
  path: z.string(),
  files: z.number().int(),
  bytes: z.number().int(),
  collections: z.record(z.string(), z.object({ records: z.number().int(), files: z.number().int(), bytes: z.number().int() })),
});

export function storageRoutes(ctx: HangarContext): Router {
  const router = Router();
  router.get('/api/v1/storage/stats', async (_req, res) => {
    res.json(await ctx.store.stats());
  });
  ctx.openapi.add({
    method: 'get',
    path: '/api/v1/storage/stats',
    summary: 'Storage backend statistics: files, records per collection, bytes',
    tags: ['platform'],
    responses: { 200: { description: 'OK', schema: StorageStats } },
  });
  return router;
}

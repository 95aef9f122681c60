import { z } from 'zod';

/**
 * What `Store.stats()` answers: the backend, its file and what it holds per collection. It documents
 * the route, so it is built on first use (`z.lazy`, core/http/route.ts).
 */
export const StorageStats = z.lazy(() =>
  z.object({
    backend: z.string(),
    path: z.string(),
    files: z.number().int(),
    bytes: z.number().int(),
    collections: z.record(z.string(), z.object({ records: z.number().int(), files: z.number().int(), bytes: z.number().int() })),
  }),
);

import { z } from 'zod';

/** What `Store.stats()` answers: the backend, its file and what it holds per collection. */
export const StorageStats = z.object({
  backend: z.string(),
  path: z.string(),
  files: z.number().int(),
  bytes: z.number().int(),
  collections: z.record(z.string(), z.object({ records: z.number().int(), files: z.number().int(), bytes: z.number().int() })),
});

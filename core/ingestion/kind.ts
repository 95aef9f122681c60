/**
 * The `ingestor` drop-in kind: how discovery turns `ingestors/<name>.ts` (or
 * `ingestors/<name>/index.ts`) into a checked definition.
 */
import { z } from 'zod';
import type { DropInKind } from '../kernel/registry.js';
import { PARSE_ONCE } from '../lib/parse-once.js';
import type { IngestorDefinition } from './define.js';

export const COLLECTION_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/i;

// biome-ignore lint/suspicious/noExplicitAny: any function passes; its arguments are the drop-in's business
const fn = z.custom<(...args: any[]) => unknown>((v) => typeof v === 'function', { message: 'expected a function' });
const isZod = (v: unknown): v is z.ZodType => typeof v === 'object' && v !== null && typeof (v as z.ZodType).safeParse === 'function';

const DefinitionShape = z.object({
  name: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'expected lowercase letters, digits, "-" or "_"'),
  version: z.string().min(1).default('0.0.0'),
  description: z.string().optional(),
  collection: z.string().regex(COLLECTION_NAME, 'expected a collection name (letters, digits, ".", "_", "-")'),
  options: z.custom<z.ZodType>(isZod, { message: 'expected a zod schema' }).optional(),
  discover: fn,
  read: fn,
  health: fn.optional(),
  timeout_ms: z.number().int().positive().max(86_400_000).optional(),
  max_heap_mb: z.number().int().min(16).max(65_536).optional(),
  isolation: z.enum(['supervised', 'inline']).optional(),
});

export type LoadedIngestor = IngestorDefinition & { name: string; version: string };

export const ingestorKind: DropInKind<LoadedIngestor> = {
  kind: 'ingestor',
  folder: 'ingestors',
  load(exported, defaultName) {
    if (exported === null || typeof exported !== 'object') throw new Error('expected the module to export default defineIngestor({...})');
    const raw = exported as Record<string, unknown>;
    const result = DefinitionShape.safeParse({ ...raw, name: raw.name ?? defaultName.toLowerCase() }, PARSE_ONCE);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      throw new Error(`${issue.path.join('.') || 'definition'}: ${issue.message}`);
    }
    return result.data as unknown as LoadedIngestor;
  },
  nameOf: (definition) => definition.name,
};

/**
 * The `plugin` drop-in kind: how discovery turns `plugins/<name>.ts` (or `plugins/<name>/index.ts`)
 * into a checked definition. Checked before anything runs (the model is loaded later, in the pool).
 */
import { z } from 'zod';
import type { DropInKind } from '../kernel/registry.js';
import { PARSE_ONCE } from '../lib/parse-once.js';
import type { PluginDefinition } from './define.js';

export const PLUGIN_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

const isZod = (v: unknown): v is z.ZodType => typeof v === 'object' && v !== null && typeof (v as z.ZodType).safeParse === 'function';
// biome-ignore lint/suspicious/noExplicitAny: any function passes; its arguments are the drop-in's business
const fn = z.custom<(...args: any[]) => unknown>((v) => typeof v === 'function', { message: 'expected a function' });

const DefinitionShape = z.object({
  name: z.string().regex(PLUGIN_NAME, 'expected lowercase letters, digits, "-" or "_"'),
  version: z.string().min(1).default('0.0.0'),
  description: z.string().optional(),
  card: z.object({
    task: z.string().min(1),
    description: z.string().optional(),
    training_data: z.string().optional(),
    limitations: z.array(z.string()).optional(),
    metrics: z.record(z.string(), z.union([z.number(), z.string()])).optional(),
    license: z.string().optional(),
    authors: z.array(z.string()).optional(),
    references: z.array(z.string()).optional(),
  }),
  input: z.custom<z.ZodType>(isZod, { message: 'expected a zod schema' }),
  output: z.custom<z.ZodType>(isZod, { message: 'expected a zod schema' }).optional(),
  load: fn,
  predict: fn,
  evaluate: fn.optional(),
  timeoutMs: z.number().int().positive().optional(),
});

export type LoadedPlugin = PluginDefinition & { name: string; version: string };

export const pluginKind: DropInKind<LoadedPlugin> = {
  kind: 'plugin',
  folder: 'plugins',
  load(exported, defaultName) {
    if (exported === null || typeof exported !== 'object') throw new Error('expected the module to export default definePlugin({...})');
    const raw = exported as Record<string, unknown>;
    const result = DefinitionShape.safeParse({ ...raw, name: raw.name ?? defaultName.toLowerCase() }, PARSE_ONCE);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      throw new Error(`${issue.path.join('.') || 'definition'}: ${issue.message}`);
    }
    return result.data as unknown as LoadedPlugin;
  },
  nameOf: (definition) => definition.name,
};

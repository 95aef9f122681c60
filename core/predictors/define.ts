/**
 * What an ML plugin drop-in declares (`plugins/<name>.ts` or `plugins/<name>/index.ts`):
 *
 * @example
 * import { definePlugin, z } from 'hangar';
 * export default definePlugin({
 *   version: '1.0.0',
 *   card: { task: 'classification', training_data: 'iris.csv (150 rows)', limitations: ['…'] },
 *   input: z.object({ petal_length: z.number() }),
 *   output: z.object({ label: z.string() }),
 *   load: ({ dir }) => train(readFileSync(join(dir, 'iris.csv'), 'utf8')),
 *   predict: (model, input) => model.classify(input),
 *   evaluate: (model) => model.heldOutMetrics,
 * });
 *
 * `load` and `predict` run inside a worker thread of the plugin pool, never on the HTTP thread:
 * the module is evaluated there again, so a plugin must not rely on state shared with the server.
 */
import type { z } from 'zod';

export interface ModelCardInput {
  /** What the model does: 'classification', 'regression', 'embedding', … */
  task: string;
  description?: string;
  /** Where the training data comes from, its size and licence. */
  training_data?: string;
  /** Known failure modes and out-of-scope uses. */
  limitations?: string[];
  /** Metrics known in advance; metrics returned by `evaluate` are merged over them. */
  metrics?: Record<string, number | string>;
  license?: string;
  authors?: string[];
  references?: string[];
}

export interface PluginLoadContext {
  /** Folder of the plugin's entry file: shipped data files are read relative to it. */
  dir: string;
  /** The entry file itself. */
  file: string;
}

// biome-ignore lint/suspicious/noExplicitAny: defaults for a plugin written without type parameters
export interface PluginDefinition<Input = any, Output = any, Model = any> {
  /** Defaults to the file (or folder) name. */
  name?: string;
  version?: string;
  description?: string;
  card: ModelCardInput;
  /** Checked before a prediction runs; a failure is a 422 naming the field. */
  input: z.ZodType<Input>;
  /** When given, every prediction is checked against it (a mismatch is the plugin's fault: 500). */
  output?: z.ZodType<Output>;
  /** Build the model (read weights, or train on shipped data). Runs once per worker thread. */
  load(ctx: PluginLoadContext): Model | Promise<Model>;
  predict(model: Model, input: Input): Output | Promise<Output>;
  /** Metrics for the card computed from the loaded model, e.g. accuracy on a held-out split. */
  evaluate?(model: Model): Record<string, number | string> | Promise<Record<string, number | string>>;
  /** Longest one prediction call may take before its worker is stopped; default 30 s. */
  timeoutMs?: number;
}

export const PLUGIN_TAG = Symbol.for('hangar.kind');

/**
 * Declare an ML plugin. Only tags and returns the definition; it is validated at discovery.
 */
export function definePlugin<Input, Output, Model>(
  definition: PluginDefinition<Input, Output, Model>,
): PluginDefinition<Input, Output, Model> {
  Object.defineProperty(definition, PLUGIN_TAG, { value: 'plugin', enumerable: false });
  return definition;
}

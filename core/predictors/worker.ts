/**
 * The plugin pool's worker: runs inside a piscina thread. It evaluates a plugin's bundle (written by
 * the server, so both threads run byte-identical code), calls `load()` once per plugin version and
 * reload generation, and answers predictions against the model it keeps.
 *
 * A plugin that throws fails its item; a plugin that kills the thread (process.exit, an uncaught
 * error in a timer, running out of heap) fails the task in flight on this thread only — piscina
 * starts a fresh thread, which loads the model again on its first task.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as zod from 'zod';
import { formatIssues } from '../http/validate.js';
import { errorMessage } from '../kernel/errors.js';
import { evaluateModule } from '../kernel/evaluator.js';
import * as sdk from '../sdk.js';
import type { PluginDefinition } from './define.js';

/** Where a plugin's built code is and which load of it is wanted. */
export interface ModuleRef {
  name: string;
  /** Absolute path of the plugin's entry (its folder is `dir` in `load`). */
  entry: string;
  /** Absolute path of the bundled CommonJS code (and `<code>.map`). */
  code: string;
  root: string;
  hash: string;
  /** Bumped by a reload: a worker holding an older generation loads again. */
  generation: number;
}

export type PluginTask =
  | { op: 'load'; module: ModuleRef }
  /** `validate`: check each input against the plugin's schema here (batches skip the HTTP-thread check). */
  | { op: 'predict'; module: ModuleRef; inputs: unknown[]; validate: boolean; offset: number }
  /** A batch chunk answered as JSON text, so serialising 10,000 results never runs on the HTTP thread. */
  | { op: 'batch'; module: ModuleRef; inputs: unknown[]; offset: number };

export type ItemResult = { ok: true; output: unknown } | { ok: false; status: number; error: string };

/** A chunk of batch results: `json` is its items (`{index, ok, …}`) joined by commas. */
export interface EncodedChunk {
  json: string;
  failed: number;
  firstError: string | null;
}

/** The JSON of one batch item, shared by the worker and the server's failure path. */
export function encodeItem(index: number, item: ItemResult): string {
  return JSON.stringify(item.ok ? { index, ok: true, output: item.output } : { index, ok: false, status: item.status, error: item.error });
}

export interface LoadReport {
  metrics: Record<string, number | string>;
  load_ms: number;
}

interface Loaded {
  definition: PluginDefinition;
  model: unknown;
  report: LoadReport;
}

const PROVIDED = { hangar: sdk, zod, 'zod/v4': zod };
/** name → the one version this thread keeps (older versions are dropped so the GC can free them). */
const cache = new Map<string, { key: string; loaded: Promise<Loaded> }>();

async function loadModule(ref: ModuleRef): Promise<Loaded> {
  const started = performance.now();
  const built = {
    file: ref.entry,
    code: readFileSync(ref.code, 'utf8'),
    map: JSON.parse(readFileSync(`${ref.code}.map`, 'utf8')),
    inputs: [ref.entry],
    hash: ref.hash,
  };
  const exported = evaluateModule(built, { root: ref.root, provided: PROVIDED });
  const definition = (exported.default ?? exported) as PluginDefinition;
  const model = await definition.load({ dir: path.dirname(ref.entry), file: ref.entry });
  const metrics = definition.evaluate ? await definition.evaluate(model) : {};
  return { definition, model, report: { metrics: { ...metrics }, load_ms: Math.round(performance.now() - started) } };
}

function loaded(ref: ModuleRef): Promise<Loaded> {
  const key = `${ref.hash}:${ref.generation}`;
  const held = cache.get(ref.name);
  if (held?.key === key) return held.loaded;
  const promise = loadModule(ref);
  // A failed load is not cached: the next task tries again (the server decides when to retry).
  promise.catch(() => {
    if (cache.get(ref.name)?.loaded === promise) cache.delete(ref.name);
  });
  cache.set(ref.name, { key, loaded: promise });
  return promise;
}

async function predictOne(plugin: Loaded, input: unknown, validate: boolean, where: string): Promise<ItemResult> {
  const { definition, model } = plugin;
  let value = input;
  if (validate) {
    const parsed = definition.input.safeParse(input);
    if (!parsed.success) return { ok: false, status: 422, error: formatIssues(parsed.error.issues, where) };
    value = parsed.data;
  }
  let output: unknown;
  try {
    output = await definition.predict(model, value);
  } catch (err) {
    return { ok: false, status: 500, error: `predict failed: ${errorMessage(err)}` };
  }
  if (definition.output) {
    const checked = definition.output.safeParse(output);
    if (!checked.success)
      return { ok: false, status: 500, error: `the plugin returned an invalid output: ${formatIssues(checked.error.issues, 'output')}` };
    output = checked.data;
  }
  return { ok: true, output };
}

async function predictAll(task: Extract<PluginTask, { op: 'predict' | 'batch' }>, validate: boolean): Promise<ItemResult[]> {
  let plugin: Loaded;
  try {
    plugin = await loaded(task.module);
  } catch (err) {
    const error = `plugin ${task.module.name} failed to load in its worker: ${errorMessage(err)}`;
    return task.inputs.map(() => ({ ok: false, status: 503, error }));
  }
  const results: ItemResult[] = [];
  for (let i = 0; i < task.inputs.length; i++) {
    results.push(await predictOne(plugin, task.inputs[i], validate, `body.inputs.${task.offset + i}`));
  }
  return results;
}

export default async function run(task: PluginTask): Promise<LoadReport | ItemResult[] | EncodedChunk> {
  switch (task.op) {
    case 'load':
      // An explicit load always starts fresh, even if this thread holds the same generation.
      cache.delete(task.module.name);
      return (await loaded(task.module)).report;
    case 'predict':
      return predictAll(task, task.validate);
    case 'batch': {
      const results = await predictAll(task, true);
      let failed = 0;
      let firstError: string | null = null;
      const parts = results.map((item, i) => {
        if (!item.ok) {
          failed++;
          firstError ??= item.error;
        }
        return encodeItem(task.offset + i, item);
      });
      return { json: parts.join(','), failed, firstError };
    }
    default: {
      const never: never = task;
      throw new Error(`unknown pool task ${JSON.stringify(never)}`);
    }
  }
}

/**
 * The optional `input_schema` of a pipeline: a JSON Schema (draft 2020-12 subset that Ajv reads)
 * checked before a run starts. Compiled validators are cached by the schema's text, since the
 * definition is re-read from its file on every run.
 */
import type * as AjvPackage from 'ajv';
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import { fail } from '../kernel/errors.js';
import { packageOnFirstUse } from '../lib/on-first-use.js';

/** Made on the first schema compiled, not as the module loads: a new Ajv took ~4 ms of every start, loading ajv ~9 ms (core/lib/on-first-use.ts). */
let ajv: Ajv | undefined;
const ajvPackage = packageOnFirstUse<typeof AjvPackage>('ajv');
const cache = new Map<string, ValidateFunction>();
const MAX_CACHED = 256;

/** The compiled schema; throws Ajv's message when the schema itself is invalid. */
export function inputValidator(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = cache.get(key);
  if (!validate) {
    ajv ??= new (ajvPackage().Ajv)({ strict: false, allErrors: true, useDefaults: true });
    validate = ajv.compile(schema);
    // Old definitions are simply recompiled if they come back; the cache only saves repeat work.
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    cache.set(key, validate);
  }
  return validate;
}

/** Validate (and fill defaults into) a run input; 422 naming the first fields that fail. */
export function checkRunInput(schema: Record<string, unknown> | undefined, input: unknown, where = 'body'): void {
  if (!schema) return;
  const validate = inputValidator(schema);
  if (validate(input)) return;
  throw fail('HANGAR_PIPELINE_INPUT_INVALID', {
    problems: (validate.errors ?? [])
      .slice(0, 5)
      .map((e) => describe(e, where))
      .join('; '),
  });
}

function describe(error: ErrorObject, where: string): string {
  // `/a/0/b` → `a.0.b`; a missing property is named itself rather than its parent.
  const path = error.instancePath.split('/').filter(Boolean);
  if (error.keyword === 'required') path.push(String((error.params as { missingProperty: string }).missingProperty));
  return `${[where, ...path].join('.')}: ${error.message ?? 'is invalid'}`;
}

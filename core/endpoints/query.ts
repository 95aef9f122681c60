/**
 * Query parameters → typed input for GET and HEAD (spec rules 2–4).
 *
 * Query text carries no types, so each parameter is coerced by what the endpoint's own input model
 * expects there (read from its JSON Schema, the same one published in OpenAPI):
 * - array fields collect every occurrence of the parameter (`?tag=a&tag=b`); one occurrence is a
 *   one-element array; each item is coerced by the item type;
 * - object fields are URL-encoded JSON text (`?where=%7B%22x%22%3A1%7D`);
 * - numbers and integers from numeric text, booleans from `true`/`false` (and `1`/`0`), `null` from
 *   `null` — but only where the field cannot be a string, so `?zip=01234` stays a string when the
 *   model says string;
 * - a scalar field given twice stays an array, so validation reports it rather than silently keeping
 *   one of them.
 * Nothing here rejects: text that does not coerce is passed on unchanged and the model's validation
 * then names the parameter in a 422. Without an object model every parameter is a string (or an
 * array of strings when repeated).
 */
import { z } from 'zod';

type JsonSchema = {
  type?: string | string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
};

const schemaCache = new WeakMap<object, JsonSchema | null>();

/** The input JSON Schema of a model, or null when it cannot be expressed. Cached per model. */
export function inputJsonSchema(model: z.ZodType): JsonSchema | null {
  if (schemaCache.has(model)) return schemaCache.get(model) ?? null;
  let schema: JsonSchema | null;
  try {
    schema = z.toJSONSchema(model, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  } catch {
    schema = null;
  }
  schemaCache.set(model, schema);
  return schema;
}

export function coerceQuery(model: z.ZodType | undefined, params: URLSearchParams): Record<string, unknown> {
  const grouped = new Map<string, string[]>();
  for (const [key, value] of params) {
    const list = grouped.get(key);
    if (list) list.push(value);
    else grouped.set(key, [value]);
  }
  const properties = model ? (inputJsonSchema(model)?.properties ?? {}) : {};
  const out: Record<string, unknown> = {};
  for (const [key, values] of grouped) {
    const schema = Object.hasOwn(properties, key) ? properties[key] : undefined;
    out[key] = coerceParameter(values, schema);
  }
  return out;
}

function coerceParameter(values: string[], schema: JsonSchema | undefined): unknown {
  if (!schema) return values.length === 1 ? values[0] : values;
  const types = typesOf(schema);
  if (types.has('array') && !types.has('string')) {
    const items = arrayItems(schema);
    return values.map((v) => coerceScalar(v, items));
  }
  if (values.length > 1) return values.map((v) => coerceScalar(v, schema));
  return coerceScalar(values[0], schema);
}

function coerceScalar(raw: string, schema: JsonSchema | undefined): unknown {
  if (!schema) return raw;
  const types = typesOf(schema);
  if (types.size === 0 || types.has('string')) return raw;
  if ((types.has('number') || types.has('integer')) && raw.trim() !== '' && Number.isFinite(Number(raw))) return Number(raw);
  if (types.has('boolean')) {
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
  }
  if (types.has('null') && raw === 'null') return null;
  if (types.has('object') || types.has('array')) {
    try {
      return JSON.parse(raw);
    } catch {
      return raw;
    }
  }
  return raw;
}

/** Every JSON type a value at this schema may have (through unions and enums). Empty = anything. */
function typesOf(schema: JsonSchema): Set<string> {
  const types = new Set<string>();
  const visit = (s: JsonSchema) => {
    if (typeof s.type === 'string') types.add(s.type);
    else if (Array.isArray(s.type)) s.type.forEach((t) => types.add(t));
    for (const v of [...(s.enum ?? []), ...('const' in s ? [s.const] : [])]) {
      types.add(v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
    }
    for (const sub of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])]) visit(sub);
  };
  visit(schema);
  return types;
}

function arrayItems(schema: JsonSchema): JsonSchema | undefined {
  if (schema.items) return schema.items;
  for (const sub of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) {
    if (sub.items) return sub.items;
  }
  return undefined;
}

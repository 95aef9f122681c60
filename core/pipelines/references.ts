/**
 * `$.input…` / `$.steps.<step>.(aggregated|output)…` references: parsing, finding them in a step's
 * input template, and resolving them against a run's state. Pure functions (see schemas.ts for the
 * syntax).
 */

export type Reference =
  | { source: 'input'; path: string[] }
  | { source: 'step'; step: string; accessor: 'aggregated' | 'output'; path: string[] };

export class InvalidReference extends Error {
  override name = 'InvalidReference';
}

const SEGMENT = /^[A-Za-z0-9_-]+$/;

/** True for a string that is a reference (`$.` but not the `$$` escape). */
export const isReference = (value: unknown): value is string => typeof value === 'string' && value.startsWith('$.');

/** Parse a reference; throws InvalidReference saying what is wrong with it. */
export function parseReference(text: string): Reference {
  const parts = text.slice(2).split('.');
  // `$.input.*` (the spec's spelling of "all of the input") means the same as `$.input`.
  if (parts.length > 1 && parts[parts.length - 1] === '*') parts.pop();
  if (parts.some((p) => !SEGMENT.test(p))) {
    throw new InvalidReference(`'${text}' is not a reference: use $.input, $.input.<field> or $.steps.<step>.aggregated|output[.<field>]`);
  }
  if (parts[0] === 'input') return { source: 'input', path: parts.slice(1) };
  if (parts[0] === 'steps') {
    const [, step, accessor, ...path] = parts;
    if (!step || (accessor !== 'aggregated' && accessor !== 'output')) {
      throw new InvalidReference(`'${text}' must name a step and then .aggregated (endpoint steps) or .output (agent and plugin steps)`);
    }
    return { source: 'step', step, accessor, path };
  }
  throw new InvalidReference(`'${text}' must start with $.input or $.steps`);
}

/** Every reference string in a template, with the field path it sits at (`input.city`, `input.items.0`). */
export function referencesIn(template: unknown, field = 'input'): Array<{ field: string; text: string }> {
  if (isReference(template)) return [{ field, text: template }];
  if (Array.isArray(template)) return template.flatMap((v, i) => referencesIn(v, `${field}.${i}`));
  if (template && typeof template === 'object') {
    return Object.entries(template).flatMap(([k, v]) => referencesIn(v, `${field}.${k}`));
  }
  return [];
}

export interface RunState {
  input: unknown;
  /** step name → its value (aggregated for endpoints, output for agents and plugins). */
  steps: Map<string, unknown>;
}

/** The template with every reference replaced by its value and `$$` escapes unescaped. */
export function resolveTemplate(template: unknown, state: RunState): unknown {
  if (isReference(template)) return resolveReference(parseReference(template), state, template);
  if (typeof template === 'string' && template.startsWith('$$')) return template.slice(1);
  if (Array.isArray(template)) return template.map((v) => resolveTemplate(v, state));
  if (template && typeof template === 'object') {
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, resolveTemplate(v, state)]));
  }
  return template;
}

function resolveReference(ref: Reference, state: RunState, text: string): unknown {
  let value: unknown;
  if (ref.source === 'input') value = state.input;
  else {
    if (!state.steps.has(ref.step)) throw new InvalidReference(`${text}: step '${ref.step}' has no result`);
    value = state.steps.get(ref.step);
  }
  for (const segment of ref.path) {
    if (value === null || typeof value !== 'object') {
      throw new InvalidReference(`${text}: no field '${segment}' (the value there is ${value === null ? 'null' : typeof value})`);
    }
    value = (value as Record<string, unknown>)[segment];
  }
  // A missing field resolves to undefined and is dropped from JSON: the called resource's own
  // validation then names it, which says more than a generic "unresolved" here.
  return value;
}

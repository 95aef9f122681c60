/**
 * The step graph of a pipeline: dependencies read from `$.steps` references, validation of a draft
 * (every problem with its step and field), waves of steps that can run in parallel, and the
 * renderings for the UI (nodes/edges JSON) and for text (Mermaid).
 *
 * Order is deterministic: within a wave, steps keep their declaration order (ties by insertion,
 * as in topological sorts people can predict).
 */

import { buildGraph, cycleThrough, type Graph, waves } from '../lib/graph.js';
import { PARSE_ONCE } from '../lib/parse-once.js';
import { inputValidator } from './input.js';
import { InvalidReference, parseReference, referencesIn } from './references.js';
import {
  PipelineDefinition,
  type PipelineProblem,
  type PipelineStep,
  STEP_KINDS,
  type StepKind,
  type ValidationReport,
} from './schemas.js';

/** What the pipeline layer needs to know about the platform's resources. */
export interface StepTargets {
  exists(kind: StepKind, name: string): boolean;
  /** Declared methods of an endpoint (to check a step's `method`). */
  endpointMethods?(name: string): string[] | undefined;
  /** Notebook steps: why `cell` cannot run in the (existing) notebook, or undefined when it can. */
  notebookCellProblem?(notebook: string, cell: string): string | undefined;
}

export function kindOf(step: PipelineStep): { kind: StepKind; target: string } {
  for (const kind of STEP_KINDS) {
    const target = step[kind];
    if (target !== undefined) return { kind, target };
  }
  throw new Error(`step '${step.name}' names no endpoint, agent, plugin or notebook`);
}

/**
 * step → the steps it waits for: those it references, in order of first reference, then those in
 * its `after` list; without duplicates.
 */
export function dependencies(steps: readonly PipelineStep[]): Map<string, string[]> {
  const deps = new Map<string, string[]>();
  for (const step of steps) {
    const list: string[] = [];
    for (const { text } of referencesIn(step.input)) {
      try {
        const ref = parseReference(text);
        if (ref.source === 'step' && !list.includes(ref.step)) list.push(ref.step);
      } catch {
        // reported by validation
      }
    }
    // Waiting for itself is reported by validation as such, not as a cycle of one.
    for (const name of step.after ?? []) if (name !== step.name && !list.includes(name)) list.push(name);
    deps.set(step.name, list);
  }
  return deps;
}

/**
 * The shape check alone (no lookups): the parsed definition, or every problem with its step and
 * field. Discovery uses it to load `pipelines/*.json`, where the platform's other resources may
 * not be loaded yet; `validatePipeline` adds the checks that need them.
 */
export function parseDefinition(
  draft: unknown,
): { definition: PipelineDefinition; errors: [] } | { definition?: undefined; errors: PipelineProblem[] } {
  const parsed = PipelineDefinition.safeParse(draft, PARSE_ONCE);
  if (parsed.success) return { definition: parsed.data, errors: [] };
  const errors = parsed.error.issues.map((issue): PipelineProblem => {
    const [first, index, ...rest] = issue.path.map(String);
    const stepName = first === 'steps' && index !== undefined ? stepNameAt(draft, Number(index)) : null;
    return {
      step: stepName,
      field: first === 'steps' && index !== undefined ? rest.join('.') || `steps.${index}` : issue.path.join('.') || '(pipeline)',
      message: issue.message,
    };
  });
  return { errors };
}

/** Problems as one line, each with its step and field (error messages, discovery errors). */
export function describeProblems(problems: readonly PipelineProblem[]): string {
  return problems.map((p) => `${p.step ? `step '${p.step}' ` : ''}${p.field}: ${p.message}`).join('; ');
}

/** The steps as a dependency graph; a reference to no step is an unknown dependency there. */
function stepGraph(steps: readonly PipelineStep[]): Graph {
  const deps = dependencies(steps);
  return buildGraph(
    steps.map((s) => s.name),
    (name) => deps.get(name) ?? [],
  );
}

/** Check a draft (any JSON) completely; never throws. */
export function validatePipeline(draft: unknown, targets: StepTargets): ValidationReport & { definition?: PipelineDefinition } {
  const parsed = parseDefinition(draft);
  if (!parsed.definition) return { valid: false, errors: parsed.errors, waves: [] };
  const definition = parsed.definition;
  const errors: PipelineProblem[] = [];
  if (definition.input_schema) {
    try {
      inputValidator(definition.input_schema);
    } catch (err) {
      errors.push({ step: null, field: 'input_schema', message: `not a valid JSON Schema: ${(err as Error).message}` });
    }
  }
  const names = new Map<string, number>();
  definition.steps.forEach((step, i) => {
    if (names.has(step.name))
      errors.push({ step: step.name, field: 'name', message: `duplicate step name (also step ${names.get(step.name)! + 1})` });
    names.set(step.name, i);
  });
  const kinds = new Map<string, StepKind>();
  for (const step of definition.steps) {
    const named = STEP_KINDS.filter((k) => step[k] !== undefined);
    if (named.length !== 1) {
      errors.push({ step: step.name, field: 'endpoint', message: 'a step names exactly one of endpoint, agent, plugin or notebook' });
      continue;
    }
    const kind = named[0];
    kinds.set(step.name, kind);
    const target = step[kind]!;
    if (kind === 'notebook' && step.cell === undefined) {
      errors.push({ step: step.name, field: 'cell', message: 'a notebook step names the cell it runs' });
    } else if (kind !== 'notebook' && step.cell !== undefined) {
      errors.push({ step: step.name, field: 'cell', message: 'cell applies to notebook steps only' });
    }
    const known = targets.exists(kind, target);
    if (!known) errors.push({ step: step.name, field: kind, message: `unknown ${kind} '${target}'` });
    else if (kind === 'notebook' && step.cell !== undefined) {
      const problem = targets.notebookCellProblem?.(target, step.cell);
      if (problem) errors.push({ step: step.name, field: 'cell', message: problem });
    }
    if (known && step.method !== undefined) {
      if (kind !== 'endpoint') errors.push({ step: step.name, field: 'method', message: 'method applies to endpoint steps only' });
      else {
        const declared = targets.endpointMethods?.(target) ?? [];
        if (!declared.includes(step.method.toUpperCase())) {
          errors.push({
            step: step.name,
            field: 'method',
            message: `endpoint '${target}' does not declare ${step.method.toUpperCase()} (declared: ${declared.join(', ')})`,
          });
        }
      }
    }
  }
  const checkRefs = (template: unknown, step: string | null, field: string) => {
    for (const { field: at, text } of referencesIn(template, field)) {
      try {
        const ref = parseReference(text);
        if (ref.source !== 'step') continue;
        if (ref.step === step) errors.push({ step, field: at, message: `${text}: a step cannot use its own result` });
        else if (!names.has(ref.step)) errors.push({ step, field: at, message: `${text}: no step named '${ref.step}'` });
        else {
          const kind = kinds.get(ref.step);
          const expected = kind === 'endpoint' ? 'aggregated' : 'output';
          if (kind && ref.accessor !== expected) {
            errors.push({ step, field: at, message: `${text}: '${ref.step}' is an ${kind} step; use $.steps.${ref.step}.${expected}` });
          }
        }
      } catch (err) {
        errors.push({ step, field: at, message: err instanceof InvalidReference ? err.message : String(err) });
      }
    }
  };
  for (const step of definition.steps) {
    checkRefs(step.input, step.name, 'input');
    (step.after ?? []).forEach((other, i) => {
      const field = `after.${i}`;
      if (other === step.name) errors.push({ step: step.name, field, message: 'a step cannot wait for itself' });
      else if (!names.has(other)) errors.push({ step: step.name, field, message: `no step named '${other}'` });
      else if (step.after!.indexOf(other) !== i) errors.push({ step: step.name, field, message: `'${other}' is listed twice` });
    });
  }
  if (definition.output !== undefined) checkRefs(definition.output, null, 'output');

  const graph = stepGraph(definition.steps);
  const order = waves(graph);
  const reported = new Set<string>();
  for (const name of order.blocked) {
    const cycle = cycleThrough(graph, name);
    if (cycle && !reported.has(name)) {
      cycle.forEach((n) => reported.add(n));
      const byName = new Map(definition.steps.map((s) => [s.name, s]));
      for (const member of new Set(cycle)) {
        // The field that makes this member wait for the next one on the cycle.
        const next = cycle[cycle.indexOf(member) + 1];
        const field = next !== undefined && byName.get(member)?.after?.includes(next) ? 'after' : 'input';
        errors.push({ step: member, field, message: `dependency cycle: ${cycle.join(' → ')}` });
      }
    }
  }
  // Steps that only wait behind a cycle, or on an unknown step, were reported above.
  return errors.length ? { valid: false, errors, waves: [] } : { valid: true, errors: [], waves: order.waves, definition };
}

function stepNameAt(draft: unknown, index: number): string | null {
  const step = (draft as { steps?: Array<{ name?: unknown }> })?.steps?.[index];
  return typeof step?.name === 'string' ? step.name : `#${index + 1}`;
}

export interface GraphView {
  nodes: Array<{ id: string; kind: StepKind; target: string; wave: number; label: string }>;
  edges: Array<{ from: string; to: string; label: string }>;
  waves: string[][];
  mermaid: string;
}

/** The graph for the UI and as Mermaid text (`flowchart LR`, one node per step, edges labelled by the referenced field). */
export function graphView(definition: PipelineDefinition): GraphView {
  const order = waves(stepGraph(definition.steps));
  const waveOf = new Map<string, number>();
  order.waves.forEach((wave, i) => wave.forEach((name) => waveOf.set(name, i)));
  const nodes = definition.steps.map((step) => {
    const { kind, target } = kindOf(step);
    const shown = step.cell !== undefined ? `${target}#${step.cell}` : target;
    return { id: step.name, kind, target, wave: waveOf.get(step.name) ?? -1, label: `${step.name}\n${kind}: ${shown}` };
  });
  const edges: GraphView['edges'] = [];
  for (const step of definition.steps) {
    for (const { field, text } of referencesIn(step.input)) {
      try {
        const ref = parseReference(text);
        const from = ref.source === 'input' ? '$input' : ref.step;
        if (!edges.some((e) => e.from === from && e.to === step.name))
          edges.push({ from, to: step.name, label: field.replace(/^input\.?/, '') || '*' });
      } catch {
        // invalid references are not drawn
      }
    }
    for (const other of step.after ?? []) {
      if (!edges.some((e) => e.from === other && e.to === step.name)) edges.push({ from: other, to: step.name, label: 'after' });
    }
  }
  const id = (name: string) => (name === '$input' ? 'input' : `s_${name.replace(/[^A-Za-z0-9_]/g, '_')}`);
  const lines = ['flowchart LR', '  input(["input"])'];
  for (const node of nodes) lines.push(`  ${id(node.id)}["${node.id}<br/><i>${node.kind}: ${node.target}</i>"]`);
  for (const edge of edges) lines.push(`  ${id(edge.from)} -->|${edge.label.replace(/[|"]/g, '')}| ${id(edge.to)}`);
  return { nodes, edges, waves: order.waves, mermaid: lines.join('\n') };
}

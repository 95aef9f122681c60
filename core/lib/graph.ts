/**
 * Dependency graphs: the one place that orders, layers and checks nodes that depend on each other
 * (notebook cells, pipeline steps, coding-run tasks). Nodes are strings; each subsystem turns its
 * own notion of "depends on" (names read, `$.steps` references, task dependencies) into edges and
 * keeps its domain rules to itself.
 *
 * Declaration order breaks every tie, so the same input always yields the same order (as marimo's
 * `_runtime/dataflow/topology.py` does with insertion order): people can predict it and tests can
 * pin it. A `Graph` is read-only: built once and replaced, never mutated, when its input changes.
 * Building is linear in nodes + edges, and a fresh value is easier to reason about than edge surgery.
 */
import TinyQueue from 'tinyqueue';

export interface Graph {
  /** Nodes in declaration order (a repeated node keeps its first place). */
  readonly nodes: readonly string[];
  /** parents.get(n): the nodes n depends on, in the order given. Edges point parent → child. */
  readonly parents: ReadonlyMap<string, ReadonlySet<string>>;
  /** children.get(n): the nodes that depend on n, in declaration order. */
  readonly children: ReadonlyMap<string, ReadonlySet<string>>;
  /**
   * Dependencies that name no node, by the node that declares them (only nodes that have some).
   * They can never be satisfied, so their nodes are blocked; callers word the error themselves.
   */
  readonly unknown: ReadonlyMap<string, readonly string[]>;
}

/**
 * Build the graph from the nodes (in declaration order) and what each depends on. A node may depend
 * on itself: that is a cycle of one, which `cycles` reports and ordering blocks.
 */
export function buildGraph(nodes: Iterable<string>, dependenciesOf: (node: string) => Iterable<string>): Graph {
  const declared = [...new Set(nodes)];
  const parents = new Map<string, Set<string>>();
  const children = new Map<string, Set<string>>();
  const unknown = new Map<string, string[]>();
  for (const node of declared) {
    parents.set(node, new Set());
    children.set(node, new Set());
  }
  for (const node of declared) {
    for (const dependency of dependenciesOf(node)) {
      const dependents = children.get(dependency);
      if (dependents) {
        parents.get(node)!.add(dependency);
        dependents.add(node);
        continue;
      }
      const missing = unknown.get(node);
      if (!missing) unknown.set(node, [dependency]);
      else if (!missing.includes(dependency)) missing.push(dependency);
    }
  }
  return { nodes: declared, parents, children, unknown };
}

/**
 * Every node reachable from `start` along `next` edges. The start nodes are left out unless one is
 * reachable from another start node (or from itself, on a cycle).
 */
function closure(start: Iterable<string>, next: ReadonlyMap<string, ReadonlySet<string>>): Set<string> {
  const seen = new Set<string>();
  const stack = [...start];
  while (stack.length > 0) {
    const node = stack.pop()!;
    for (const other of next.get(node) ?? []) {
      if (!seen.has(other)) {
        seen.add(other);
        stack.push(other);
      }
    }
  }
  return seen;
}

/** What depends on `start`, directly or not: what has to re-run when `start` changes. */
export function descendants(graph: Graph, start: Iterable<string>): Set<string> {
  return closure(start, graph.children);
}

/** What `start` depends on, directly or not: what has to have run before it. */
export function ancestors(graph: Graph, start: Iterable<string>): Set<string> {
  return closure(start, graph.parents);
}

function positions(graph: Graph): Map<string, number> {
  return new Map(graph.nodes.map((node, i) => [node, i]));
}

/**
 * Every node in an order where each comes after what it depends on; among the nodes that are
 * ready, the one declared first goes first (Kahn's algorithm with a min-heap on declaration order).
 * Nodes on a cycle, behind one, or waiting on an unknown dependency can never be placed: they are
 * returned in `blocked` (declaration order) instead of throwing.
 *
 * @param subset restrict the order to these nodes; dependencies outside the subset count as met
 *   (what "run this node and its descendants" needs). Unknown dependencies never do.
 */
export function topologicalOrder(graph: Graph, subset?: ReadonlySet<string>): { order: string[]; blocked: string[] } {
  const position = positions(graph);
  const included = (node: string) => !subset || subset.has(node);
  const pending = new Map<string, number>();
  const ready = new TinyQueue<string>([], (a, b) => position.get(a)! - position.get(b)!);
  for (const node of graph.nodes) {
    if (!included(node)) continue;
    let count = graph.unknown.has(node) ? 1 : 0;
    for (const parent of graph.parents.get(node)!) if (included(parent)) count++;
    pending.set(node, count);
    if (count === 0) ready.push(node);
  }
  const order: string[] = [];
  while (ready.length > 0) {
    const node = ready.pop()!;
    order.push(node);
    for (const child of graph.children.get(node)!) {
      if (!included(child)) continue;
      const left = pending.get(child)! - 1;
      pending.set(child, left);
      if (left === 0) ready.push(child);
    }
  }
  const placed = new Set(order);
  return { order, blocked: graph.nodes.filter((node) => included(node) && !placed.has(node)) };
}

/**
 * The nodes in waves: the first holds the nodes that depend on nothing, each later one the nodes
 * whose dependencies all sit in earlier waves, so the nodes of one wave can run side by side.
 * Within a wave nodes keep declaration order. `blocked` as in `topologicalOrder`.
 */
export function waves(graph: Graph): { waves: string[][]; blocked: string[] } {
  const level = new Map<string, number>();
  const out: string[][] = [];
  for (const node of topologicalOrder(graph).order) {
    let wave = 0;
    for (const parent of graph.parents.get(node)!) wave = Math.max(wave, level.get(parent)! + 1);
    level.set(node, wave);
  }
  for (const node of graph.nodes) {
    const wave = level.get(node);
    if (wave !== undefined) (out[wave] ??= []).push(node);
  }
  return { waves: out, blocked: graph.nodes.filter((node) => !level.has(node)) };
}

/**
 * The cycles, as the strongly connected components that hold one (more than one node, or a node
 * that depends on itself). Tarjan's algorithm, iterative so a 10,000-node chain cannot overflow the
 * stack. Each cycle lists its nodes in declaration order; cycles are sorted by their first node.
 */
export function cycles(graph: Graph): string[][] {
  const position = positions(graph);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  let counter = 0;

  for (const root of graph.nodes) {
    if (index.has(root)) continue;
    // Each frame: a node and an iterator over its children, so the walk resumes after "recursion".
    const frames: Array<{ node: string; it: Iterator<string> }> = [];
    const enter = (node: string) => {
      index.set(node, counter);
      low.set(node, counter);
      counter++;
      stack.push(node);
      onStack.add(node);
      frames.push({ node, it: graph.children.get(node)!.values() });
    };
    enter(root);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1];
      const step = frame.it.next();
      if (!step.done) {
        const child = step.value;
        if (!index.has(child)) enter(child);
        else if (onStack.has(child)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(child)!));
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.node);
      if (component.length > 1 || graph.parents.get(member)!.has(member)) {
        found.push(component.sort((a, b) => position.get(a)! - position.get(b)!));
      }
    }
  }
  return found.sort((a, b) => position.get(a[0])! - position.get(b[0])!);
}

/**
 * One cycle through `start` as a path that ends where it began, each node depending on the next
 * (`a → b → a`: a waits for b, b for a); dependencies are tried in the order given, so the path is
 * the same every time. Null when `start` is on no cycle (it may still be blocked behind one).
 */
export function cycleThrough(graph: Graph, start: string): string[] | null {
  if (!graph.parents.has(start)) return null;
  const path: string[] = [start];
  const seen = new Set<string>([start]);
  const frames: Array<Iterator<string>> = [graph.parents.get(start)!.values()];
  while (frames.length > 0) {
    const step = frames[frames.length - 1].next();
    if (step.done) {
      frames.pop();
      path.pop();
      continue;
    }
    const next = step.value;
    if (next === start) return [...path, start];
    if (seen.has(next)) continue;
    seen.add(next);
    path.push(next);
    frames.push(graph.parents.get(next)!.values());
  }
  return null;
}

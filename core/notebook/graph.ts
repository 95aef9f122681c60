/**
 * Pure graph algorithms for the reactive notebook: nothing here knows about cells, parsing or
 * kernels. Nodes are strings (cell ids); the caller passes them in notebook order, and that order
 * breaks every tie so the same notebook always yields the same execution order (marimo's
 * `_runtime/dataflow/topology.py` does the same with insertion order).
 *
 * A `Topology` is read-only: it is built once from the cells' writes/reads and replaced, never
 * mutated, when a cell changes. Rebuilding is cheap (linear in cells + edges) and a fresh value is
 * far easier to reason about than incremental edge surgery.
 */

export interface Topology {
  /** Nodes in notebook order. */
  readonly nodes: readonly string[];
  /** parents.get(n): nodes whose writes n reads (edges point parent → child). */
  readonly parents: ReadonlyMap<string, ReadonlySet<string>>;
  readonly children: ReadonlyMap<string, ReadonlySet<string>>;
}

/**
 * Build the edges from "who defines what" and "who reads what". A name written by several nodes
 * links every writer to every reader: the caller reports the conflict, but the graph still shows
 * which cells are affected by it. A node never depends on itself.
 */
export function buildTopology(
  nodes: readonly string[],
  writesOf: (node: string) => Iterable<string>,
  readsOf: (node: string) => Iterable<string>,
): Topology {
  const writers = new Map<string, string[]>();
  for (const node of nodes) {
    for (const name of writesOf(node)) {
      const list = writers.get(name);
      if (list) list.push(node);
      else writers.set(name, [node]);
    }
  }
  const parents = new Map<string, Set<string>>();
  const children = new Map<string, Set<string>>();
  for (const node of nodes) {
    parents.set(node, new Set());
    children.set(node, new Set());
  }
  for (const node of nodes) {
    for (const name of readsOf(node)) {
      for (const writer of writers.get(name) ?? []) {
        if (writer === node) continue;
        parents.get(node)!.add(writer);
        children.get(writer)!.add(node);
      }
    }
  }
  return { nodes: [...nodes], parents, children };
}

/** Every node reachable from `start` along `next` edges, excluding the start nodes themselves
 * unless they are reachable from another start node. */
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

/** Transitive children of `start` (not including `start` unless it sits on a cycle through itself). */
export function descendants(topology: Topology, start: Iterable<string>): Set<string> {
  return closure(start, topology.children);
}

/** Transitive parents of `start`. */
export function ancestors(topology: Topology, start: Iterable<string>): Set<string> {
  return closure(start, topology.parents);
}

/**
 * Strongly connected components with more than one node (Tarjan, iterative so a 10,000-cell chain
 * cannot overflow the stack). Each cycle lists its nodes in notebook order; cycles are sorted by
 * their first node's position.
 */
export function findCycles(topology: Topology): string[][] {
  const position = new Map(topology.nodes.map((n, i) => [n, i]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let counter = 0;

  for (const root of topology.nodes) {
    if (index.has(root)) continue;
    // Each frame: the node and an iterator over its children, so we can resume after recursion.
    const frames: Array<{ node: string; it: Iterator<string> }> = [];
    const enter = (node: string) => {
      index.set(node, counter);
      low.set(node, counter);
      counter++;
      stack.push(node);
      onStack.add(node);
      frames.push({ node, it: (topology.children.get(node) ?? new Set<string>()).values() });
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
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1) {
          component.sort((a, b) => position.get(a)! - position.get(b)!);
          cycles.push(component);
        }
      }
    }
  }
  return cycles.sort((a, b) => position.get(a[0])! - position.get(b[0])!);
}

/**
 * Kahn's algorithm with a min-heap on notebook position: among the nodes whose parents have all
 * been placed, the one earliest in the notebook goes first. Nodes on a cycle, and nodes downstream
 * of one, can never be placed; they are returned in `blocked` (notebook order) instead of throwing.
 *
 * @param subset restrict the order to these nodes (edges from outside the subset are ignored,
 *   which is what "run this cell and its descendants" needs).
 */
export function topologicalOrder(
  topology: Topology,
  subset?: ReadonlySet<string>,
): { order: string[]; blocked: string[] } {
  const position = new Map(topology.nodes.map((n, i) => [n, i]));
  const included = (n: string) => !subset || subset.has(n);
  const pending = new Map<string, number>();
  const heap = new MinHeap((a: string, b: string) => position.get(a)! - position.get(b)!);
  for (const node of topology.nodes) {
    if (!included(node)) continue;
    let count = 0;
    for (const parent of topology.parents.get(node) ?? []) if (included(parent)) count++;
    pending.set(node, count);
    if (count === 0) heap.push(node);
  }
  const order: string[] = [];
  while (heap.size > 0) {
    const node = heap.pop()!;
    order.push(node);
    for (const child of topology.children.get(node) ?? []) {
      if (!included(child)) continue;
      const left = pending.get(child)! - 1;
      pending.set(child, left);
      if (left === 0) heap.push(child);
    }
  }
  const placed = new Set(order);
  const blocked = topology.nodes.filter((n) => included(n) && !placed.has(n));
  return { order, blocked };
}

/** A binary heap; small enough to keep here rather than pull in a dependency. */
class MinHeap<T> {
  private readonly items: T[] = [];
  constructor(private readonly compare: (a: T, b: T) => number) {}

  get size(): number {
    return this.items.length;
  }

  push(item: T): void {
    const items = this.items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.compare(items[i], items[parent]) >= 0) break;
      [items[i], items[parent]] = [items[parent], items[i]];
      i = parent;
    }
  }

  pop(): T | undefined {
    const items = this.items;
    if (items.length === 0) return undefined;
    const top = items[0];
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (left < items.length && this.compare(items[left], items[smallest]) < 0) smallest = left;
        if (right < items.length && this.compare(items[right], items[smallest]) < 0) smallest = right;
        if (smallest === i) break;
        [items[i], items[smallest]] = [items[smallest], items[i]];
        i = smallest;
      }
    }
    return top;
  }
}

/**
 * The reactive notebook's dependency graph: a cell depends on the cells that write the names it
 * reads. The graph itself (order, cycles, what re-runs) is core/lib/graph.ts; this module only turns
 * the cells' writes and reads into edges. The caller passes the cells in notebook order, and that
 * order breaks every tie, so the same notebook always yields the same execution order.
 */
import { buildGraph, type Graph } from '../lib/graph.js';

/** The cells as a dependency graph (edges point writer → reader). */
export type Topology = Graph;

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
  // Arrays, not a generator per node: one generator object per cell was most of building the edges.
  return buildGraph(nodes, (node) => {
    const parents: string[] = [];
    for (const name of readsOf(node)) {
      const list = writers.get(name);
      if (list) for (const writer of list) if (writer !== node) parents.push(writer);
    }
    return parents;
  });
}

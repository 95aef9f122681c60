/**
 * Automatic layout of an agent graph, top to bottom, for the studio's SVG.
 *
 * Layers by longest path from the start node, so every forward edge points down and a node sits
 * below everything that leads to it; edges that close a cycle (found by a depth-first walk in
 * edge order) are drawn as back edges on the right instead of taking part in layering. Nodes of a
 * layer keep the graph's declaration order (ties by insertion, like the engine's topological
 * order) and are centred. Small graphs are the norm (a handful of nodes), so this simple
 * Sugiyama-style pass without crossing minimisation reads well and stays predictable.
 */
import type { GraphView } from '../../../core/agents/graph.js';

/** A node and an edge as GET /studio/agents/{name}/graph sends them. */
export type GraphNode = GraphView['nodes'][number];
export type GraphEdge = GraphView['edges'][number];

export interface LaidOutNode extends GraphNode {
  x: number;
  y: number;
  width: number;
  height: number;
  layer: number;
}

export interface LaidOutEdge extends GraphEdge {
  /** SVG path data. */
  path: string;
  /** Closes a cycle (drawn dashed). */
  back: boolean;
  /** Drawn around the right side: back edges and edges that skip layers. */
  side: boolean;
  labelX: number;
  labelY: number;
}

export interface Layout {
  nodes: LaidOutNode[];
  edges: LaidOutEdge[];
  width: number;
  height: number;
}

export const NODE_WIDTH = 150;
export const NODE_HEIGHT = 40;
const GAP_X = 40;
const GAP_Y = 56;
const MARGIN = 24;
/** How far side edges bow out to the right of the nodes they join. */
const SIDE_BULGE = 44;
const SIDE_LABEL_ROOM = 130;

/** Edges that close a cycle, by a DFS from the first node (and then any unvisited ones) in edge order. */
function backEdges(nodes: GraphNode[], edges: GraphEdge[]): Set<string> {
  const out = new Map<string, GraphEdge[]>();
  for (const edge of edges) out.set(edge.source, [...(out.get(edge.source) ?? []), edge]);
  const state = new Map<string, 'open' | 'done'>();
  const back = new Set<string>();
  const visit = (id: string) => {
    state.set(id, 'open');
    for (const edge of out.get(id) ?? []) {
      const seen = state.get(edge.target);
      if (seen === 'open') back.add(edge.id);
      else if (!seen) visit(edge.target);
    }
    state.set(id, 'done');
  };
  for (const node of nodes) if (!state.has(node.id)) visit(node.id);
  return back;
}

export function layoutGraph(nodes: GraphNode[], edges: GraphEdge[]): Layout {
  const known = new Set(nodes.map((n) => n.id));
  const usable = edges.filter((e) => known.has(e.source) && known.has(e.target));
  const back = backEdges(nodes, usable);
  const forward = usable.filter((e) => !back.has(e.id) && e.source !== e.target);

  // Longest path layering over the acyclic forward edges (Kahn's order, declaration order for ties).
  const layer = new Map<string, number>(nodes.map((n) => [n.id, 0]));
  const indegree = new Map<string, number>(nodes.map((n) => [n.id, 0]));
  for (const e of forward) indegree.set(e.target, indegree.get(e.target)! + 1);
  const queue = nodes.filter((n) => indegree.get(n.id) === 0).map((n) => n.id);
  while (queue.length) {
    const id = queue.shift()!;
    for (const e of forward.filter((f) => f.source === id)) {
      layer.set(e.target, Math.max(layer.get(e.target)!, layer.get(id)! + 1));
      indegree.set(e.target, indegree.get(e.target)! - 1);
      if (indegree.get(e.target) === 0) queue.push(e.target);
    }
  }

  const layers: GraphNode[][] = [];
  for (const node of nodes) (layers[layer.get(node.id)!] ??= []).push(node);
  const widest = Math.max(1, ...layers.map((l) => l?.length ?? 0));
  const baseWidth = MARGIN * 2 + widest * NODE_WIDTH + (widest - 1) * GAP_X;
  const placed = new Map<string, LaidOutNode>();
  layers.forEach((row = [], index) => {
    const rowWidth = row.length * NODE_WIDTH + (row.length - 1) * GAP_X;
    const left = MARGIN + (widest * NODE_WIDTH + (widest - 1) * GAP_X - rowWidth) / 2;
    row.forEach((node, i) => {
      placed.set(node.id, {
        ...node,
        layer: index,
        x: left + i * (NODE_WIDTH + GAP_X),
        y: MARGIN + index * (NODE_HEIGHT + GAP_Y),
        width: NODE_WIDTH,
        height: NODE_HEIGHT,
      });
    });
  });
  const height = MARGIN * 2 + layers.length * NODE_HEIGHT + Math.max(0, layers.length - 1) * GAP_Y;

  const laidEdges = usable.map((edge): LaidOutEdge => {
    const a = placed.get(edge.source)!;
    const b = placed.get(edge.target)!;
    const side = back.has(edge.id) || edge.source === edge.target || b.layer - a.layer > 1;
    if (side) {
      // Back edges and edges that skip a layer go around the right side (out of a's right edge
      // and into b's), so they never run through the nodes in between.
      const x = Math.max(a.x, b.x) + NODE_WIDTH + SIDE_BULGE;
      const y1 = a.y + NODE_HEIGHT / 2;
      const y2 = b.y + NODE_HEIGHT / 2;
      return {
        ...edge,
        back: back.has(edge.id) || edge.source === edge.target,
        side: true,
        path: `M ${a.x + NODE_WIDTH} ${y1} C ${x} ${y1}, ${x} ${y2}, ${b.x + NODE_WIDTH} ${y2}`,
        labelX: Math.max(a.x, b.x) + NODE_WIDTH + SIDE_BULGE * 0.75,
        labelY: (y1 + y2) / 2,
      };
    }
    const x1 = a.x + NODE_WIDTH / 2;
    const y1 = a.y + NODE_HEIGHT;
    const x2 = b.x + NODE_WIDTH / 2;
    const y2 = b.y;
    const mid = (y1 + y2) / 2;
    return {
      ...edge,
      back: false,
      side: false,
      path: `M ${x1} ${y1} C ${x1} ${mid}, ${x2} ${mid}, ${x2} ${y2}`,
      labelX: (x1 + x2) / 2,
      labelY: mid,
    };
  });
  // Room on the right for side edges and their condition labels.
  const sideEdges = laidEdges.filter((e) => e.side);
  const labelRoom = sideEdges.some((e) => e.condition) ? SIDE_LABEL_ROOM : 0;
  const width = baseWidth + (sideEdges.length ? SIDE_BULGE + labelRoom : 0);

  return { nodes: [...placed.values()], edges: laidEdges, width, height };
}

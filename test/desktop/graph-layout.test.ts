import { describe, expect, it } from 'vitest';
import { type GraphEdge, type GraphNode, layoutGraph, NODE_HEIGHT } from '../../desktop/views/studio/graph-layout.js';

const node = (id: string, type = 'node'): GraphNode => ({ id, name: id, type, metadata: {} });
const edge = (source: string, target: string, condition: string | null = null): GraphEdge => ({
  id: `${source}->${target}`,
  source,
  target,
  condition,
});

describe('studio graph layout', () => {
  it('puts every node below the nodes that lead to it', () => {
    const nodes = ['__start__', 'plan', 'analyze', 'draft', 'review', 'finalize', '__end__'].map((id) => node(id));
    const edges = [
      edge('__start__', 'plan'),
      edge('plan', 'analyze'),
      edge('analyze', 'draft'),
      edge('draft', 'finalize', 'metadata.auto_approve'),
      edge('draft', 'review', 'needs review'),
      edge('review', 'finalize'),
      edge('finalize', '__end__'),
    ];
    const layout = layoutGraph(nodes, edges);
    const at = Object.fromEntries(layout.nodes.map((n) => [n.id, n]));
    for (const e of edges) expect(at[e.target]!.layer, `${e.source} → ${e.target}`).toBeGreaterThan(at[e.source]!.layer);
    // finalize waits for the longest way in (through review), so the skip edge spans two layers.
    expect(at.finalize!.layer).toBe(at.review!.layer + 1);
    expect(layout.edges.every((e) => !e.back)).toBe(true);
    // The skip edge goes around review instead of through it; the others go straight down.
    expect(layout.edges.filter((e) => e.side).map((e) => e.id)).toEqual(['draft->finalize']);
    const skip = layout.edges.find((e) => e.id === 'draft->finalize')!;
    expect(skip.labelX).toBeGreaterThan(at.review!.x + at.review!.width);
    expect(layout.width).toBeGreaterThan(skip.labelX);
    expect(layout.height).toBeGreaterThanOrEqual(7 * NODE_HEIGHT);
  });

  it('keeps nodes of one layer apart, in declaration order', () => {
    const layout = layoutGraph([node('s'), node('a'), node('b'), node('c')], [edge('s', 'a'), edge('s', 'b'), edge('s', 'c')]);
    const row = layout.nodes.filter((n) => n.layer === 1);
    expect(row.map((n) => n.id)).toEqual(['a', 'b', 'c']);
    for (let i = 1; i < row.length; i++) expect(row[i]!.x).toBeGreaterThanOrEqual(row[i - 1]!.x + row[i - 1]!.width);
    // The single start node is centred over the row.
    const start = layout.nodes.find((n) => n.id === 's')!;
    expect(start.x + start.width / 2).toBeCloseTo((row[0]!.x + row[2]!.x + row[2]!.width) / 2);
  });

  it('draws a loop as a back edge instead of failing to layer', () => {
    const layout = layoutGraph(
      [node('s'), node('think'), node('act'), node('e')],
      [edge('s', 'think'), edge('think', 'act'), edge('act', 'think', 'retry'), edge('act', 'e')],
    );
    const loop = layout.edges.find((e) => e.id === 'act->think')!;
    expect(loop.back).toBe(true);
    expect(layout.nodes.find((n) => n.id === 'e')!.layer).toBe(3);
  });

  it('ignores edges to nodes it does not know', () => {
    const layout = layoutGraph([node('a')], [edge('a', 'ghost')]);
    expect(layout.edges).toEqual([]);
    expect(layout.nodes).toHaveLength(1);
  });
});

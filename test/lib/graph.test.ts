import { describe, expect, it } from 'vitest';
import { ancestors, buildGraph, cycles, cycleThrough, descendants, topologicalOrder, waves } from '../../core/lib/graph.js';

/** A graph from `node: dependencies` pairs, in the order written. */
const graphOf = (deps: Record<string, string[]>) => buildGraph(Object.keys(deps), (node) => deps[node]);

describe('dependency graph', () => {
  it('orders dependencies first and keeps declaration order between nodes that are ready together', () => {
    const graph = graphOf({ z: [], y: ['x'], x: [], w: ['z'] });
    expect(topologicalOrder(graph)).toEqual({ order: ['z', 'x', 'y', 'w'], blocked: [] });
    // The same input always gives the same order.
    expect(topologicalOrder(graphOf({ z: [], y: ['x'], x: [], w: ['z'] })).order).toEqual(['z', 'x', 'y', 'w']);
  });

  it('lays a diamond out in waves, each node after every node it depends on', () => {
    const diamond = graphOf({ top: [], left: ['top'], right: ['top'], bottom: ['right', 'left'] });
    expect(waves(diamond)).toEqual({ waves: [['top'], ['left', 'right'], ['bottom']], blocked: [] });
    expect(topologicalOrder(diamond).order).toEqual(['top', 'left', 'right', 'bottom']);
    expect([...descendants(diamond, ['left'])]).toEqual(['bottom']);
    expect([...descendants(diamond, ['top'])].sort()).toEqual(['bottom', 'left', 'right']);
    expect([...ancestors(diamond, ['bottom'])].sort()).toEqual(['left', 'right', 'top']);
    expect(cycles(diamond)).toEqual([]);
  });

  it('puts a node in the wave after its deepest dependency', () => {
    const graph = graphOf({ a: [], b: ['a'], c: ['b'], d: ['a', 'c'], e: [] });
    expect(waves(graph).waves).toEqual([['a', 'e'], ['b'], ['c'], ['d']]);
  });

  it('names the nodes of each cycle and blocks them and what waits behind them', () => {
    const graph = graphOf({ ok: [], p: ['q'], q: ['p'], after: ['q'], self: ['self'], r: ['t'], s: ['r'], t: ['s'] });
    expect(cycles(graph)).toEqual([['p', 'q'], ['self'], ['r', 's', 't']]);
    expect(topologicalOrder(graph)).toEqual({ order: ['ok'], blocked: ['p', 'q', 'after', 'self', 'r', 's', 't'] });
    expect(waves(graph)).toEqual({ waves: [['ok']], blocked: ['p', 'q', 'after', 'self', 'r', 's', 't'] });
    expect(cycleThrough(graph, 'r')).toEqual(['r', 't', 's', 'r']);
    expect(cycleThrough(graph, 'self')).toEqual(['self', 'self']);
    expect(cycleThrough(graph, 'after')).toBeNull();
    expect(cycleThrough(graph, 'ok')).toBeNull();
  });

  it('keeps an unknown dependency aside and blocks the node that waits for it', () => {
    const graph = graphOf({ a: [], b: ['a', 'ghost'], c: ['b'] });
    expect(graph.unknown).toEqual(new Map([['b', ['ghost']]]));
    expect(topologicalOrder(graph)).toEqual({ order: ['a'], blocked: ['b', 'c'] });
    expect(waves(graph)).toEqual({ waves: [['a']], blocked: ['b', 'c'] });
    expect(cycles(graph)).toEqual([]);
  });

  it('orders a subset as if the dependencies outside it were met', () => {
    const graph = graphOf({ a: [], b: ['a'], c: ['b'], d: ['c', 'a'] });
    expect(topologicalOrder(graph, new Set(['d', 'c']))).toEqual({ order: ['c', 'd'], blocked: [] });
  });

  it('handles a long chain without recursion', () => {
    const n = 20_000;
    const ids = Array.from({ length: n }, (_, i) => `n${i}`);
    const chain = buildGraph(ids, (id) => (id === 'n0' ? [] : [`n${Number(id.slice(1)) - 1}`]));
    expect(cycles(chain)).toEqual([]);
    expect(topologicalOrder(chain).order).toEqual(ids);
    expect(waves(chain).waves).toHaveLength(n);
    expect(descendants(chain, ['n0']).size).toBe(n - 1);
    const ring = buildGraph(ids, (id) => [`n${(Number(id.slice(1)) + n - 1) % n}`]);
    expect(cycleThrough(ring, 'n0')).toHaveLength(n + 1);
  });
});

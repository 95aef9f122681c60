/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useMemo } from 'preact/hooks';
import { layoutGraph, type GraphEdge, type GraphNode } from './graph-layout.js';
import type { RunView } from './run-state.js';

/**
 * The agent's graph as SVG, lit by the run: the executing node pulses, finished nodes are filled,
 * a paused node is outlined, a failed one is red. Clicking a node (or Enter/Space on it) toggles a
 * breakpoint there; the start and end markers take none.
 */
export interface AgentGraph {
  agent_name: string;
  nodes: GraphNode[];
  edges: GraphEdge[];
  entry_point: string;
  end_points: string[];
}

const TERMINAL = new Set(['start', 'end']);

export function GraphView({
  graph,
  run,
  breakpoints,
  onToggleBreakpoint,
}: {
  graph: AgentGraph;
  run: RunView;
  breakpoints: string[];
  onToggleBreakpoint: (node: string) => void;
}) {
  const layout = useMemo(() => layoutGraph(graph.nodes, graph.edges), [graph]);
  const visited = new Set(run.visited);
  const stateOf = (id: string): string => {
    if (run.error?.node === id) return 'failed';
    if (run.paused?.node === id) return 'paused';
    if (run.active === id) return 'active';
    if (visited.has(id)) return 'visited';
    if (id === '__start__' && run.status !== 'idle') return 'visited';
    if (id === '__end__' && run.status === 'completed') return 'visited';
    return 'idle';
  };
  return html`<figure class="graph" data-testid="graph">
    <svg
      viewBox=${`0 0 ${layout.width} ${layout.height}`}
      width=${layout.width}
      height=${layout.height}
      role="group"
      aria-label=${`Graph of ${graph.agent_name}`}
    >
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head" />
        </marker>
      </defs>
      ${layout.edges.map(
        (e) => html`<g class=${`edge${e.back ? ' back' : ''}${visited.has(e.source) && (visited.has(e.target) || run.active === e.target || run.paused?.node === e.target) ? ' taken' : ''}`}>
          <path d=${e.path} marker-end="url(#arrow)" />
          ${e.condition && html`<text x=${e.labelX + 6} y=${e.labelY} class="edge-label">${e.condition}</text>`}
        </g>`,
      )}
      ${layout.nodes.map((n) => {
        const terminal = TERMINAL.has(n.type);
        const hasBreakpoint = breakpoints.includes(n.id);
        const label = terminal ? (n.type === 'start' ? 'start' : 'end') : n.name;
        const toggle = () => !terminal && onToggleBreakpoint(n.id);
        return html`<g
          class=${`node ${n.type} ${stateOf(n.id)}${hasBreakpoint ? ' breakpoint' : ''}`}
          data-node=${n.id}
          data-state=${stateOf(n.id)}
          transform=${`translate(${n.x} ${n.y})`}
          role=${terminal ? undefined : 'button'}
          tabindex=${terminal ? undefined : 0}
          aria-pressed=${terminal ? undefined : hasBreakpoint}
          aria-label=${terminal ? label : `${n.name} (${n.type})${hasBreakpoint ? ', breakpoint set' : ''}: toggle breakpoint`}
          onClick=${toggle}
          onKeyDown=${(e: KeyboardEvent) => {
            if (e.key === 'Enter' || e.key === ' ') {
              e.preventDefault();
              toggle();
            }
          }}
        >
          <title>${String(n.metadata.description ?? n.type)}</title>
          <rect width=${n.width} height=${n.height} rx=${terminal ? n.height / 2 : 8} />
          <text x=${n.width / 2} y=${n.height / 2 + 1} text-anchor="middle" dominant-baseline="middle">${label}</text>
          ${!terminal && html`<text x=${n.width - 8} y="13" text-anchor="end" class="node-type">${n.type}</text>`}
          ${hasBreakpoint && html`<circle cx="10" cy="10" r="5" class="bp-dot" />`}
        </g>`;
      })}
    </svg>
    <figcaption class="muted">Click a node, or press Enter on it, to stop the next run there (breakpoint).</figcaption>
  </figure>`;
}

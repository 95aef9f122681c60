/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { z } from 'zod';
import type { Checkpoint } from '../../../core/agents/checkpointer.js';
import type { StudioEvent } from '../../../core/studio/events.js';
import type { AgentEntry, RunSummary as RunSummarySchema } from '../../../core/studio/schemas.js';
import type { WorkspaceSnapshot } from '../../../core/ui/workspace.js';
import { getJson, postJson, postStream } from '../api.js';
import { ProblemBanners } from '../drop-ins.js';
import { href } from '../router.js';
import { Conversations } from './conversations.js';
import { describeError } from './errors.js';
import { type AgentGraph, GraphView, SubagentGraphs } from './graph.js';
import { applyEvent, idleRun, type RunView } from './run-state.js';
import { Timeline } from './timeline.js';

/**
 * The studio, on the /studio debug routes: the agents with what each supports; for one agent its
 * graph lit up node by node while a run streams (tokens, todos, tool calls, subagents), approve or
 * reject at a human step, breakpoints and continue, the thread's checkpoints with state, edit and
 * re-run from any checkpoint, recent threads, and feedback on answers.
 */

type RunSummary = z.output<typeof RunSummarySchema>;

const newThreadId = () => `studio-${crypto.randomUUID().slice(0, 8)}`;

function AgentList({ agents }: { agents: AgentEntry[] }) {
  if (agents.length === 0) return html`<p class="muted">No agents in this workspace yet. Drop a file into <code>agents/</code>.</p>`;
  return html`<ul class="agent-grid">
    ${agents.map(
      (agent) => html`<li class="card">
        <h2><a href=${href('studio', agent.name)}>${agent.name}</a> <small class="muted">v${agent.version}</small></h2>
        <p>${agent.description}</p>
        <ul class="chips" aria-label="Capabilities">${agent.capabilities.map((c) => html`<li class="chip">${c}</li>`)}</ul>
        ${agent.graph_error && html`<p class="alert">${agent.graph_error}</p>`}
      </li>`,
    )}
  </ul>`;
}

function Paused({
  run,
  busy,
  onResume,
}: {
  run: RunView;
  busy: boolean;
  onResume: (action: 'approve' | 'reject', reason: string, args?: Record<string, unknown>) => void;
}) {
  const [reason, setReason] = useState('');
  const paused = run.paused!;
  const toolCall = paused.payload?.kind === 'tool_call' ? paused.payload : null;
  const proposed = toolCall ? JSON.stringify(toolCall.arguments ?? {}, null, 2) : '';
  const [args, setArgs] = useState(proposed);
  const [argsError, setArgsError] = useState<string | null>(null);
  /** Approve, with the edited arguments when the person changed them (they must be a JSON object). */
  const approve = () => {
    if (!toolCall || args === proposed) return onResume('approve', '');
    try {
      const parsed: unknown = JSON.parse(args);
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('the arguments must be a JSON object');
      setArgsError(null);
      onResume('approve', '', parsed as Record<string, unknown>);
    } catch (err) {
      setArgsError((err as Error).message);
    }
  };
  if (paused.reason === 'breakpoint') {
    return html`<div class="approval" role="group" aria-label="Paused at a breakpoint" data-testid="breakpoint">
      <p><strong>Paused at breakpoint “${paused.node}”.</strong> Inspect or edit the state, then continue.</p>
      <div class="actions"><button class="primary" disabled=${busy} onClick=${() => onResume('approve', '')}>Continue</button></div>
    </div>`;
  }
  return html`<div class="approval" role="group" aria-label="Approval needed" data-testid="approval">
    <p><strong>Waiting for you at “${paused.node}”.</strong></p>
    <pre class="message">${paused.message}</pre>
    ${
      toolCall &&
      html`<label>Arguments for <strong>${String(toolCall.tool)}</strong> (edit before approving)
        <textarea class="mono" rows="6" data-testid="tool-arguments" value=${args} onInput=${(e: Event) => setArgs((e.target as HTMLTextAreaElement).value)}></textarea></label>
      ${argsError && html`<p class="alert" role="alert">${argsError}</p>`}`
    }
    <label>Reason (for a rejection) <input value=${reason} onInput=${(e: Event) => setReason((e.target as HTMLInputElement).value)} /></label>
    <div class="actions">
      <button class="primary" disabled=${busy} onClick=${approve}>Approve</button>
      <button class="danger" disabled=${busy} onClick=${() => onResume('reject', reason)}>Reject</button>
    </div>
  </div>`;
}

function RunOutput({ run, query }: { run: RunView; query: string }) {
  if (run.status === 'idle') return html`<p class="muted">Ask something to start a run on this thread.</p>`;
  return html`<div class="run-output">
    ${query && html`<p class="turn user"><span class="who">You</span>${query}</p>`}
    <div class=${`turn assistant ${run.status}`} data-state=${run.status} data-testid="run">
      <span class="who">${run.status === 'running' ? (run.active ? `running ${run.active}…` : 'running…') : run.status}</span>
      <div class="text" aria-live="polite" data-testid="answer">${run.answer}</div>
      ${run.error && html`<p class="alert" role="alert">${run.error.node ? `${run.error.node}: ` : ''}${run.error.message}</p>`}
      ${run.durationMs !== null && html`<small class="muted">${Math.round(run.durationMs)} ms</small>`}
      ${
        run.usage &&
        html` <small class="muted" data-testid="usage">${run.usage.prompt} + ${run.usage.completion} tokens${
          run.usage.currency ? ` · ${run.usage.cost === null ? 'cost unknown' : `${formatCost(run.usage.cost)} ${run.usage.currency}`}` : ''
        }</small>`
      }
    </div>
    ${
      run.todos.length > 0 &&
      html`<section aria-label="Plan"><h3>Plan</h3><ul class="todos" data-testid="todos">
      ${run.todos.map((t) => html`<li class=${t.status}><span class="chip">${t.status.replace('_', ' ')}</span> ${t.content}</li>`)}
    </ul></section>`
    }
    ${
      run.tools.length > 0 &&
      html`<section aria-label="Tool calls"><h3>Tool calls</h3><ol class="plain mono tools" data-testid="tools">
      ${run.tools.map(
        (
          t,
        ) => html`<li class=${t.state ?? ''} data-call=${t.callId ?? ''}><strong>${t.tool}</strong> <small class="muted">${JSON.stringify(t.args ?? null).slice(0, 160)}</small>
          ${t.state === 'running' && html` <span class="chip">running</span>`}
          ${t.state === 'ok' && html`<div>→ <span data-testid="tool-result">${(typeof t.result === 'string' ? t.result : JSON.stringify(t.result ?? null)).slice(0, 400)}</span> <small class="muted">${Math.round(t.durationMs ?? 0)} ms</small></div>`}
          ${t.state === 'error' && html`<div class="alert">✗ <span data-testid="tool-error">${t.error}</span> <small class="muted">${Math.round(t.durationMs ?? 0)} ms</small></div>`}
        </li>`,
      )}
    </ol></section>`
    }
    ${
      run.subagents.length > 0 &&
      html`<section aria-label="Subagents"><h3>Subagents</h3><ul class="plain">
      ${run.subagents.map((s) => html`<li><strong>${s.name}</strong> ${s.done ? '✓' : '…'} <small class="muted">${s.query}</small></li>`)}
    </ul></section>`
    }
    <details class="events">
      <summary>Events (${run.log.length})</summary>
      <ol class="plain mono">${run.log.map((e) => html`<li>#${e.seq} ${e.type}${e.node ? ` · ${e.node}` : ''}</li>`)}</ol>
    </details>
  </div>`;
}

function AgentStudio({ agent, version }: { agent: AgentEntry; version: string }) {
  const name = agent.name;
  const base = `/studio/agents/${encodeURIComponent(name)}`;
  const [graph, setGraph] = useState<AgentGraph | null>(null);
  const [threadId, setThreadId] = useState(newThreadId);
  const [threads, setThreads] = useState<RunSummary[]>([]);
  const [run, setRun] = useState<RunView>(idleRun);
  const [query, setQuery] = useState('');
  const [input, setInput] = useState('');
  const [busy, setBusy] = useState(false);
  const [breakpoints, setBreakpoints] = useState<string[]>([]);
  const [refresh, setRefresh] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [feedback, setFeedback] = useState<'up' | 'down' | null>(null);
  const abort = useRef<AbortController | null>(null);

  useEffect(() => () => abort.current?.abort(), []);
  useEffect(() => {
    getJson<AgentGraph>(`${base}/graph`).then(setGraph, (err: unknown) => setError(describeError(err)));
  }, [base, version]);
  useEffect(() => {
    getJson<RunSummary[]>(`${base}/runs?limit=50`).then(setThreads, () => setThreads([]));
  }, [base, refresh]);

  /** Follows one execution segment (a run or a resume) and folds its events into the view. */
  const follow = async (path: string, body: unknown) => {
    setBusy(true);
    setError(null);
    setFeedback(null);
    abort.current = new AbortController();
    try {
      await postStream<StudioEvent>(path, body, (event) => setRun((view) => applyEvent(view, event)), abort.current.signal);
    } catch (err) {
      if (!abort.current.signal.aborted) setError(describeError(err));
    } finally {
      setBusy(false);
      setRefresh((n) => n + 1);
    }
  };

  const start = (text: string, checkpoint?: Checkpoint) => {
    setQuery(text);
    setRun(idleRun);
    void follow(`${base}/runs/stream`, { query: text, thread_id: threadId, breakpoints, checkpoint_id: checkpoint?.id ?? null });
  };
  const send = () => {
    const text = input.trim();
    if (!text || busy) return;
    setInput('');
    start(text);
  };
  const resume = (action: 'approve' | 'reject', reason: string, args?: Record<string, unknown>) =>
    void follow(`${base}/threads/${encodeURIComponent(threadId)}/resume`, {
      action,
      reason: reason || null,
      breakpoints,
      ...(args ? { arguments: args } : {}),
    });
  const cancel = async () => {
    if (run.runId)
      await postJson(`${base}/runs/${encodeURIComponent(run.runId)}/cancel`, {}).catch((err: unknown) => setError(describeError(err)));
  };

  /** Shows another thread: its latest run replayed from the stored events. */
  const openThread = async (id: string) => {
    abort.current?.abort();
    setThreadId(id);
    setRun(idleRun);
    setQuery('');
    const latest = threads.find((t) => t.thread_id === id);
    if (!latest) return;
    try {
      const stored = await getJson<{ events: StudioEvent[]; input: { query: string } }>(
        `${base}/runs/${encodeURIComponent(latest.run_id)}`,
      );
      setQuery(stored.input.query);
      setRun(stored.events.reduce(applyEvent, idleRun));
    } catch (err) {
      setError(describeError(err));
    }
  };

  const sendFeedback = async (up: boolean) => {
    try {
      await postJson(`/api/v1/${encodeURIComponent(name)}/feedback`, {
        feedback_type: 'thumbs',
        rating: up ? 5 : 1,
        query,
        response: run.answer,
        thread_id: threadId,
      });
      setFeedback(up ? 'up' : 'down');
    } catch (err) {
      setError(`feedback not recorded: ${describeError(err)}`);
    }
  };

  const recentThreads = [...new Map(threads.map((t) => [t.thread_id, t])).values()];

  return html`<div class="studio-grid">
    <section class="card graph-panel" aria-labelledby="graph-title">
      <h2 id="graph-title">Graph</h2>
      ${
        graph
          ? html`<${GraphView}
            graph=${graph}
            run=${run}
            breakpoints=${breakpoints}
            onToggleBreakpoint=${(node: string) => setBreakpoints((list) => (list.includes(node) ? list.filter((n) => n !== node) : [...list, node]))}
          />`
          : html`<p class="muted">Loading graph…</p>`
      }
      ${breakpoints.length > 0 && html`<p class="muted">Breakpoints: ${breakpoints.join(', ')}</p>`}
      ${graph && html`<${SubagentGraphs} graph=${graph} load=${(agent: string) => getJson<AgentGraph>(`/studio/agents/${encodeURIComponent(agent)}/graph`)} />`}
    </section>

    <section class="card run-panel" aria-labelledby="run-title">
      <div class="chat-head">
        <h2 id="run-title">Run</h2>
        <label class="thread-pick">
          Thread
          <select value=${threadId} onChange=${(e: Event) => void openThread((e.target as HTMLSelectElement).value)} disabled=${busy}>
            ${!recentThreads.some((t) => t.thread_id === threadId) && html`<option value=${threadId}>${threadId} (new)</option>`}
            ${recentThreads.map((t) => html`<option value=${t.thread_id}>${t.thread_id} · ${t.status}</option>`)}
          </select>
        </label>
        <button
          disabled=${busy}
          onClick=${() => {
            setThreadId(newThreadId());
            setRun(idleRun);
            setQuery('');
          }}
        >
          New thread
        </button>
      </div>
      <${RunOutput} run=${run} query=${query} />
      ${run.paused && !busy && html`<${Paused} key=${run.paused.checkpointId} run=${run} busy=${busy} onResume=${resume} />`}
      ${
        run.status === 'completed' &&
        !busy &&
        html`<div class="meta">
        <span class="muted">Was this answer good?</span>
        <button class="icon" aria-label="Good answer" aria-pressed=${feedback === 'up'} onClick=${() => sendFeedback(true)}>▲</button>
        <button class="icon" aria-label="Bad answer" aria-pressed=${feedback === 'down'} onClick=${() => sendFeedback(false)}>▼</button>
      </div>`
      }
      ${error && html`<p class="alert" role="alert">${error}</p>`}
      <form
        class="composer"
        onSubmit=${(e: Event) => {
          e.preventDefault();
          send();
        }}
      >
        <label for="composer-input">Message</label>
        <textarea
          id="composer-input"
          rows="3"
          value=${input}
          placeholder=${`Ask ${name}… (Ctrl+Enter to send)`}
          onInput=${(e: Event) => setInput((e.target as HTMLTextAreaElement).value)}
          onKeyDown=${(e: KeyboardEvent) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              send();
            }
          }}
        ></textarea>
        ${
          busy
            ? html`<button type="button" class="danger" onClick=${cancel}>Cancel</button>`
            : html`<button class="primary" type="submit" disabled=${!input.trim()}>Send</button>`
        }
      </form>
    </section>

    <section class="card timeline-panel" aria-labelledby="timeline-title">
      <h2 id="timeline-title">Checkpoints</h2>
      <${Timeline}
        agent=${name}
        threadId=${threadId}
        refresh=${refresh}
        busy=${busy}
        onRerun=${(checkpoint: Checkpoint) => start(checkpoint.metadata.input?.query ?? query, checkpoint)}
        onEdited=${() => setRefresh((n) => n + 1)}
      />
    </section>
  </div>`;
}

export function StudioView({ agent, workspace }: { agent?: string; workspace: WorkspaceSnapshot | null }) {
  const [agents, setAgents] = useState<AgentEntry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  // The agent list follows the workspace: a new or changed agent file refreshes it (and the graph).
  const versions = (workspace?.kinds.agent ?? []).map((a) => `${a.name}@${a.version}`).join(',');

  useEffect(() => {
    let cancelled = false;
    getJson<AgentEntry[]>('/studio/agents').then(
      (list) => !cancelled && (setAgents(list), setError(null)),
      (err: unknown) => !cancelled && setError(describeError(err)),
    );
    return () => {
      cancelled = true;
    };
  }, [versions]);

  const entry = agent ? agents?.find((a) => a.name === agent) : undefined;
  const version = (workspace?.kinds.agent ?? []).find((a) => a.name === agent)?.version ?? '';

  return html`<section class="view studio-view" aria-labelledby="studio-title">
    <h1 id="studio-title" tabindex="-1">${agent ? `Studio · ${agent}` : 'Studio'}</h1>
    <${ProblemBanners} problems=${workspace?.problems ?? []} />
    ${error && html`<p class="alert" role="alert">${error}</p>`}
    ${!agent && agents && html`<${AgentList} agents=${agents} />`}
    ${agent && agents && !entry && !workspace?.problems.some((p) => p.kind === 'agent' && p.name === agent) && html`<p class="alert" role="alert">No agent named “${agent}” in this workspace. <a href=${href('studio')}>All agents</a></p>`}
    ${
      entry &&
      html`<div class="agent-head">
        <p>${entry.description} <small class="muted">v${entry.version}</small></p>
        <ul class="chips" aria-label="Capabilities">${entry.capabilities.map((c) => html`<li class="chip">${c}</li>`)}</ul>
      </div>
      <${AgentStudio} agent=${entry} version=${version} key=${entry.name} />
      <${Conversations} agent=${entry.name} key=${`conv-${entry.name}`} />`
    }
  </section>`;
}

/** A run's cost: small amounts keep their significant digits (a cheap run costs fractions of a cent). */
function formatCost(amount: number): string {
  return amount >= 1 ? amount.toFixed(2) : amount.toPrecision(2);
}

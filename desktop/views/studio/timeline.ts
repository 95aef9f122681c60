/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import type { Checkpoint } from '../../../core/agents/checkpointer.js';
import { getJson, postJson } from '../api.js';
import { describeError } from './errors.js';

/**
 * A thread's checkpoints, newest first, and the state at the one selected. Each checkpoint can
 * be re-run from (a new branch of the thread: its checkpoints name that one as parent, which the
 * timeline shows as "from step N"); the latest state can be edited before resuming a paused run.
 */

export function Timeline({
  agent,
  threadId,
  refresh,
  busy,
  onRerun,
  onEdited,
}: {
  agent: string;
  threadId: string;
  /** Changes whenever the thread gained checkpoints (a run segment ended). */
  refresh: number;
  busy: boolean;
  onRerun: (checkpoint: Checkpoint) => void;
  onEdited: () => void;
}) {
  const [checkpoints, setCheckpoints] = useState<Checkpoint[] | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const base = `/studio/agents/${encodeURIComponent(agent)}/threads/${encodeURIComponent(threadId)}`;

  useEffect(() => {
    let cancelled = false;
    getJson<Checkpoint[]>(`${base}/history`).then(
      (list) => {
        if (cancelled) return;
        setCheckpoints(list);
        setSelected(list[0]?.id ?? null);
        setError(null);
      },
      // 404 until the thread's first run: an empty timeline, not an error.
      () => !cancelled && setCheckpoints([]),
    );
    return () => {
      cancelled = true;
    };
  }, [base, refresh]);

  if (checkpoints === null) return html`<p class="muted">Loading checkpoints…</p>`;
  if (checkpoints.length === 0) return html`<p class="muted">No checkpoints yet: run the agent on this thread.</p>`;
  const byId = new Map(checkpoints.map((c) => [c.id, c]));
  const current = checkpoints.find((c) => c.id === selected) ?? checkpoints[0]!;
  const latest = checkpoints[0]!;
  // A checkpoint whose parent is not the one just before it starts a branch.
  const branchOf = (c: Checkpoint, i: number) =>
    c.parent_id && checkpoints[i + 1]?.id !== c.parent_id ? byId.get(c.parent_id) : undefined;

  const save = async () => {
    try {
      const updates = JSON.parse(editing ?? '') as unknown;
      if (typeof updates !== 'object' || updates === null || Array.isArray(updates)) throw new Error('the state must be a JSON object');
      await postJson(`${base}/state`, { updates });
      setEditing(null);
      setError(null);
      onEdited();
    } catch (err) {
      setError(describeError(err));
    }
  };

  return html`<div class="timeline">
    <ol class="checkpoints" aria-label="Checkpoints, newest first" data-testid="checkpoints">
      ${checkpoints.map((c, i) => {
        const branch = branchOf(c, i);
        return html`<li class=${c.id === current.id ? 'selected' : ''}>
          <button class="checkpoint" aria-pressed=${c.id === current.id} onClick=${() => setSelected(c.id)}>
            <strong>step ${c.step}</strong> ${c.metadata.node ?? 'input'} <small class="muted">${c.metadata.source ?? ''}</small>
            ${branch && html`<small class="branch">from step ${branch.step}</small>`}
          </button>
          <button class="small" disabled=${busy || !c.metadata.next} title=${c.metadata.next ? `run again from here (next: ${c.metadata.next})` : 'the run ended here'} onClick=${() => onRerun(c)}>
            Re-run from here
          </button>
        </li>`;
      })}
    </ol>
    <section class="state" aria-label="State at the selected checkpoint">
      <h3>State at step ${current.step}${current.metadata.next ? html` <small class="muted">next: ${current.metadata.next}</small>` : ''}</h3>
      ${
        editing === null
          ? html`<pre class="json" data-testid="state">${JSON.stringify(current.state, null, 2)}</pre>
            ${
              current.id === latest.id &&
              html`<button class="small" disabled=${busy} onClick=${() => setEditing(JSON.stringify(current.state, null, 2))}>Edit state</button>`
            }`
          : html`<label class="sr-only" for="state-editor">State (JSON)</label>
            <textarea id="state-editor" class="json" rows="14" value=${editing} onInput=${(e: Event) => setEditing((e.target as HTMLTextAreaElement).value)}></textarea>
            <div class="actions">
              <button class="primary small" onClick=${save}>Save as a new checkpoint</button>
              <button class="small" onClick=${() => setEditing(null)}>Cancel</button>
            </div>`
      }
      ${error && html`<p class="alert" role="alert">${error}</p>`}
    </section>
  </div>`;
}

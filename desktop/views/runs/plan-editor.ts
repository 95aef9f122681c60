/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, getJson, request } from '../api.js';
import { type Draft, type PlanTask, planEdit, toDraft } from './plan-edit.js';

/**
 * The plan at the approval gate, editable (rule 3 of core/coderun; GET and PATCH
 * /api/runs/{id}/plan): change a task's fields, remove tasks, add tasks, then save. The server
 * checks the whole edit and refuses it as one (422 with the reason, e.g. a squad that does not own
 * the files); a refused edit changes nothing there, and the drafts stay here to be fixed.
 */

/** GET /api/runs/{id}/plan: the approval card (core/coderun/service.ts `plan`). */
export interface PlanCard {
  status: string;
  teams: { id: string; charter: string; owns: string[] }[];
  contract: { name: string; spec: string; provider: string; consumers: string[] }[];
  tasks: PlanTask[];
  shown: number;
  total: number;
  note: string | null;
}

const describe = (err: unknown) =>
  err instanceof ApiError ? `${err.status}: ${typeof err.detail === 'string' ? err.detail : JSON.stringify(err.detail)}` : String(err);

function TaskRow({ draft, teams, onChange }: { draft: Draft; teams: PlanCard['teams']; onChange: (next: Draft) => void }) {
  const field = (key: keyof Draft, label: string, attrs: Record<string, unknown> = {}) => html`<label>
    ${label}
    <input value=${draft[key] as string} ...${attrs} onInput=${(e: Event) => onChange({ ...draft, [key]: (e.target as HTMLInputElement).value })} />
  </label>`;
  return html`<li class=${`plan-task${draft.remove ? ' removed' : ''}`} data-task=${draft.id} aria-label=${`Task ${draft.id || 'new'}`}>
    <div class="plan-task-head">
      ${
        draft.added
          ? html`<label>Id <input class="mono" value=${draft.id} size="8" onInput=${(e: Event) => onChange({ ...draft, id: (e.target as HTMLInputElement).value })} /></label>`
          : html`<strong class="mono">${draft.id}</strong>`
      }
      ${draft.added && html`<small class="chip">new</small>`}
      <label class="check remove"><input type="checkbox" checked=${draft.remove} onChange=${(e: Event) => onChange({ ...draft, remove: (e.target as HTMLInputElement).checked })} /> Remove</label>
    </div>
    <fieldset disabled=${draft.remove}>
      ${field('title', 'Title')}
      <label>Squad
        <select value=${draft.squad} onChange=${(e: Event) => onChange({ ...draft, squad: (e.target as HTMLSelectElement).value })}>
          <option value="">none</option>
          ${teams.map((t) => html`<option value=${t.id}>${t.id}</option>`)}
          ${draft.squad && !teams.some((t) => t.id === draft.squad) && html`<option value=${draft.squad}>${draft.squad}</option>`}
        </select>
      </label>
      ${field('role', 'Role')}
      ${field('priority', 'Priority', { inputMode: 'numeric', size: 2 })}
      ${field('files', 'Files')}
      ${field('dependencies', 'Depends on')}
      <label class="wide">Description
        <textarea rows="2" value=${draft.description} onInput=${(e: Event) => onChange({ ...draft, description: (e.target as HTMLTextAreaElement).value })}></textarea>
      </label>
    </fieldset>
  </li>`;
}

/**
 * @example
 * html`<${PlanEditor} runId=${run.id} revision=${JSON.stringify(run.plan)} onDirty=${setDirty} onSaved=${load} />`
 */
export function PlanEditor({
  runId,
  revision,
  onDirty,
  onSaved,
}: {
  runId: string;
  revision: string;
  onDirty: (dirty: boolean) => void;
  onSaved: () => void;
}) {
  const base = `/api/runs/${encodeURIComponent(runId)}/plan`;
  const [card, setCard] = useState<PlanCard | null>(null);
  const [drafts, setDrafts] = useState<Draft[]>([]);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const [saving, setSaving] = useState(false);

  const show = (next: PlanCard) => {
    setCard(next);
    setDrafts(next.tasks.map(toDraft));
  };
  const edit = card ? planEdit(drafts, card.tasks) : null;
  const dirty = edit !== null || drafts.some((d) => d.added);
  useEffect(() => onDirty(dirty), [dirty]);
  useEffect(() => () => onDirty(false), []);

  // The run changed on the server (an edit from elsewhere): take its plan, unless edits are under way here.
  useEffect(() => {
    if (dirty) return;
    getJson<PlanCard>(base).then(show, (err: unknown) => setMessage({ ok: false, text: describe(err) }));
  }, [base, revision]);

  const save = async (e: Event) => {
    e.preventDefault();
    if (!edit) return;
    setSaving(true);
    try {
      show(await request<PlanCard>('PATCH', base, edit));
      setMessage({ ok: true, text: 'Plan saved.' });
      onSaved();
    } catch (err) {
      setMessage({ ok: false, text: `Edit refused — ${describe(err)}` });
    } finally {
      setSaving(false);
    }
  };
  const change = (index: number, next: Draft) => {
    setMessage(null);
    setDrafts(drafts.map((d, i) => (i === index ? next : d)));
  };
  const add = () => {
    const taken = new Set(drafts.map((d) => d.id));
    let n = drafts.length + 1;
    while (taken.has(`T${n}`)) n++;
    setMessage(null);
    setDrafts([
      ...drafts,
      {
        id: `T${n}`,
        title: '',
        description: '',
        role: 'developer',
        squad: card?.teams[0]?.id ?? '',
        priority: '5',
        files: '',
        dependencies: '',
        added: true,
        remove: false,
      },
    ]);
  };

  if (!card) return message ? html`<p class="alert" role="alert">${message.text}</p>` : html`<p class="muted">Loading plan…</p>`;
  return html`<form class="plan-editor" data-testid="plan-editor" onSubmit=${save}>
    ${card.note && html`<p class="muted">${card.note} (edit the others through the API)</p>`}
    <ol class="plain plan-tasks">
      ${drafts.map((d, i) => html`<${TaskRow} key=${i} draft=${d} teams=${card.teams} onChange=${(next: Draft) => change(i, next)} />`)}
    </ol>
    ${
      card.teams.length > 0 &&
      html`<p class="muted">Teams: ${card.teams.map((t) => html`<span class="chip" title=${t.charter}>${t.id} <small class="mono">${t.owns.join(', ')}</small></span> `)}</p>`
    }
    <div class="actions">
      <button type="button" onClick=${add}>+ Task</button>
      <button class="primary" type="submit" disabled=${!edit || saving}>${saving ? 'Saving…' : 'Save plan'}</button>
      <button type="button" disabled=${!dirty || saving} onClick=${() => (setMessage(null), show(card))}>Discard edits</button>
    </div>
    ${message && html`<p class=${message.ok ? 'notice' : 'alert'} role=${message.ok ? 'status' : 'alert'}>${message.text}</p>`}
  </form>`;
}

/**
 * The approval-gate plan edit as pure functions (no DOM): a task as the editor holds it (a draft)
 * and the PATCH /api/runs/{id}/plan body for a set of drafts (core/coderun/plan.ts
 * applyPlanEdit). Only the fields that differ from the server's copy are sent, because the PATCH
 * treats every sent key as an edit and an omitted one as "leave it".
 */
import type { TaskSpec } from '../../../core/coderun/schemas.js';

/** A task of the plan as GET /api/runs/{id}/plan answers it: the fields edited here. */
export type PlanTask = Pick<
  TaskSpec,
  'id' | 'title' | 'description' | 'role' | 'squad' | 'acceptance' | 'priority' | 'files' | 'dependencies'
>;

/** A row as edited: list fields as the text typed, so half-typed commas are not rewritten. */
export interface Draft {
  id: string;
  title: string;
  description: string;
  role: string;
  squad: string;
  priority: string;
  files: string;
  dependencies: string;
  /** Not in the server's plan yet. */
  added: boolean;
  remove: boolean;
}

const EDITABLE = ['title', 'description', 'role', 'squad', 'priority', 'files', 'dependencies'] as const;

const list = (text: string) =>
  text
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter(Boolean);

export const toDraft = (t: PlanTask): Draft => ({
  id: t.id,
  title: t.title,
  description: t.description,
  role: t.role,
  squad: t.squad ?? '',
  priority: String(t.priority),
  files: t.files.join(', '),
  dependencies: t.dependencies.join(', '),
  added: false,
  remove: false,
});

/** The task's fields as the PATCH takes them. `priority` stays text when it is not a number, for the server to refuse. */
function fields(d: Draft): Record<(typeof EDITABLE)[number], unknown> {
  const priority = Number(d.priority);
  return {
    title: d.title,
    description: d.description,
    role: d.role,
    squad: d.squad || null,
    priority: d.priority.trim() !== '' && Number.isInteger(priority) ? priority : d.priority,
    files: list(d.files),
    dependencies: list(d.dependencies),
  };
}

/** The PATCH body for these drafts against the server's tasks; null when nothing changed. */
export function planEdit(drafts: Draft[], tasks: PlanTask[]): { tasks: Record<string, unknown>[] } | null {
  const edits: Record<string, unknown>[] = [];
  for (const draft of drafts) {
    if (draft.added) {
      if (!draft.remove) edits.push({ id: draft.id, ...fields(draft) });
      continue;
    }
    if (draft.remove) {
      edits.push({ id: draft.id, remove: true });
      continue;
    }
    const before = fields(toDraft(tasks.find((t) => t.id === draft.id)!));
    const after = fields(draft);
    const changed = EDITABLE.filter((key) => JSON.stringify(before[key]) !== JSON.stringify(after[key]));
    if (changed.length) edits.push({ id: draft.id, ...Object.fromEntries(changed.map((key) => [key, after[key]])) });
  }
  return edits.length ? { tasks: edits } : null;
}

/**
 * Plans: shaping a proposed plan into board tasks (derived ids along team boundaries, the size cap,
 * dependency repair) and the approval gate's edit rules (spec 3, rule 3). Pure functions: the
 * service keeps the live plan and swaps it only when a whole edit succeeds.
 */

import { formatIssues } from '../http/validate.js';
import { fail } from '../kernel/errors.js';
import { normalizeRelative, ownersOf } from './ownership.js';
import { GENERIC_ROLES } from './preselect.js';
import { type ContractClause, type Plan, type PlanCut, PlanEdit, TaskSpec } from './schemas.js';
import { type Team, TeamSchema } from './team-schema.js';
import { assertDisjoint } from './teams.js';

export type { CutTask, PlanCut } from './schemas.js';

/** Plan size cap: tasks a run works on. */
export const PLAN_SIZE_CAP = 8;
/** Tasks the plan-approval card shows; it says how many it shows when the board is larger. */
export const APPROVAL_CARD_LIMIT = 60;

export interface DroppedDependency {
  task: string;
  dependency: string;
  reason: string;
}

export interface ShapedPlan {
  plan: Plan;
  dropped: DroppedDependency[];
  /** Tasks beyond the cap, named so the report can say what was left out. */
  cut: string[];
  report: PlanCut;
}

/** Roles the harness can staff for these teams: the generic agents plus every roster role. */
export function staffableRoles(teams: readonly Team[]): Set<string> {
  return new Set<string>([...GENERIC_ROLES, ...teams.flatMap((t) => t.agents.map((a) => a.role))]);
}

/**
 * Cut tasks along team boundaries: a task whose files belong to several teams becomes one task per
 * team with the derived id `<id>-<TEAM>`; dependencies on the original then name every part.
 */
export function cutAlongTeams(tasks: readonly TaskSpec[], teams: readonly Team[]): TaskSpec[] {
  const parts = new Map<string, string[]>();
  const out: TaskSpec[] = [];
  for (const task of tasks) {
    const files = task.files.map(normalizeRelative);
    const byTeam = new Map<string, string[]>();
    for (const f of files) {
      const owner = ownersOf(teams, f)[0]?.id ?? task.squad ?? '';
      byTeam.set(owner, [...(byTeam.get(owner) ?? []), f]);
    }
    const owned = [...byTeam.keys()].filter(Boolean);
    if (owned.length <= 1) {
      out.push({ ...task, files, squad: owned[0] ?? (task.squad && teams.some((t) => t.id === task.squad) ? task.squad : null) });
      parts.set(task.id, [task.id]);
      continue;
    }
    const ids: string[] = [];
    for (const [team, teamFiles] of byTeam) {
      const id = `${task.id}-${(team || 'UNOWNED').toUpperCase()}`;
      ids.push(id);
      out.push({
        ...task,
        id,
        title: `${task.title} (${team || 'unowned'} part)`,
        squad: team || null,
        files: teamFiles,
        criteria: task.criteria,
      });
    }
    parts.set(task.id, ids);
  }
  return out.map((t) => ({
    ...t,
    dependencies: [...new Set(t.dependencies.flatMap((d) => parts.get(d) ?? [d]))].filter((d) => d !== t.id),
  }));
}

/**
 * Drop dependencies naming no task and edges closing a cycle (kept in id order, so the result is
 * deterministic); each drop is reported, since the live view announces dropped dependencies.
 */
// Not core/lib/graph.ts: each kept edge changes which later edge would close a cycle, an incremental
// rule that graph's built-once graphs do not model (and plans are capped at PLAN_SIZE_CAP tasks).
export function repairDependencies(tasks: readonly TaskSpec[]): { tasks: TaskSpec[]; dropped: DroppedDependency[] } {
  const ids = new Set(tasks.map((t) => t.id));
  const dropped: DroppedDependency[] = [];
  const kept = new Map<string, string[]>();
  const reaches = (from: string, to: string, seen = new Set<string>()): boolean => {
    if (from === to) return true;
    if (seen.has(from)) return false;
    seen.add(from);
    return (kept.get(from) ?? []).some((d) => reaches(d, to, seen));
  };
  for (const task of tasks) kept.set(task.id, []);
  for (const task of tasks) {
    for (const dep of task.dependencies) {
      if (!ids.has(dep)) dropped.push({ task: task.id, dependency: dep, reason: 'no such task' });
      else if (reaches(dep, task.id)) dropped.push({ task: task.id, dependency: dep, reason: 'would close a cycle' });
      else kept.get(task.id)!.push(dep);
    }
  }
  return { tasks: tasks.map((t) => ({ ...t, dependencies: kept.get(t.id)! })), dropped };
}

/**
 * Turn a planner's proposal into the plan the board runs: unique ids, tasks cut along team
 * boundaries, capped at `PLAN_SIZE_CAP` (dependencies on cut tasks dropped and reported), and
 * dependencies repaired.
 */
export function shapePlan(raw: Plan, teams: readonly Team[]): ShapedPlan {
  const seen = new Set<string>();
  const unique = raw.tasks.filter((t) => (seen.has(t.id) ? false : (seen.add(t.id), true)));
  const cutTasks = cutAlongTeams(unique, teams);
  const kept = cutTasks.slice(0, PLAN_SIZE_CAP);
  const cut = cutTasks.slice(PLAN_SIZE_CAP).map((t) => t.id);
  const repaired = repairDependencies(kept);
  const dropped = repaired.dropped.map((d) =>
    cut.includes(d.dependency) ? { ...d, reason: `task cut by the plan size cap (${PLAN_SIZE_CAP})` } : d,
  );
  const teamIds = new Set(teams.map((t) => t.id));
  const contract = raw.contract
    .filter((c) => teamIds.has(c.provider))
    .map((c) => ({ ...c, consumers: c.consumers.filter((x) => teamIds.has(x)) }));
  const plan = { summary: raw.summary, tasks: repaired.tasks, contract };
  const report: PlanCut = {
    cap: PLAN_SIZE_CAP,
    proposed: cutTasks.length,
    dropped: cutTasks.slice(PLAN_SIZE_CAP).map((t) => ({ id: t.id, title: t.title, team: t.squad })),
    teams_without_work: [],
  };
  return { plan, dropped, cut, report: refreshCut(report, plan) };
}

/**
 * The cap report against the plan as it is now: a dropped task added back at the approval gate is
 * no longer dropped, and a team given work again is no longer without it.
 */
export function refreshCut(report: PlanCut, plan: Plan): PlanCut {
  const ids = new Set(plan.tasks.map((t) => t.id));
  const working = new Set(plan.tasks.map((t) => t.squad));
  const dropped = report.dropped.filter((t) => !ids.has(t.id));
  const teams = [...new Set(report.dropped.map((t) => t.team).filter((t): t is string => t !== null))];
  return { ...report, dropped, teams_without_work: teams.filter((t) => !working.has(t)).sort() };
}

/**
 * Problems that must be solved before a plan may start: a pinned team the cap left without any
 * task would otherwise get no gate and its half would silently not be done.
 */
export function planProblems(report: PlanCut | null | undefined, plan: Plan, teams: readonly Team[], pins: readonly string[]): string[] {
  if (!report) return [];
  const current = refreshCut(report, plan);
  return current.teams_without_work
    .filter((team) => pins.includes(team) && teams.some((t) => t.id === team))
    .map((team) => {
      const lost = report.dropped.filter((t) => t.team === team).map((t) => t.id);
      return `team '${team}' is pinned but the plan size cap (${report.cap}) dropped all its tasks (${lost.join(', ')}): remove other tasks and add one of its tasks back, or remove the team from the plan`;
    });
}

/** One line for the summary and the CLI: what the cap dropped and who it left without work. */
export function describeCut(report: PlanCut | null | undefined): string | null {
  if (!report?.dropped.length) return null;
  const tasks = report.dropped.map((t) => `${t.id}${t.team ? ` [${t.team}]` : ''}`).join(', ');
  const idle = report.teams_without_work.length ? `; teams left without work: ${report.teams_without_work.join(', ')}` : '';
  return `plan size cap ${report.cap}: dropped ${report.dropped.length} of ${report.proposed} tasks (${tasks})${idle}`;
}

/** Rule 1 as a check: the squad the task's files demand, or a refusal naming the owner. */
export function checkSquad(task: Pick<TaskSpec, 'id' | 'files'>, squad: string | null, teams: readonly Team[]): void {
  const owners = new Set(task.files.flatMap((f) => ownersOf(teams, f).map((t) => t.id)));
  if (squad !== null && !teams.some((t) => t.id === squad)) throw fail('HANGAR_CODERUN_SQUAD_UNKNOWN', { team: squad });
  for (const owner of owners) {
    if (squad === null && owners.size === 1) {
      throw fail('HANGAR_CODERUN_TASK_UNASSIGNABLE', { task: task.id, owner });
    }
    if (squad !== null && owner !== squad) {
      const file = task.files.find((f) => ownersOf(teams, f).some((t) => t.id === owner));
      throw fail('HANGAR_CODERUN_TASK_OWNED_ELSEWHERE', { task: task.id, team: squad, file: String(file), owner });
    }
  }
}

export function assertStaffable(role: string, teams: readonly Team[], taskId: string): void {
  if (!staffableRoles(teams).has(role)) {
    throw fail('HANGAR_CODERUN_ROLE_UNSTAFFABLE', { task: taskId, role });
  }
}

/**
 * Apply an approval-gate edit (rule 3). Builds the next plan and teams off to the side and returns
 * them only when every rule holds, so a refused edit leaves the live plan untouched. Omitted
 * fields stay as they were; a field given as empty (`""`, `[]`, `null`) is cleared.
 */
export function applyPlanEdit(
  plan: Plan,
  teams: readonly Team[],
  input: unknown,
): { plan: Plan; teams: Team[]; dropped: DroppedDependency[] } {
  const parsedEdit = PlanEdit.safeParse(input ?? {});
  if (!parsedEdit.success) throw fail('HANGAR_CODERUN_INVALID', { problems: formatIssues(parsedEdit.error.issues, 'body') });
  // zod fills defaults into partial objects; only the keys the caller sent count as edits, so
  // omitted fields stay untouched.
  const raw = (input ?? {}) as { tasks?: Array<Record<string, unknown>>; teams?: Array<Record<string, unknown>> };
  const sent = <T extends object>(parsed: T[], given: Array<Record<string, unknown>> | undefined): T[] =>
    parsed.map((p, i) => Object.fromEntries(Object.entries(p).filter(([k]) => given?.[i] && Object.hasOwn(given[i]!, k))) as T);
  const edit = { tasks: sent(parsedEdit.data.tasks, raw.tasks), teams: sent(parsedEdit.data.teams, raw.teams) };

  let nextTeams = teams.map((t) => structuredClone(t));
  for (const te of edit.teams) {
    const { id, remove, ...fields } = te;
    const index = nextTeams.findIndex((t) => t.id === id);
    if (remove) {
      if (index < 0) throw fail('HANGAR_CODERUN_PLAN_NO_TEAM', { team: id });
      nextTeams = nextTeams.filter((t) => t.id !== id);
      continue;
    }
    const parsed = TeamSchema.safeParse(index >= 0 ? { ...nextTeams[index], ...fields, id } : { ...fields, id });
    if (!parsed.success) throw fail('HANGAR_CODERUN_INVALID', { problems: formatIssues(parsed.error.issues, `teams.${id}`) });
    if (index >= 0) nextTeams[index] = parsed.data;
    else nextTeams.push(parsed.data);
  }
  assertDisjoint(nextTeams);

  let tasks = plan.tasks.map((t) => structuredClone(t));
  const removed = new Set<string>();
  for (const te of edit.tasks) {
    const { id, remove, ...fields } = te;
    const index = tasks.findIndex((t) => t.id === id);
    if (remove) {
      if (index < 0) throw fail('HANGAR_CODERUN_PLAN_NO_TASK', { task: id });
      tasks = tasks.filter((t) => t.id !== id);
      removed.add(id);
      continue;
    }
    const parsed = TaskSpec.safeParse(index >= 0 ? { ...tasks[index], ...fields, id } : { ...fields, id });
    if (!parsed.success) throw fail('HANGAR_CODERUN_INVALID', { problems: formatIssues(parsed.error.issues, `tasks.${id}`) });
    const next = { ...parsed.data, files: parsed.data.files.map(normalizeRelative) };
    if (index >= 0) tasks[index] = next;
    else tasks.push(next);
  }
  if (tasks.length === 0) throw fail('HANGAR_CODERUN_PLAN_EMPTY', {});
  if (tasks.length > PLAN_SIZE_CAP) throw fail('HANGAR_CODERUN_PLAN_TOO_LARGE', { cap: PLAN_SIZE_CAP, count: tasks.length });

  const teamIds = new Set(nextTeams.map((t) => t.id));
  for (const task of tasks) {
    assertStaffable(task.role, nextTeams, task.id);
    if (task.squad !== null && !teamIds.has(task.squad))
      throw fail('HANGAR_CODERUN_TASK_SQUAD_NOT_IN_PLAN', { task: task.id, team: task.squad });
    // A team edit may move ownership under a task: the squad must still agree with its files.
    const owners = [...new Set(task.files.flatMap((f) => ownersOf(nextTeams, f).map((t) => t.id)))];
    if (owners.length > 1) throw fail('HANGAR_CODERUN_TASK_OWNERS_SEVERAL', { task: task.id, owners: owners.join(', ') });
    if (owners.length === 1 && task.squad !== owners[0]) {
      throw fail('HANGAR_CODERUN_TASK_SQUAD_MISMATCH', { task: task.id, team: task.squad ?? 'none', owner: owners[0]! });
    }
  }

  // Removing a task repairs dependencies that named it (reported as dropped).
  const dropped: DroppedDependency[] = [];
  tasks = tasks.map((t) => {
    const gone = t.dependencies.filter((d) => removed.has(d));
    gone.forEach((d) => dropped.push({ task: t.id, dependency: d, reason: 'task removed at the approval gate' }));
    return gone.length ? { ...t, dependencies: t.dependencies.filter((d) => !removed.has(d)) } : t;
  });
  const repaired = repairDependencies(tasks);
  const contract: ContractClause[] = plan.contract
    .filter((c) => teamIds.has(c.provider))
    .map((c) => ({ ...c, consumers: c.consumers.filter((x) => teamIds.has(x)) }));
  return { plan: { ...plan, tasks: repaired.tasks, contract }, teams: nextTeams, dropped: [...dropped, ...repaired.dropped] };
}

/** What the plan-approval card shows: up to 60 tasks and how many there are. */
export function approvalCard(plan: Plan): { tasks: TaskSpec[]; shown: number; total: number; note: string | null } {
  const shown = Math.min(plan.tasks.length, APPROVAL_CARD_LIMIT);
  return {
    tasks: plan.tasks.slice(0, shown),
    shown,
    total: plan.tasks.length,
    note: plan.tasks.length > shown ? `showing ${shown} of ${plan.tasks.length} tasks` : null,
  };
}

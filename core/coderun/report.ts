/**
 * The numbers a finished coding run reports: each team's final gate, the repairs (tickets found,
 * resolved, re-staffed, left for a person), whether the run succeeded, and the one-line summary.
 * Pure functions of the run record, so they say the same whenever they are read.
 */
import { describeCut } from './plan.js';
import type { GateResult, RunRecord, RunTask } from './schemas.js';

/** The last gate result of every gated team. */
export function finalGates(record: RunRecord): GateResult[] {
  const last = new Map<string, GateResult>();
  for (const g of record.gates) last.set(g.team, g);
  return [...last.values()];
}

/**
 * `needs_human` counts problems, not attempts: a ticket left unresolved is one problem however
 * many of its fix tasks gave up, and a stuck task without a ticket is one more.
 */
export function repairsOf(record: RunRecord): RunRecord['repairs'] {
  const t = record.tickets;
  const problems = new Set<string>();
  for (const ticket of t) if (ticket.status !== 'resolved') problems.add(ticket.id);
  for (const task of record.tasks) if (task.needs_human && !isSuperseded(record, task)) problems.add(task.ticket ?? task.id);
  return {
    found: t.length,
    resolved: t.filter((x) => x.status === 'resolved').length,
    restaffed: t.reduce((n, x) => n + Math.max(0, x.staffed - 1), 0),
    needs_human: problems.size,
  };
}

/** A fix task that gave up while a later fix resolved its ticket: nothing is left for a person. */
export function isSuperseded(record: RunRecord, task: RunTask): boolean {
  return task.ticket !== null && record.tickets.some((t) => t.id === task.ticket && t.status === 'resolved');
}

/** Every task done (or superseded), no team's final gate RED, and the integration check not RED. */
export function succeeded(record: RunRecord): boolean {
  const finals = finalGates(record);
  return (
    record.tasks.every((t) => t.state === 'done' || isSuperseded(record, t)) &&
    !finals.some((g) => g.outcome === 'RED') &&
    record.integration?.outcome !== 'RED'
  );
}

export function summaryOf(record: RunRecord): string {
  const finals = finalGates(record);
  const by = (o: string) => finals.filter((g) => g.outcome === o).map((g) => g.team);
  const done = record.tasks.filter((t) => t.state === 'done').length;
  const parts = [
    `${done}/${record.tasks.length} tasks done`,
    `green: ${by('green').join(', ') || 'none'}`,
    `RED: ${by('RED').join(', ') || 'none'}`,
    `UNVERIFIED: ${by('UNVERIFIED').join(', ') || 'none'}`,
    `integration: ${record.integration?.outcome ?? 'skipped'}`,
  ];
  const cut = describeCut(record.plan_cut);
  if (cut) parts.push(cut);
  return parts.join('; ');
}

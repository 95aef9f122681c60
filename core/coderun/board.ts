/**
 * The task board as a pure state machine (spec 3, "Task board"): columns ready_to_dev,
 * in_progress, in_review, to_scope, done. `transition` takes a task and an action and returns the
 * next task — or throws `BoardError` for a move the board does not allow — so the scheduler, the
 * routes and the tests all go through the same rules. Tickets are in `raiseDefect`.
 *
 * Transitions beyond the spec's table (decisions): dispatch ready_to_dev → in_progress; submit
 * in_progress → in_review; approve in_review → done; a rejected review sends the task back to
 * in_progress with the findings until the ladder is exhausted; retry sends a stuck task back to
 * ready_to_dev with fresh attempts.
 */
import { createHash } from 'node:crypto';
import { buildGraph, topologicalOrder } from '../lib/graph.js';
import { failures, normalizeLine, stripAnsi } from './runner-output.js';
import type { RunTask, TaskSpec, TaskState, Ticket } from './schemas.js';

export class BoardError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BoardError';
  }
}

export interface BoardLimits {
  /** Review rounds in one hand before the ladder is exhausted. */
  reviewRounds: number;
  /** Dispatches before an orphaned task is no longer re-queued. */
  attemptCeiling: number;
}

export type BoardAction =
  | { type: 'dispatch'; assignee: string }
  | { type: 'submit' }
  | { type: 'approve' }
  | { type: 'reject'; findings: string[]; corrector: string | null }
  | { type: 'orphaned' }
  | { type: 'give_up'; reason: string }
  | { type: 'retry' };

export function newTask(spec: TaskSpec, ticket: string | null = null): RunTask {
  return {
    ...spec,
    state: 'ready_to_dev',
    attempts: 0,
    reviews: 0,
    handed_over: false,
    assignee: null,
    findings: [],
    escalation: 0,
    ticket,
    commit: null,
    changed: [],
    needs_human: false,
    note: null,
  };
}

function expect(task: RunTask, action: string, ...states: TaskState[]): void {
  if (!states.includes(task.state)) {
    throw new BoardError(`task ${task.id}: cannot ${action} from ${task.state} (allowed from ${states.join(', ')})`);
  }
}

export function transition(task: RunTask, action: BoardAction, limits: BoardLimits): RunTask {
  switch (action.type) {
    case 'dispatch':
      expect(task, 'dispatch', 'ready_to_dev');
      if (task.attempts >= limits.attemptCeiling)
        throw new BoardError(`task ${task.id}: attempt ceiling (${limits.attemptCeiling}) reached`);
      return { ...task, state: 'in_progress', attempts: task.attempts + 1, assignee: task.assignee ?? action.assignee, note: null };
    case 'submit':
      expect(task, 'submit for review', 'in_progress');
      return { ...task, state: 'in_review' };
    case 'approve':
      expect(task, 'approve', 'in_review');
      return { ...task, state: 'done', note: null };
    case 'reject': {
      expect(task, 'reject', 'in_review');
      const findings = [...task.findings, ...action.findings];
      const reviews = task.reviews + 1;
      if (reviews < limits.reviewRounds) return { ...task, state: 'in_progress', reviews, findings };
      // Ladder exhausted: hand over once to a language corrector (same id, files, acceptance and
      // team; the findings travel with it), else a person is asked to look.
      if (!task.handed_over && action.corrector) {
        return {
          ...task,
          state: 'in_progress',
          reviews: 0,
          findings,
          handed_over: true,
          assignee: action.corrector,
          note: `handed to corrector ${action.corrector}`,
        };
      }
      return {
        ...task,
        state: 'to_scope',
        reviews,
        findings,
        needs_human: true,
        note: task.handed_over
          ? 'review ladder exhausted after the hand-over; a person is asked to look'
          : 'review ladder exhausted and no agent can take it; a person is asked to look',
      };
    }
    case 'orphaned':
      expect(task, 're-queue an orphan', 'in_progress', 'in_review');
      if (task.attempts < limits.attemptCeiling)
        return { ...task, state: 'ready_to_dev', note: `re-queued after attempt ${task.attempts}` };
      return { ...task, state: 'to_scope', needs_human: true, note: `attempt ceiling (${limits.attemptCeiling}) reached` };
    case 'give_up':
      expect(task, 'give up', 'ready_to_dev', 'in_progress', 'in_review');
      return { ...task, state: 'to_scope', needs_human: true, note: action.reason };
    case 'retry':
      expect(task, 'retry', 'to_scope', 'in_progress', 'in_review', 'ready_to_dev');
      return { ...task, state: 'ready_to_dev', attempts: 0, reviews: 0, needs_human: false, note: 'retried by a person' };
    default: {
      const never: never = action;
      throw new BoardError(`unknown action ${JSON.stringify(never)}`);
    }
  }
}

/** Tasks whose dependencies are all done, best priority first (0 is most urgent), ties by id. */
export function dispatchable(tasks: readonly RunTask[]): RunTask[] {
  const done = new Set(tasks.filter((t) => t.state === 'done').map((t) => t.id));
  return tasks
    .filter((t) => t.state === 'ready_to_dev' && t.dependencies.every((d) => done.has(d)))
    .sort((a, b) => a.priority - b.priority || a.id.localeCompare(b.id, 'en', { numeric: true }));
}

/**
 * The next wave: dispatchable tasks whose files do not collide, in priority order. Tasks with no
 * declared files are given a wave of their own (we cannot prove they do not collide).
 */
export function nextWave(tasks: readonly RunTask[], maxTasks = Infinity): RunTask[] {
  const wave: RunTask[] = [];
  const taken = new Set<string>();
  for (const task of dispatchable(tasks)) {
    if (wave.length >= maxTasks) break;
    if (task.files.length === 0) {
      if (wave.length === 0) return [task];
      continue;
    }
    if (wave.some((t) => t.files.length === 0)) break;
    if (task.files.some((f) => taken.has(f))) continue;
    task.files.forEach((f) => taken.add(f));
    wave.push(task);
  }
  return wave;
}

/**
 * A task no state change can move without a person: it waits, directly or not, on a dependency that
 * cannot finish (no such task, one set aside in to_scope, or a cycle).
 */
export function blocked(tasks: readonly RunTask[]): RunTask[] {
  const done = new Set(tasks.filter((t) => t.state === 'done').map((t) => t.id));
  const byId = new Map(tasks.map((t) => [t.id, t]));
  // Done dependencies are met and drop out; a task in to_scope is left out of the graph, so
  // depending on it counts as depending on no task: both can never be met.
  const open = tasks.filter((t) => t.state !== 'done' && t.state !== 'to_scope').map((t) => t.id);
  const graph = buildGraph(open, (id) => byId.get(id)!.dependencies.filter((d) => !done.has(d)));
  const stuck = new Set(topologicalOrder(graph).blocked);
  return tasks.filter((t) => t.state === 'ready_to_dev' && stuck.has(t.id));
}

// ---- tickets -----------------------------------------------------------------------------------

export interface Defect {
  team: string;
  command: string;
  output: string;
  files: string[];
  /** Computed from the whole output when the caller has it (`output` may be only its tail). */
  fingerprint?: string;
}

/**
 * A defect's identity, the way test runners and CI test analytics group failures: the team, the
 * command and the failing tests by id with their assertion (`failures`, runner-output.ts), sorted,
 * with durations, timestamps, temp paths, ports, addresses, ANSI codes and line numbers taken out.
 * When the output names no failing test (a crash, a build error, a custom script), the failing
 * lines — else the last lines — stand in, with every number taken out as well.
 */
export function fingerprint(defect: Pick<Defect, 'team' | 'command' | 'output'>): string {
  return createHash('sha256')
    .update(`${defect.team}\0${defect.command}\0${defectKey(defect.output)}`)
    .digest('hex')
    .slice(0, 16);
}

/** The text a fingerprint hashes (exported so a test can show what two outputs have in common). */
export function defectKey(output: string): string {
  const named = failures(output);
  if (named.length) return named.map((f) => `${f.id} :: ${f.message}`).join('\n');
  const lines = stripAnsi(output)
    .split('\n')
    .map((l) => normalizeLine(l, true))
    .filter(Boolean);
  const failing = lines.filter((l) => /(not ok|fail|error|assert|expected|panic|exception|traceback)/i.test(l));
  return [...new Set(failing.length ? failing : lines.slice(-15))].slice(0, 20).join('\n');
}

export function tail(text: string, lines = 40, chars = 4000): string {
  const t = text.split('\n').slice(-lines).join('\n');
  return t.length > chars ? t.slice(-chars) : t;
}

/**
 * The end of a failing command's output, with the runners' failure headlines (`not ok 1 - …`,
 * `✖ …`, `FAIL …`, jest's `● …`) put first when the tail cut them off: they name what failed.
 */
export function failureTail(text: string): string {
  const end = tail(text);
  const headlines = text
    .split('\n')
    .filter((l) => /^\s*(not ok\b|✖|FAIL\b|FAILED\b|●|--- FAIL:|thread '.*' panicked)/.test(l) && !end.includes(l))
    .slice(0, 10);
  return headlines.length ? `${headlines.join('\n')}\n…\n${end}` : end;
}

/**
 * Raise a correction ticket for a defect, or — when the same defect is already ticketed — reopen or
 * bump that ticket instead of raising a second one. Returns the next ticket list and what happened.
 */
export function raiseDefect(
  tickets: readonly Ticket[],
  defect: Defect,
): { tickets: Ticket[]; ticket: Ticket; action: 'raised' | 'bumped' } {
  const fp = defect.fingerprint ?? fingerprint(defect);
  const existing = tickets.find((t) => t.fingerprint === fp);
  if (existing) {
    const bumped: Ticket = {
      ...existing,
      count: existing.count + 1,
      status: existing.status === 'needs_human' ? 'needs_human' : 'open',
      output_tail: failureTail(defect.output),
    };
    return { tickets: tickets.map((t) => (t.id === existing.id ? bumped : t)), ticket: bumped, action: 'bumped' };
  }
  const ticket: Ticket = {
    id: `TK${tickets.length + 1}-${defect.team.toUpperCase()}`,
    team: defect.team,
    fingerprint: fp,
    command: defect.command,
    output_tail: failureTail(defect.output),
    files: defect.files,
    acceptance: `\`${defect.command}\` passes`,
    status: 'open',
    count: 1,
    staffed: 0,
  };
  return { tickets: [...tickets, ticket], ticket, action: 'raised' };
}

/** Files a failing output implicates, restricted to the files the lane touched when any match. */
export function implicatedFiles(output: string, laneFiles: readonly string[]): string[] {
  const mentioned = laneFiles.filter((f) => output.includes(f) || output.includes(f.split('/').pop()!));
  return mentioned.length ? mentioned : [...laneFiles];
}

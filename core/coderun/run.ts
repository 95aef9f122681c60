/**
 * One coding run from plan to report. Phases: plan (model) → approval gate (optional) → contract
 * frozen → waves of tasks (agent loops in workers, review ladder, commits) → one gate per team as
 * its lane finishes → correction tickets and their fixes → integration check → report.
 *
 * Locking: a run is driven by one async flow; waves run tasks concurrently, and every mutation of
 * the record goes through `setTask` / `update`, which are synchronous, so no two tasks interleave
 * inside a mutation. Git commits are serialised by `RunWorkspace`.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { blocked, BoardError, implicatedFiles, newTask, nextWave, raiseDefect, transition, type BoardLimits } from './board.js';
import type { AgentOutcome } from './agent-worker.js';
import { runCommand } from './command.js';
import type { FenceTeam } from './fence.js';
import { runGate } from './gates.js';
import { ownedBy } from './ownership.js';
import { RunWorkspace } from './git.js';
import { jsonFromText, type Message, type ModelGate, type ToolSpec } from './model.js';
import { approvalCard, describeCut, planProblems, shapePlan } from './plan.js';
import { planWithModel, MALFORMED_RETRIES } from './planner.js';
import type { AgentPool } from './pool.js';
import { staffingOf } from './preselect.js';
import type { CodeConfig, GateResult, RunEvent, RunRecord, Task, Team, Ticket } from './schemas.js';
import { listRepository, type CommandWrites } from './tools.js';

export interface RunDeps {
  config: CodeConfig;
  gate: ModelGate;
  pool: AgentPool;
  /** Where run worktrees live (the workspace's state folder, never the target repository). */
  worktrees: string;
  emit: (event: RunEvent) => void;
  /** Persist the record (called after every change; the caller serialises writes). */
  save: (record: RunRecord) => void;
  /** Tokens an agent's conversation may hold. */
  budgetFor: (role: string) => number;
  /** Every library team's paths, so a fence refusal names the owner even if it is not in the run. */
  libraryTeams: FenceTeam[];
}

export const CONTRACT_FILE = '.hangar/contract.json';
/** Gate runs per team: first run plus re-runs after fixes (bounds a lane that keeps finding new defects). */
const MAX_GATE_RUNS = 3;
/** Each ticket is staffed once and re-staffed at most once. */
const MAX_TICKET_STAFFING = 2;

const REVIEW_TOOL: ToolSpec = {
  name: 'review',
  description: 'Give your verdict on the change: approve, or reject with findings the developer must address.',
  parameters: {
    type: 'object',
    properties: { verdict: { type: 'string', enum: ['approve', 'reject'] }, findings: { type: 'array', items: { type: 'string' } } },
    required: ['verdict'],
  },
};

export class CodeRun {
  readonly record: RunRecord;
  private readonly controller = new AbortController();
  private workspace: RunWorkspace | undefined;
  private approval: { resolve: () => void; reject: (e: Error) => void } | undefined;
  private readonly gateRuns = new Map<string, number>();
  /** Tasks between dispatch and settling (their files may be written but not yet committed). */
  private readonly working = new Set<string>();
  /**
   * Fenced writes by path (newest wins), from the workers' tool events: a command's change to a
   * file that another in-flight task of its owning team wrote through its fence while the command
   * ran is that task's work, not a violation.
   */
  private readonly fencedWrites = new Map<string, { task: string; at: number }>();
  /** Notes said while a task stayed in its state, for its next `task_update`. */
  private readonly pendingNotes = new Map<string, string>();
  /** Fix tasks whose result a gate has already judged. */
  private readonly gatedFixes = new Set<string>();
  private readonly limits: BoardLimits;

  constructor(record: RunRecord, private readonly deps: RunDeps) {
    this.record = record;
    this.limits = { reviewRounds: deps.config.review_rounds, attemptCeiling: deps.config.attempt_ceiling };
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get active(): boolean {
    return !['succeeded', 'failed', 'cancelled'].includes(this.record.status);
  }

  private update(patch: Partial<RunRecord>): void {
    Object.assign(this.record, patch);
    this.deps.save(this.record);
  }

  private setStatus(status: RunRecord['status'], detail?: string): void {
    this.update({ status });
    this.deps.emit({ type: 'run_status', run: this.record.id, status, ...(detail ? { detail } : {}) });
  }

  private task(id: string): Task {
    const t = this.record.tasks.find((x) => x.id === id);
    if (!t) throw new BoardError(`no task ${id}`);
    return t;
  }

  /**
   * Store a task and announce it with one `task_update` per state change. Changes within a state
   * (files written, the commit sha, an escalation) are stored silently; a note said meanwhile
   * (an escalation) travels with the next state change.
   */
  private setTask(next: Task, note?: string): Task {
    const before = this.record.tasks.find((t) => t.id === next.id);
    this.update({ tasks: this.record.tasks.map((t) => (t.id === next.id ? next : t)) });
    const said = note ?? next.note ?? undefined;
    if (before && before.state === next.state) {
      if (note) this.pendingNotes.set(next.id, [this.pendingNotes.get(next.id), note].filter(Boolean).join('; '));
      return next;
    }
    const pending = this.pendingNotes.get(next.id);
    this.pendingNotes.delete(next.id);
    const text = [pending, said].filter(Boolean).join('; ');
    this.deps.emit({ type: 'task_update', run: this.record.id, task: next.id, team: next.squad, state: next.state, ...(text ? { note: text } : {}) });
    return next;
  }

  private move(id: string, action: Parameters<typeof transition>[1], note?: string): Task {
    return this.setTask(transition(this.task(id), action, this.limits), note);
  }

  /** The task is being worked on (agent loop, review or commit) right now. */
  isBusy(taskId: string): boolean {
    return this.working.has(taskId);
  }

  cancel(): void {
    this.controller.abort();
    this.approval?.reject(new Error('cancelled'));
  }

  /** Approve the plan at the gate (no-op unless the run waits there). */
  approve(): void {
    this.approval?.resolve();
  }

  /** Plan, wait at the approval gate when asked, then execute. Never throws: failures end the run. */
  async start(requireApproval: boolean): Promise<void> {
    try {
      await this.plan();
      const problems = this.record.plan_problems ?? [];
      // Without an approval gate nobody can fix the plan: it fails before any work starts.
      if (problems.length && !requireApproval) throw new Error(`the plan cannot start: ${problems.join('; ')}`);
      if (requireApproval) {
        this.setStatus('awaiting_approval');
        await new Promise<void>((resolve, reject) => (this.approval = { resolve, reject }));
        this.approval = undefined;
      }
      await this.execute();
    } catch (err) {
      await this.fail(err);
    }
  }

  private async plan(): Promise<void> {
    this.setStatus('planning');
    const files = await listRepository(this.record.repo, 300);
    const outcome = await planWithModel(this.deps.gate, this.record.request, this.record.teams, files, this.signal);
    const shaped = shapePlan(outcome.plan, this.record.teams);
    const problems = planProblems(shaped.report, shaped.plan, this.record.teams, this.record.pins);
    this.update({ plan: shaped.plan, plan_cut: shaped.report, plan_problems: problems });
    const card = approvalCard(shaped.plan);
    this.deps.emit({
      type: 'plan_proposed',
      run: this.record.id,
      tasks: card.total,
      shown: card.shown,
      summary: shaped.plan.summary,
      proposed: shaped.report.proposed,
      cap: shaped.report.cap,
      dropped: shaped.report.dropped,
      teams_without_work: shaped.report.teams_without_work,
      problems,
    });
    for (const d of shaped.dropped) this.deps.emit({ type: 'dependency_dropped', run: this.record.id, ...d });
  }

  private async execute(): Promise<void> {
    const plan = this.record.plan!;
    this.setStatus('running');
    this.workspace = await RunWorkspace.open(this.record.repo, this.record.id, this.deps.worktrees);
    this.update({ branch: this.workspace.branch, base: this.workspace.base, tasks: plan.tasks.map((t) => newTask(t)) });
    await this.freezeContract();

    for (;;) {
      await this.runWaves();
      const pending = await this.gateFinishedLanes();
      if (!pending) break;
    }
    await this.integrate();
    await this.finish();
  }

  /** Contract clauses are written and committed before any task starts; agents see them read-only. */
  private async freezeContract(): Promise<void> {
    const ws = this.workspace!;
    const clauses = this.record.plan!.contract;
    if (!clauses.length) return;
    const file = path.join(ws.dir, CONTRACT_FILE);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, JSON.stringify({ run: this.record.id, request: this.record.request, frozen_at: new Date().toISOString(), clauses }, null, 2) + '\n');
    await ws.commit([CONTRACT_FILE], `contract: freeze ${clauses.length} clause(s) [hangar ${this.record.id}]`);
    this.update({ contract_file: CONTRACT_FILE });
    for (const c of clauses) this.deps.emit({ type: 'contract_frozen', run: this.record.id, name: c.name, provider: c.provider, consumers: c.consumers, file: CONTRACT_FILE });
  }

  private async runWaves(): Promise<void> {
    let wave = 0;
    const width = this.deps.config.squads ? Math.max(1, this.deps.config.max_parallel) : 1;
    for (;;) {
      this.throwIfCancelled();
      const tasks = nextWave(this.record.tasks, width);
      if (!tasks.length) break;
      wave++;
      this.deps.emit({ type: 'wave', run: this.record.id, wave, tasks: tasks.map((t) => t.id), teams: [...new Set(tasks.map((t) => t.squad ?? 'unowned'))] });
      // allSettled, not all: on cancellation or a failure every task of the wave is first
      // brought to rest, so nothing commits into a worktree that is being removed.
      const settled = await Promise.allSettled(tasks.map((t) => this.work(t.id)));
      this.throwIfCancelled();
      const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      // Gate each lane as soon as it finishes, between waves (nothing else writes meanwhile);
      // fix tasks it queues join the next waves.
      await this.gateFinishedLanes();
    }
    for (const t of blocked(this.record.tasks)) {
      this.move(t.id, { type: 'give_up', reason: `a dependency cannot finish (${t.dependencies.join(', ')})` });
    }
  }

  private fenceOf(task: Task): { team: FenceTeam; teams: FenceTeam[] } {
    const inRun = this.record.teams.map((t) => ({ id: t.id, owns: t.owns }));
    const teams = [...inRun, ...this.deps.libraryTeams.filter((l) => !inRun.some((t) => t.id === l.id))];
    const team = inRun.find((t) => t.id === task.squad);
    return { team: team ?? { id: 'unowned', owns: [], unowned: true }, teams };
  }

  private teamOf(task: Task): Team | undefined {
    return this.record.teams.find((t) => t.id === task.squad);
  }

  /** A corrector of the task's team whose languages cover the task's files (or any language). */
  private correctorFor(task: Task): string | null {
    const team = this.teamOf(task);
    const exts = new Set(task.files.map((f) => path.extname(f).slice(1)).filter(Boolean));
    const fit = team?.agents.find((a) => a.role === 'corrector' && (a.languages.length === 0 || [...exts].every((e) => a.languages.includes(e))));
    return fit?.name ?? null;
  }

  /** Drive one task through dispatch, agent loop, test and review until it settles (committed or given up). */
  private async work(id: string): Promise<void> {
    this.working.add(id);
    try {
      await this.workLoop(id);
    } finally {
      this.working.delete(id);
    }
  }

  private async workLoop(id: string): Promise<void> {
    for (;;) {
      this.throwIfCancelled();
      let task = this.task(id);
      if (task.state === 'done' || task.state === 'to_scope') return;
      if (task.state === 'ready_to_dev') {
        const team = this.teamOf(task);
        const assignee = team ? staffingOf(team).developers[0]! : 'developer';
        try {
          task = this.move(id, { type: 'dispatch', assignee });
        } catch (err) {
          if (err instanceof BoardError) return void this.move(id, { type: 'give_up', reason: err.message });
          throw err;
        }
      }
      const outcome = await this.runAgent(task);
      this.throwIfCancelled();
      await this.revertStrays(task);
      task = this.task(id);
      this.setTask({ ...task, changed: [...new Set([...task.changed, ...outcome.written])].sort() });
      if (outcome.status !== 'finished') {
        // A model that keeps sending broken calls or cannot finish within its steps is the model
        // failing the task: step it up the ladder (an endpoint error is not, so it only re-queues).
        if ((outcome.status === 'malformed' || outcome.status === 'out_of_steps') && task.escalation < this.deps.gate.ladderLength) {
          this.setTask({ ...this.task(id), escalation: task.escalation + 1 }, `escalated to ${this.deps.gate.modelFor({ role: task.role, rung: task.escalation + 1 })} after ${outcome.status === 'malformed' ? 'malformed tool calls' : 'running out of steps'}`);
        }
        if (outcome.status === 'malformed' && task.escalation >= this.deps.gate.ladderLength) {
          await this.workspace!.discard(this.task(id).changed);
          this.move(id, { type: 'give_up', reason: `model kept sending malformed tool calls and no bigger model is left: ${outcome.error}` });
          return;
        }
        // Orphaned: nothing is in flight for it any more; re-queued up to the attempt ceiling.
        const next = this.move(id, { type: 'orphaned' }, `${outcome.status}${outcome.error ? `: ${outcome.error}` : ''}`);
        if (next.state === 'to_scope') await this.workspace!.discard(next.changed);
        continue;
      }
      task = this.move(id, { type: 'submit' });
      const verdict = await this.review(task, outcome);
      this.throwIfCancelled();
      if (verdict.approve) {
        const done = this.move(id, { type: 'approve' });
        const sha = await this.workspace!.commit(done.changed, `${done.id}: ${done.title} [hangar ${this.record.id}, team ${done.squad ?? 'none'}]`);
        this.setTask({ ...this.task(id), commit: sha });
        return;
      }
      const next = this.move(id, { type: 'reject', findings: verdict.findings, corrector: this.correctorFor(task) });
      if (next.state === 'to_scope') {
        await this.workspace!.discard(next.changed);
        return;
      }
    }
  }

  /**
   * The safety net behind the per-command check (command-fence.ts, judged by `judgeCommandWrites`):
   * a process a command left running in the background can still write after the check. After a
   * loop, changes in paths owned by another team with no task being worked (uncommitted work of a
   * task in review or committing is legitimate) cannot be anyone's work: they are reverted and
   * reported. Accepted edge: such a late write into a team working at the same moment, or into
   * paths no team owns (build output), is left alone — it is never committed, since commits stage
   * only a task's fenced writes.
   */
  private async revertStrays(task: Task): Promise<void> {
    const fence = this.fenceOf(task);
    const busy = new Set(this.record.tasks.filter((t) => t.id !== task.id && this.working.has(t.id)).map((t) => t.squad));
    const strays: Array<{ file: string; owner: string }> = [];
    for (const file of await this.workspace!.status()) {
      const owner = fence.teams.find((t) => t.id !== fence.team.id && ownedBy(t, file) !== undefined);
      if (owner && !busy.has(owner.id) && !(fence.team.owns.length && ownedBy(fence.team, file))) strays.push({ file, owner: owner.id });
    }
    if (!strays.length) return;
    await this.workspace!.discard(strays.map((s) => s.file));
    for (const s of strays) {
      this.deps.emit({ type: 'fence_violation', run: this.record.id, task: task.id, team: task.squad, owner: s.owner, file: s.file, command: null });
    }
  }

  /**
   * A command of `task` changed paths of other teams. Every such change is reverted and reported,
   * whether or not the owning team is working — except a file another in-flight task wrote through
   * its own fence since the command started (its legitimate work in the same window). Accepted
   * edge: if the command also wrote that very file, the owner's task keeps the command's bytes; its
   * own review and gate are what judge them.
   */
  private judgeCommandWrites(task: Task, writes: CommandWrites): string[] {
    const revert: string[] = [];
    for (const change of writes.changes) {
      const fenced = this.fencedWrites.get(change.path);
      if (fenced && fenced.task !== task.id && fenced.at >= writes.started && this.working.has(fenced.task)) continue;
      revert.push(change.path);
      this.deps.emit({ type: 'fence_violation', run: this.record.id, task: task.id, team: task.squad, owner: change.owner, file: change.path, command: writes.command });
    }
    return revert;
  }

  private async runAgent(task: Task): Promise<AgentOutcome> {
    const fence = this.fenceOf(task);
    const team = this.teamOf(task);
    const agent = task.assignee ?? 'developer';
    const pin = team?.agents.find((a) => a.name === agent)?.model;
    const role = team?.agents.find((a) => a.name === agent)?.role ?? (task.handed_over ? 'corrector' : task.role);
    const contract = this.record.plan?.contract.length ? JSON.stringify(this.record.plan.contract, null, 2) : '';
    try {
      return await this.deps.pool.run(
        {
          root: realpathSync(this.workspace!.dir),
          role,
          agent,
          rung: task.escalation,
          model: pin,
          task: { id: task.id, title: task.title, description: task.description, files: task.files, acceptance: task.acceptance, criteria: task.criteria, findings: task.findings },
          team: fence.team,
          teams: fence.teams,
          contract,
          maxSteps: this.deps.config.agent_max_steps,
          commandTimeoutMs: this.deps.config.command_timeout_ms,
          budgetTokens: this.deps.budgetFor(role),
          malformedRetries: MALFORMED_RETRIES,
        },
        this.deps.gate,
        (e) => {
          if (e.tool === 'write_file' && e.ok && e.path) this.fencedWrites.set(e.path, { task: task.id, at: Date.now() });
          this.deps.emit({ type: 'tool', run: this.record.id, task: task.id, team: task.squad, tool: e.tool, ok: e.ok, detail: e.detail });
        },
        this.signal,
        (writes) => this.judgeCommandWrites(task, writes),
      );
    } catch (err) {
      // A crashed worker is an orphan, not a crashed run.
      return { status: 'model_error', summary: '', written: [], steps: 0, refused_writes: 0, error: `worker failed: ${(err as Error).message}` };
    }
  }

  /**
   * The tester seat runs the task's criteria commands; the reviewer seat (a model) reads the
   * change and gives a verdict. Failing criteria reject without asking the reviewer.
   */
  private async review(task: Task, outcome: AgentOutcome): Promise<{ approve: boolean; findings: string[] }> {
    const team = this.teamOf(task);
    const reviewer = team ? staffingOf(team).reviewer : 'reviewer';
    this.deps.emit({ type: 'review_pending', run: this.record.id, task: task.id, team: task.squad, reviewer });
    const failures: string[] = [];
    for (const criterion of task.criteria) {
      const result = await runCommand(criterion.command, { cwd: this.workspace!.dir, timeoutMs: this.deps.config.command_timeout_ms, signal: this.signal });
      if (result.exit_code !== 0) failures.push(`criterion "${criterion.text}" failed: \`${criterion.command}\` ${result.timed_out ? 'timed out' : `exit ${result.exit_code}`}\n${result.output.split('\n').slice(-15).join('\n')}`);
    }
    if (failures.length) return { approve: false, findings: failures };
    const diffs: string[] = [];
    for (const file of task.changed.slice(0, 10)) {
      const quoted = `'${file.replace(/'/g, `'\\''`)}'`;
      const shown = await runCommand(`git diff --no-color HEAD -- ${quoted}`, { cwd: this.workspace!.dir, timeoutMs: 10_000 });
      // A new file has no diff against HEAD: the reviewer reads it whole.
      const text = shown.output.trim() ? shown.output : `new file ${file}:\n${await readFile(path.join(this.workspace!.dir, file), 'utf8').catch(() => '(deleted)')}`;
      diffs.push(text.slice(0, 6000));
    }
    const messages: Message[] = [
      {
        role: 'system',
        content: `You are ${reviewer}, reviewer of team '${task.squad ?? 'none'}'. Review the change for task ${task.id}. Approve only if it does what the task asks. Call review once.`,
      },
      {
        role: 'user',
        content: `Task ${task.id}: ${task.title}\n${task.description}\nAcceptance: ${task.acceptance || '(none)'}\nDeveloper summary: ${outcome.summary}\nFiles changed: ${task.changed.join(', ') || '(none)'}\n\n${diffs.join('\n')}`,
      },
    ];
    let lastError = '';
    for (let attempt = 0; attempt <= MALFORMED_RETRIES; attempt++) {
      let reply;
      try {
        reply = await this.deps.gate.chat({ role: 'reviewer', messages, tools: [REVIEW_TOOL], rung: task.escalation, signal: this.signal });
      } catch (err) {
        lastError = (err as Error).message;
        break;
      }
      const call = reply.tool_calls.find((c) => c.name === 'review');
      let args: unknown;
      try {
        args = call ? JSON.parse(call.arguments) : jsonFromText(reply.content);
      } catch {
        args = undefined;
      }
      const verdict = (args as { verdict?: unknown })?.verdict;
      if (verdict === 'approve' || verdict === 'reject') {
        const findings = Array.isArray((args as { findings?: unknown }).findings) ? ((args as { findings: unknown[] }).findings.map(String)) : [];
        return { approve: verdict === 'approve', findings: verdict === 'reject' && !findings.length ? ['rejected without findings'] : findings };
      }
      lastError = 'the reviewer gave no verdict';
      messages.push({ role: 'user', content: 'Call the review tool with verdict "approve" or "reject".' });
    }
    // Decision: no verdict is not an approval — the harness never claims a review it did not get.
    return { approve: false, findings: [`review unavailable: ${lastError}`] };
  }

  /**
   * Gate every team whose lane has finished and is not yet proved; raise or bump tickets for RED
   * gates and queue their fix tasks. Returns true when new work was queued (waves run again).
   */
  private async gateFinishedLanes(): Promise<boolean> {
    let queued = false;
    for (const team of this.record.teams) {
      const lane = this.record.tasks.filter((t) => t.squad === team.id);
      if (!lane.length || lane.some((t) => t.state !== 'done' && t.state !== 'to_scope')) continue;
      const last = [...this.record.gates].reverse().find((g) => g.team === team.id);
      const openTicket = this.record.tickets.find((t) => t.team === team.id && t.status !== 'resolved');
      // A lane is gated once when it finishes, and again only after a fix task settled since.
      if (last && !lane.some((t) => t.ticket && !this.gatedFixes.has(t.id))) continue;
      const runs = (this.gateRuns.get(team.id) ?? 0) + 1;
      if (runs > MAX_GATE_RUNS) continue;
      this.gateRuns.set(team.id, runs);
      const result = await runGate(team.id, team.acceptance, this.workspace!.dir, this.deps.config.command_timeout_ms, this.signal);
      this.throwIfCancelled();
      lane.filter((t) => t.ticket).forEach((t) => this.gatedFixes.add(t.id));
      this.update({ gates: [...this.record.gates, result] });
      this.deps.emit({ type: 'gate', run: this.record.id, team: team.id, outcome: result.outcome, command: result.command, reason: result.reason });
      if (result.outcome === 'RED') queued = this.ticketFor(team, result, lane) || queued;
      else if (openTicket && result.outcome === 'green') this.resolveTickets(team.id);
    }
    return queued;
  }


  /** The team's check passed: every ticket it raised is resolved (each defect was that check failing). */
  private resolveTickets(team: string): void {
    const resolving = this.record.tickets.filter((t) => t.team === team && t.status !== 'resolved');
    this.update({ tickets: this.record.tickets.map((t) => (resolving.includes(t) ? { ...t, status: 'resolved' as const } : t)) });
    for (const t of resolving) this.deps.emit({ type: 'ticket', run: this.record.id, team, ticket: t.id, action: 'resolved', count: t.count });
  }

  /** Raise (or bump) the ticket of a RED gate and queue its fix task; false when no fix is allowed. */
  private ticketFor(team: Team, result: GateResult, lane: Task[]): boolean {
    const laneFiles = [...new Set(lane.flatMap((t) => [...t.files, ...t.changed]))];
    const { tickets, ticket, action } = raiseDefect(this.record.tickets, {
      team: team.id,
      command: result.command,
      output: result.output_tail,
      files: implicatedFiles(result.output_tail, laneFiles),
      fingerprint: result.fingerprint,
    });
    this.update({ tickets });
    this.deps.emit({ type: 'ticket', run: this.record.id, team: team.id, ticket: ticket.id, action, count: ticket.count });
    // Other open tickets of this lane stay open: a defect that did not show this time may be
    // hidden behind the new one. A ticket is resolved only when its check passes.
    // A fix no gate will judge (the lane's gate runs are used up) would be reported as unproved
    // work: the ticket goes to a person instead.
    const gateLeft = (this.gateRuns.get(team.id) ?? 0) < MAX_GATE_RUNS;
    if (ticket.staffed >= MAX_TICKET_STAFFING || !gateLeft) {
      this.setTicket({ ...ticket, status: 'needs_human' });
      this.deps.emit({ type: 'ticket', run: this.record.id, team: team.id, ticket: ticket.id, action: 'needs_human', count: ticket.count });
      return false;
    }
    const staffed = ticket.staffed + 1;
    this.setTicket({ ...ticket, staffed });
    const id = `${ticket.id}-FIX${staffed}`;
    const fix = newTask(
      {
        id,
        title: `Fix: \`${ticket.command}\` fails (${ticket.id})`,
        description: `The acceptance command of team '${team.id}' failed${ticket.count > 1 ? ` again (found ${ticket.count} times)` : ''}. Output tail:\n${ticket.output_tail}`,
        role: 'developer',
        squad: team.id,
        acceptance: ticket.acceptance,
        criteria: [{ text: ticket.acceptance, command: ticket.command }],
        priority: 0,
        files: ticket.files,
        dependencies: [],
      },
      ticket.id,
    );
    this.update({ tasks: [...this.record.tasks, fix] });
    this.deps.emit({ type: 'task_update', run: this.record.id, task: id, team: team.id, state: fix.state, note: `correction for ${ticket.id}` });
    return true;
  }

  private setTicket(ticket: Ticket): void {
    this.update({ tickets: this.record.tickets.map((t) => (t.id === ticket.id ? ticket : t)) });
  }

  /** Integration check: skipped when any team's final gate is RED. */
  private async integrate(): Promise<void> {
    const finals = this.finalGates();
    const red = finals.filter((g) => g.outcome === 'RED');
    if (red.length) {
      this.deps.emit({ type: 'integration', run: this.record.id, outcome: 'skipped', reason: `RED gate: ${red.map((g) => g.team).join(', ')}` });
      return;
    }
    const commands = this.deps.config.integration_command
      ? [this.deps.config.integration_command]
      : [...new Set(this.record.teams.filter((t) => this.record.tasks.some((x) => x.squad === t.id)).map((t) => t.acceptance).filter(Boolean))];
    if (!commands.length) {
      const result: GateResult = { team: '*', command: '', outcome: 'UNVERIFIED', exit_code: null, tests: null, reason: 'no integration command and no acceptance commands', output_tail: '', ms: 0 };
      this.update({ integration: result });
      this.deps.emit({ type: 'integration', run: this.record.id, outcome: result.outcome, reason: result.reason });
      return;
    }
    const result = await runGate('*', commands.join(' && '), this.workspace!.dir, this.deps.config.command_timeout_ms, this.signal);
    this.update({ integration: result });
    this.deps.emit({ type: 'integration', run: this.record.id, outcome: result.outcome, reason: result.reason });
    if (result.outcome === 'RED') {
      // Every team's half passed alone but not together: no single lane owns the defect, so the
      // ticket goes to a person instead of being staffed.
      const files = [...new Set(this.record.tasks.flatMap((t) => t.changed))];
      const { tickets, ticket, action } = raiseDefect(this.record.tickets, {
        team: 'integration',
        command: result.command,
        output: result.output_tail,
        files: implicatedFiles(result.output_tail, files),
        fingerprint: result.fingerprint,
      });
      this.update({ tickets: tickets.map((t) => (t.id === ticket.id ? { ...t, status: 'needs_human' as const } : t)) });
      this.deps.emit({ type: 'ticket', run: this.record.id, team: 'integration', ticket: ticket.id, action, count: ticket.count });
      this.deps.emit({ type: 'ticket', run: this.record.id, team: 'integration', ticket: ticket.id, action: 'needs_human', count: ticket.count });
    }
  }

  /** The last gate result of every gated team. */
  finalGates(): GateResult[] {
    const last = new Map<string, GateResult>();
    for (const g of this.record.gates) last.set(g.team, g);
    return [...last.values()];
  }

  /**
   * `needs_human` counts problems, not attempts: a ticket left unresolved is one problem however
   * many of its fix tasks gave up, and a stuck task without a ticket is one more.
   */
  private repairs(): RunRecord['repairs'] {
    const t = this.record.tickets;
    const problems = new Set<string>();
    for (const ticket of t) if (ticket.status !== 'resolved') problems.add(ticket.id);
    for (const task of this.record.tasks) if (task.needs_human && !this.superseded(task)) problems.add(task.ticket ?? task.id);
    return {
      found: t.length,
      resolved: t.filter((x) => x.status === 'resolved').length,
      restaffed: t.reduce((n, x) => n + Math.max(0, x.staffed - 1), 0),
      needs_human: problems.size,
    };
  }

  /** A fix task that gave up while a later fix resolved its ticket: nothing is left for a person. */
  private superseded(task: Task): boolean {
    return task.ticket !== null && this.record.tickets.some((t) => t.id === task.ticket && t.status === 'resolved');
  }

  private summarise(): string {
    const finals = this.finalGates();
    const by = (o: string) => finals.filter((g) => g.outcome === o).map((g) => g.team);
    const done = this.record.tasks.filter((t) => t.state === 'done').length;
    const parts = [
      `${done}/${this.record.tasks.length} tasks done`,
      `green: ${by('green').join(', ') || 'none'}`,
      `RED: ${by('RED').join(', ') || 'none'}`,
      `UNVERIFIED: ${by('UNVERIFIED').join(', ') || 'none'}`,
      `integration: ${this.record.integration?.outcome ?? 'skipped'}`,
    ];
    const cut = describeCut(this.record.plan_cut);
    if (cut) parts.push(cut);
    return parts.join('; ');
  }

  private async finish(): Promise<void> {
    const finals = this.finalGates();
    const ok =
      this.record.tasks.every((t) => t.state === 'done' || this.superseded(t)) &&
      !finals.some((g) => g.outcome === 'RED') &&
      this.record.integration?.outcome !== 'RED';
    await this.closeWorkspace();
    const summary = this.summarise();
    this.update({ status: ok ? 'succeeded' : 'failed', finished_at: new Date().toISOString(), repairs: this.repairs(), summary });
    this.deps.emit({ type: 'run_finished', run: this.record.id, status: this.record.status, summary });
  }

  private async fail(err: unknown): Promise<void> {
    const cancelled = this.signal.aborted;
    await this.closeWorkspace();
    const status = cancelled ? 'cancelled' : 'failed';
    const error = cancelled ? null : err instanceof Error ? err.message : String(err);
    const summary = cancelled ? `cancelled; ${this.summarise()}` : `failed: ${error}`;
    this.update({ status, finished_at: new Date().toISOString(), error, repairs: this.repairs(), summary });
    this.deps.emit({ type: 'run_finished', run: this.record.id, status, summary });
  }

  /** Uncommitted work is thrown away with the worktree; the run branch keeps whole commits only. */
  private async closeWorkspace(): Promise<void> {
    if (!this.workspace) return;
    await this.workspace.discard().catch(() => undefined);
    await this.workspace.close().catch(() => undefined);
  }

  private throwIfCancelled(): void {
    if (this.signal.aborted) throw new Error('cancelled');
  }
}

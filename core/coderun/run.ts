/**
 * One coding run from plan to report. Phases: plan (model) → approval gate (optional) → contract
 * frozen → waves of tasks (agent loops in workers, review ladder, commits) → one gate per team as
 * its lane finishes → correction tickets and their fixes → integration check → report.
 *
 * This class drives the phases and the work of each task; the review of a task is `review.ts`, the
 * gates, tickets and integration check are `gating.ts`, and the closing numbers are `report.ts`.
 *
 * Locking: a run is driven by one async flow; waves run tasks concurrently, and every mutation of
 * the record goes through `setTask` / `update`, which are synchronous, so no two tasks interleave
 * inside a mutation. Git commits are serialised by `RunWorkspace`.
 */

import { realpathSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AgentOutcome } from './agent-worker.js';
import { BoardError, type BoardLimits, blocked, newTask, nextWave, transition } from './board.js';
import type { FenceTeam } from './fence.js';
import { RunGating } from './gating.js';
import { RunWorkspace } from './git.js';
import type { ModelGate } from './model.js';
import { ownedBy } from './ownership.js';
import { approvalCard, planProblems, shapePlan } from './plan.js';
import { MALFORMED_RETRIES, planWithModel } from './planner.js';
import type { AgentPool } from './pool.js';
import { staffingOf } from './preselect.js';
import { repairsOf, succeeded, summaryOf } from './report.js';
import { reviewTask, type Verdict } from './review.js';
import type { CodeConfig, RunEvent, RunRecord, RunTask } from './schemas.js';
import type { Team } from './team-schema.js';
import { type CommandWrites, listRepository } from './tools.js';

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
  /** The worktree's folder and branch name (`hangar/run-<name>`); the run's id unless given (a retried attempt's). */
  workspaceName?: string;
  /** Said with the run's first status (why a run starts again: its earlier attempt's instance died). */
  startNote?: string;
}

export const CONTRACT_FILE = '.hangar/contract.json';

export class CodeRun {
  readonly record: RunRecord;
  private readonly controller = new AbortController();
  private workspace: RunWorkspace | undefined;
  private approval: { resolve: () => void; reject: (e: Error) => void } | undefined;
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
  private readonly limits: BoardLimits;
  private readonly gating: RunGating;

  constructor(
    record: RunRecord,
    private readonly deps: RunDeps,
  ) {
    this.record = record;
    this.limits = { reviewRounds: deps.config.review_rounds, attemptCeiling: deps.config.attempt_ceiling };
    this.gating = new RunGating({
      record,
      config: deps.config,
      signal: this.controller.signal,
      dir: () => this.workspace!.dir,
      update: (patch) => this.update(patch),
      emit: (event) => deps.emit(event),
      throwIfCancelled: () => this.throwIfCancelled(),
    });
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

  private task(id: string): RunTask {
    const t = this.record.tasks.find((x) => x.id === id);
    if (!t) throw new BoardError(`no task ${id}`);
    return t;
  }

  /**
   * Store a task and announce it with one `task_update` per state change. Changes within a state
   * (files written, the commit sha, an escalation) are stored silently; a note said meanwhile
   * (an escalation) travels with the next state change.
   */
  private setTask(next: RunTask, note?: string): RunTask {
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
    this.deps.emit({
      type: 'task_update',
      run: this.record.id,
      task: next.id,
      team: next.squad,
      state: next.state,
      ...(text ? { note: text } : {}),
    });
    return next;
  }

  private move(id: string, action: Parameters<typeof transition>[1], note?: string): RunTask {
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
    this.setStatus('planning', this.deps.startNote);
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
    this.workspace = await RunWorkspace.open(this.record.repo, this.record.id, this.deps.worktrees, this.deps.workspaceName);
    this.update({ branch: this.workspace.branch, base: this.workspace.base, tasks: plan.tasks.map((t) => newTask(t)) });
    await this.freezeContract();

    for (;;) {
      await this.runWaves();
      const pending = await this.gating.gateFinishedLanes();
      if (!pending) break;
    }
    await this.gating.integrate();
    await this.finish();
  }

  /** Contract clauses are written and committed before any task starts; agents see them read-only. */
  private async freezeContract(): Promise<void> {
    const ws = this.workspace!;
    const clauses = this.record.plan!.contract;
    if (!clauses.length) return;
    const file = path.join(ws.dir, CONTRACT_FILE);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(
      file,
      JSON.stringify({ run: this.record.id, request: this.record.request, frozen_at: new Date().toISOString(), clauses }, null, 2) + '\n',
    );
    await ws.commit([CONTRACT_FILE], `contract: freeze ${clauses.length} clause(s) [hangar ${this.record.id}]`);
    this.update({ contract_file: CONTRACT_FILE });
    for (const c of clauses)
      this.deps.emit({
        type: 'contract_frozen',
        run: this.record.id,
        name: c.name,
        provider: c.provider,
        consumers: c.consumers,
        file: CONTRACT_FILE,
      });
  }

  private async runWaves(): Promise<void> {
    let wave = 0;
    const width = this.deps.config.squads ? Math.max(1, this.deps.config.max_parallel) : 1;
    for (;;) {
      this.throwIfCancelled();
      const tasks = nextWave(this.record.tasks, width);
      if (!tasks.length) break;
      wave++;
      this.deps.emit({
        type: 'wave',
        run: this.record.id,
        wave,
        tasks: tasks.map((t) => t.id),
        teams: [...new Set(tasks.map((t) => t.squad ?? 'unowned'))],
      });
      // allSettled, not all: on cancellation or a failure every task of the wave is first
      // brought to rest, so nothing commits into a worktree that is being removed.
      const settled = await Promise.allSettled(tasks.map((t) => this.work(t.id)));
      this.throwIfCancelled();
      const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      // Gate each lane as soon as it finishes, between waves (nothing else writes meanwhile);
      // fix tasks it queues join the next waves.
      await this.gating.gateFinishedLanes();
    }
    for (const t of blocked(this.record.tasks)) {
      this.move(t.id, { type: 'give_up', reason: `a dependency cannot finish (${t.dependencies.join(', ')})` });
    }
  }

  private fenceOf(task: RunTask): { team: FenceTeam; teams: FenceTeam[] } {
    const inRun = this.record.teams.map((t) => ({ id: t.id, owns: t.owns }));
    const teams = [...inRun, ...this.deps.libraryTeams.filter((l) => !inRun.some((t) => t.id === l.id))];
    const team = inRun.find((t) => t.id === task.squad);
    return { team: team ?? { id: 'unowned', owns: [], unowned: true }, teams };
  }

  private teamOf(task: RunTask): Team | undefined {
    return this.record.teams.find((t) => t.id === task.squad);
  }

  /** A corrector of the task's team whose languages cover the task's files (or any language). */
  private correctorFor(task: RunTask): string | null {
    const team = this.teamOf(task);
    const exts = new Set(task.files.map((f) => path.extname(f).slice(1)).filter(Boolean));
    const fit = team?.agents.find(
      (a) => a.role === 'corrector' && (a.languages.length === 0 || [...exts].every((e) => a.languages.includes(e))),
    );
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
          this.setTask(
            { ...this.task(id), escalation: task.escalation + 1 },
            `escalated to ${this.deps.gate.modelFor({ role: task.role, rung: task.escalation + 1 })} after ${outcome.status === 'malformed' ? 'malformed tool calls' : 'running out of steps'}`,
          );
        }
        if (outcome.status === 'malformed' && task.escalation >= this.deps.gate.ladderLength) {
          await this.workspace!.discard(this.task(id).changed);
          this.move(id, {
            type: 'give_up',
            reason: `model kept sending malformed tool calls and no bigger model is left: ${outcome.error}`,
          });
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
        const sha = await this.workspace!.commit(
          done.changed,
          `${done.id}: ${done.title} [hangar ${this.record.id}, team ${done.squad ?? 'none'}]`,
        );
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
  private async revertStrays(task: RunTask): Promise<void> {
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
      this.deps.emit({
        type: 'fence_violation',
        run: this.record.id,
        task: task.id,
        team: task.squad,
        owner: s.owner,
        file: s.file,
        command: null,
      });
    }
  }

  /**
   * A command of `task` changed paths of other teams. Every such change is reverted and reported,
   * whether or not the owning team is working — except a file another in-flight task wrote through
   * its own fence since the command started (its legitimate work in the same window). Accepted
   * edge: if the command also wrote that very file, the owner's task keeps the command's bytes; its
   * own review and gate are what judge them.
   */
  private judgeCommandWrites(task: RunTask, writes: CommandWrites): string[] {
    const revert: string[] = [];
    for (const change of writes.changes) {
      const fenced = this.fencedWrites.get(change.path);
      if (fenced && fenced.task !== task.id && fenced.at >= writes.started && this.working.has(fenced.task)) continue;
      revert.push(change.path);
      this.deps.emit({
        type: 'fence_violation',
        run: this.record.id,
        task: task.id,
        team: task.squad,
        owner: change.owner,
        file: change.path,
        command: writes.command,
      });
    }
    return revert;
  }

  private async runAgent(task: RunTask): Promise<AgentOutcome> {
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
          task: {
            id: task.id,
            title: task.title,
            description: task.description,
            files: task.files,
            acceptance: task.acceptance,
            criteria: task.criteria,
            findings: task.findings,
          },
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
      return {
        status: 'model_error',
        summary: '',
        written: [],
        steps: 0,
        refused_writes: 0,
        error: `worker failed: ${(err as Error).message}`,
      };
    }
  }

  /** Announce the review, then let the team's tester and reviewer seats judge the change (review.ts). */
  private async review(task: RunTask, outcome: AgentOutcome): Promise<Verdict> {
    const team = this.teamOf(task);
    const reviewer = team ? staffingOf(team).reviewer : 'reviewer';
    this.deps.emit({ type: 'review_pending', run: this.record.id, task: task.id, team: task.squad, reviewer });
    return reviewTask(task, outcome, {
      reviewer,
      dir: this.workspace!.dir,
      gate: this.deps.gate,
      commandTimeoutMs: this.deps.config.command_timeout_ms,
      signal: this.signal,
    });
  }

  private async finish(): Promise<void> {
    const ok = succeeded(this.record);
    await this.closeWorkspace();
    const summary = summaryOf(this.record);
    this.update({ status: ok ? 'succeeded' : 'failed', finished_at: new Date().toISOString(), repairs: repairsOf(this.record), summary });
    this.deps.emit({ type: 'run_finished', run: this.record.id, status: this.record.status, summary });
  }

  private async fail(err: unknown): Promise<void> {
    const cancelled = this.signal.aborted;
    await this.closeWorkspace();
    const status = cancelled ? 'cancelled' : 'failed';
    const error = cancelled ? null : err instanceof Error ? err.message : String(err);
    const summary = cancelled ? `cancelled; ${summaryOf(this.record)}` : `failed: ${error}`;
    this.update({ status, finished_at: new Date().toISOString(), error, repairs: repairsOf(this.record), summary });
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

/**
 * The coding-run service: the team library, preselection and composition, runs (start, approve,
 * edit, cancel, retry), their event logs, configuration and calibration. No HTTP here; routes call
 * these methods and refusals are catalogue errors (`fail`) naming the cause.
 *
 * The run itself is `run.ts`, its events `run-events.ts`, the configuration and which repositories
 * may be named `config.ts`, the team files `teams.ts`, start-up recovery `recovery.ts`, and team
 * mode's requests between instances `team-mode.ts`.
 *
 * Over 600 lines on purpose: every action on a run (start, take, approve, edit, cancel, retry)
 * goes one way when the run is live here and another when it runs on another instance, and both
 * read the same live-run map and saving chain; split by instance, each half would need the
 * other's state passed in.
 *
 * Decisions where the spec is silent:
 * - Configuration: layered file + stored overlay, some keys read-only over HTTP (see `config.ts`).
 * - A run works in a git worktree under the workspace state folder on branch `hangar/run-<id>`.
 * - One active run per repository (a second is refused with 409, naming the running one); runs
 *   on different repositories may run at once, each with its own `max_parallel` bound.
 * - Teams routes act on `?repo=` (or body `repo`), else `code.repo`, else the workspace root.
 *
 * Team mode (several instances on one PostgreSQL, `team` given). A run is a job on the team's queue
 * (core/storage/team.ts, pg-boss), as tasks and notebook slots are:
 * - Start (`POST /api/runs`, any instance) stores the record (`status: planning`, `attempts: 0`,
 *   its `require_approval`) and sends one job whose id is derived from the run's, so a run never
 *   gets two. The answer is that record. One active run per repository holds team-wide: the store
 *   is read for active runs of the repository (a run waiting in the queue counts). A send that
 *   fails leaves the run failed, saying why, and the request fails.
 * - Whichever instance takes the job (`take`; each serves the queue with a bounded concurrency, a
 *   run at the approval gate holding its slot) runs the run as one machine does: its gate, budgets,
 *   agent pool, git worktree on that machine's checkout and approval gate are that process's. It
 *   holds the run's team lock while it runs (how the others know it is alive) and the job until the
 *   run settles; the job's heartbeat tells the queue the instance lives.
 * - An instance killed mid-run stops the heartbeat; after `team.heartbeatSeconds` the queue hands
 *   the job to another instance, which runs the run again from the start (decision: a run's state
 *   is a worktree on the dead machine, which no other machine can reach): `attempts: 2`, the plan,
 *   board and gates reset, a fresh branch and worktree (`hangar/run-<id>-attempt-2`) on its own
 *   checkout, its first `run_status` saying why (with the earlier attempt's branch, which stays in
 *   the dead machine's checkout until someone deletes it; its worktree folder stays in that
 *   instance's state folder). The earlier attempt's events stay in the run's log. A second death
 *   ends the run `failed` (the queue's dead letter, or a third take, fails it).
 * - Cancel, approve, plan edit, task change and retry work from any instance. A run no instance
 *   runs (waiting in the queue, or for its next attempt) is cancelled under its lock by the
 *   instance asked; the other requests answer 409 `not running` for it. For a run running
 *   elsewhere, cancel is announced and the answer waits (up to 10 s) for the stored record to show
 *   it; the other requests are stored (`coderun_requests`) and announced (ids only), the running
 *   instance applies each as a local request and stores its answer — or its refusal's status, code
 *   and detail, which the instance asked answers with (the same 409/422) — and the answer waits up
 *   to 10 s for it (then 409 `not running`, the request withdrawn).
 * - Its record and events (the store): `/api/runs/{id}/events` on another instance follows the run
 *   through the store as its instance announces each stored event, to `run_finished`; the plan card
 *   answers from the stored record.
 * - An instance starting up marks failed only the runs no live instance holds and no queue job
 *   still names (a run stored a moment ago may be between its two writes and is left alone). A run
 *   stored and never sent (its instance died between the writes) is sent again a minute later by
 *   a sweep one instance at a time runs every heartbeat (recovery.ts, `sendLostRuns`).
 * The UI's websocket carries this instance's runs.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatIssues } from '../http/validate.js';
import { fail, HangarError } from '../kernel/errors.js';
import type { Logger } from '../kernel/log.js';
import type { Collection, Store } from '../kernel/store.js';
import type { EventLog } from '../lib/event-log.js';
import { BoardError, transition } from './board.js';
import { type Calibration, calibrate } from './calibration.js';
import { CodeRunConfig } from './config.js';
import { type EndpointSettings, ModelError, ModelGate } from './model.js';
import { applyPlanEdit, approvalCard, assertStaffable, checkSquad, planProblems, refreshCut } from './plan.js';
import { AgentPool } from './pool.js';
import { type Composition, compose, effectiveManager, type PreselectReport, preselect } from './preselect.js';
import { ACTIVE, RUNS_COLLECTION, RUNS_OPTIONS } from './recovery.js';
import { CodeRun } from './run.js';
import { classify, RunEventLogs, teamsOfEvent } from './run-events.js';
import { type CodeConfig, type RunEvent, type RunRecord, TaskPatch } from './schemas.js';
import {
  CANCEL_ELSEWHERE_MS,
  type CodeRunTeam,
  MAX_ATTEMPTS,
  type RunRequest,
  RunRequests,
  restarted,
  runOfRequest,
  unstarted,
} from './team-mode.js';
import type { Team } from './team-schema.js';
import { DEFAULT_MANAGER, TeamLibrary } from './teams.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A cancelled run as `read` finds it once it has ended, or as it is after CANCEL_ELSEWHERE_MS (read every 50 ms). */
async function untilEnded(read: () => RunRecord | Promise<RunRecord>): Promise<RunRecord> {
  const deadline = Date.now() + CANCEL_ELSEWHERE_MS;
  for (;;) {
    const latest = await read();
    if (!ACTIVE.includes(latest.status) || Date.now() > deadline) return latest;
    await sleep(50);
  }
}

export interface CodeRunServiceOptions {
  store: Store;
  log: Logger;
  /** The workspace root: default repository, and home of the state folder. */
  root: string;
  state: string;
  endpoint: EndpointSettings;
  /** The file layer of the configuration (settings `code`). */
  fileConfig: unknown;
  shippedTeams: () => Team[];
  /** Team mode: see the header. */
  team?: CodeRunTeam;
}

function holdsTask(record: RunRecord, taskId: string): boolean {
  return record.tasks.some((t) => t.id === taskId) || (record.plan?.tasks.some((t) => t.id === taskId) ?? false);
}

/**
 * What a person can do about a task of a finished run, which is never resumed: start a new run
 * (from the repository's HEAD, so the old run's branch is merged first if the new one builds on it).
 */
function finishedRunError(taskId: string, record: RunRecord, action: 'retry' | 'change'): HangarError {
  const task = record.tasks.find((t) => t.id === taskId) ?? record.plan?.tasks.find((t) => t.id === taskId);
  const request = JSON.stringify(task?.title ?? record.request);
  return fail('HANGAR_CODERUN_TASK_RUN_FINISHED', {
    task: taskId,
    run: record.id,
    status: record.status,
    done: action === 'retry' ? 'retried' : 'changed',
    body: `{"request": ${request}, "repo": ${JSON.stringify(record.repo)}}`,
    request,
    repo: record.repo,
    branch: record.branch ?? `hangar/run-${record.id}`,
  });
}

/** The plan-approval card of a run's record (`GET /api/runs/{id}/plan`). */
function planCard(id: string, record: RunRecord | undefined) {
  const plan = record?.plan;
  if (!record || !plan) throw fail('HANGAR_CODERUN_PLAN_NOT_READY', { run: id });
  return {
    status: record.status,
    teams: record.teams,
    contract: plan.contract,
    ...approvalCard(plan),
    plan_cut: record.plan_cut ?? null,
    problems: record.plan_problems ?? [],
  };
}

export class CodeRunService {
  readonly library: TeamLibrary;
  private readonly runs: Collection<RunRecord>;
  private readonly events: RunEventLogs;
  private readonly configuration: CodeRunConfig;
  private readonly live = new Map<string, CodeRun>();
  private readonly saving = new Map<string, Promise<unknown>>();
  /** One agent pool per active run (see AgentPool for why not one per server). */
  private readonly pools = new Set<AgentPool>();
  private nextRunPins: string[] = [];
  private lastCalibration: Calibration | undefined;
  /** Team mode: logs of runs on other instances that a reader here follows, by run. */
  private readonly followed = new Map<string, Promise<{ log: EventLog<RunEvent>; more: () => Promise<void> }>>();
  private readonly unsubscribe: Array<() => void> = [];
  /** Team mode: requests for runs on other instances, and their answers (see `RunRequest`). */
  /** Team mode: requests for runs of other instances, and theirs for runs here. */
  private readonly requestsElsewhere?: RunRequests;
  private closing = false;
  /** Team mode: runs this instance took and is starting, and whether a cancel came meanwhile. */
  private readonly starting = new Map<string, boolean>();

  constructor(private readonly options: CodeRunServiceOptions) {
    this.library = new TeamLibrary(options.shippedTeams);
    this.runs = options.store.collection<RunRecord>(RUNS_COLLECTION, RUNS_OPTIONS);
    const team = options.team;
    if (team) this.requestsElsewhere = new RunRequests(options.store, team, options.log);
    this.events = new RunEventLogs(options.store, options.log, team && ((run) => team.announce('coderun-event', run)));
    this.configuration = new CodeRunConfig(options.store, options.fileConfig, options.root);
    if (team) {
      this.unsubscribe.push(
        team.on('coderun-cancel', (run) => {
          const live = this.live.get(run);
          if (live?.active) live.cancel();
          // Taken here and not started yet: cancelled as soon as it starts.
          else if (this.starting.has(run)) this.starting.set(run, true);
        }),
        team.on('coderun-event', (run) => void this.followed.get(run)?.then((f) => f.more())),
        team.on('coderun-request', (key) => void this.answerRequest(key)),
      );
    }
  }

  // ---- configuration ---------------------------------------------------------------------------

  config(): Promise<CodeConfig> {
    return this.configuration.current();
  }

  /** Patch the configuration over HTTP; read-only keys are refused, naming the key. */
  patchConfig(patch: unknown): Promise<CodeConfig> {
    return this.configuration.patch(patch);
  }

  /** The repository a request names, if it may be named (see `CodeRunConfig.repoOf`). */
  repoOf(requested?: string): Promise<string> {
    return this.configuration.repoOf(requested);
  }

  // ---- teams -----------------------------------------------------------------------------------

  /** The teams list with the spec's extras. */
  async listTeams(repo: string) {
    const config = await this.config();
    const teams = await this.library.list(repo);
    const running = [...this.live.values()].filter((r) => r.active).map((r) => r.record.id);
    return {
      default_manager: DEFAULT_MANAGER,
      dynamic_enabled: !config.team_library,
      running: running.length > 0,
      running_runs: running,
      repo,
      teams: teams.map(({ team, source }) => ({
        ...team,
        source,
        effective_manager: effectiveManager(team),
        manager_default: team.manager === null,
      })),
    };
  }

  async preselect(request: string, repo: string, pins: string[] = []): Promise<PreselectReport> {
    const config = await this.config();
    return preselect(await this.library.teams(repo), request, config, pins.length ? pins : this.nextRunPins);
  }

  async composition(request: string, repo: string, pins: string[] = []): Promise<Composition> {
    const teams = await this.library.teams(repo);
    return compose(teams, await this.preselect(request, repo, pins));
  }

  /** Write the org chart into the repository and pin its teams for the next run. */
  async activate(repo: string, ids: string[]): Promise<{ org_chart: string; pinned: string[] }> {
    const teams = await this.library.teams(repo);
    const unknown = ids.filter((id) => !teams.some((t) => t.id === id));
    if (unknown.length) throw fail('HANGAR_CODERUN_TEAMS_UNKNOWN', { teams: unknown.map((u) => `'${u}'`).join(', ') });
    const chart = teams
      .filter((t) => ids.includes(t.id))
      .map((t) => ({ id: t.id, charter: t.charter, owns: t.owns, manager: effectiveManager(t), agents: t.agents }));
    const file = path.join(repo, '.hangar', 'org-chart.json');
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, JSON.stringify({ activated_at: new Date().toISOString(), teams: chart }, null, 2) + '\n');
    this.nextRunPins = [...ids];
    return { org_chart: path.relative(repo, file), pinned: ids };
  }

  /** Create a manager agent on the team's roster and point the team at it. */
  async createManager(repo: string, id: string, name?: string) {
    const { team } = await this.library.get(repo, id);
    const manager = name ?? `${id}-manager`;
    const agents = team.agents.some((a) => a.name === manager)
      ? team.agents
      : [...team.agents, { name: manager, role: 'manager', languages: [] }];
    return this.library.update(repo, id, { agents, manager });
  }

  // ---- runs ------------------------------------------------------------------------------------

  private emit(event: RunEvent): void {
    if (!this.events.record(event)) return;
    if (event.type === 'run_finished') this.evictFinished();
  }

  /**
   * Keep the newest finished runs in memory (their logs serve replays without a store read);
   * older ones are served from the store, so memory stays bounded however many runs a server sees.
   */
  private evictFinished(keep = 20): void {
    const finished = [...this.live.values()].filter((r) => !r.active);
    for (const run of finished.slice(0, Math.max(0, finished.length - keep))) {
      const id = run.record.id;
      // Only once its last write is on disk, so a read in between never misses the record.
      void (this.saving.get(id) ?? Promise.resolve()).then(() => {
        this.live.delete(id);
        this.events.forget(id);
        this.saving.delete(id);
      });
    }
  }

  /** Follow every run's events (the UI's websocket). */
  onEvent(listener: (event: RunEvent) => void): () => void {
    return this.events.subscribe(listener);
  }

  private save(record: RunRecord): void {
    // Writes of one run are chained so they land in order; the snapshot is taken now.
    const snapshot = structuredClone(record);
    const prev = this.saving.get(record.id) ?? Promise.resolve();
    const next = prev
      .then(() => this.runs.put(record.id, snapshot))
      .catch((err: unknown) => this.options.log.error('coding-run record not stored', { error: String(err) }));
    this.saving.set(record.id, next);
  }

  private async budgetFor(role: string, config: CodeConfig): Promise<number> {
    if (config.context_role_budget[role]) return config.context_role_budget[role]!;
    if (config.calibrate_budgets) {
      const window = (this.lastCalibration ?? (await this.calibrate().catch(() => undefined)))?.context_window;
      // Half the window for the conversation leaves room for the answer and tool schemas.
      if (window) return Math.floor(window * 0.5);
    }
    return config.context_budget_tokens;
  }

  async startRun(input: { request: string; repo?: string; teams?: string[]; require_approval?: boolean }): Promise<RunRecord> {
    const config = await this.config();
    if (!this.options.endpoint.baseUrl) {
      throw fail('HANGAR_CODERUN_MODEL_NOT_CONFIGURED', {});
    }
    const repo = await this.repoOf(input.repo);
    for (const other of this.live.values()) {
      if (other.active && other.record.repo === repo) throw fail('HANGAR_CODERUN_REPO_BUSY', { run: other.record.id, repo });
    }
    const team = this.options.team;
    if (team) {
      // Team-wide: a run of this repository waiting in the queue or running on any instance.
      const { items } = await this.runs.query({ where: { status: [...ACTIVE] } });
      const busy = items.find((r) => r.repo === repo);
      if (busy) throw fail('HANGAR_CODERUN_REPO_BUSY', { run: busy.id, repo });
    }
    const pins = input.teams?.length ? input.teams : this.nextRunPins;
    const library = await this.library.teams(repo);
    const report = preselect(library, input.request, config, pins);
    this.nextRunPins = [];
    const id = `${new Date().toISOString().slice(0, 10).replace(/-/g, '')}-${randomUUID().slice(0, 8)}`;
    const record: RunRecord = {
      id,
      request: input.request,
      repo,
      created_at: new Date().toISOString(),
      // Every pin that chose this run's teams (the run's own, activated or configured): a pinned
      // team the plan size cap leaves without work is a problem to solve before approval.
      pins: report.mode === 'pinned' ? report.teams.map((t) => t.id) : [],
      teams: library.filter((t) => report.teams.some((s) => s.id === t.id)),
      ...unstarted(),
    };
    const requireApproval = input.require_approval ?? config.require_approval;
    if (team) return this.submit(team, record, requireApproval);
    await this.launch(record, { config, library, requireApproval });
    return structuredClone(record);
  }

  /**
   * Team mode: store the run (`attempts: 0`) and send its job; whichever instance takes it runs it
   * (`take`). A send that fails leaves the run failed, saying why, and the request fails with it.
   */
  private async submit(team: CodeRunTeam, record: RunRecord, requireApproval: boolean): Promise<RunRecord> {
    const queued: RunRecord = { ...record, attempts: 0, require_approval: requireApproval };
    await this.runs.put(queued.id, queued);
    try {
      await team.dispatch(queued.id);
    } catch (err) {
      const error = `not sent to the team's queue: ${err instanceof Error ? err.message : String(err)}`;
      await this.runs
        .put(queued.id, { ...queued, status: 'failed', finished_at: new Date().toISOString(), error, summary: `failed: ${error}` })
        .catch(() => undefined);
      throw err;
    }
    return structuredClone(queued);
  }

  /**
   * Run a run here: its model gate, budgets, agent pool and the CodeRun itself. Answers once the run
   * started, with a promise of its end (its final record stored, its pool closed, `alive` released).
   */
  private async launch(
    record: RunRecord,
    options: {
      config: CodeConfig;
      library: Team[];
      requireApproval: boolean;
      /** Team mode: the run's liveness lock, released once its final record is stored. */
      alive?: { release(): Promise<void> };
      workspaceName?: string;
      startNote?: string;
    },
  ): Promise<{ done: Promise<void> }> {
    const { config, alive } = options;
    const id = record.id;
    const gate = new ModelGate(this.options.endpoint, {
      maxParallel: config.max_parallel,
      modelRoles: config.model_roles,
      escalation: config.model_escalation,
    });
    const budgets = new Map<string, number>();
    for (const role of ['developer', 'corrector', 'reviewer', 'tester', ...record.teams.flatMap((t) => t.agents.map((a) => a.role))]) {
      budgets.set(role, await this.budgetFor(role, config));
    }
    // Sized by this run's max_parallel, which is also its wave width: one loop per task of a wave.
    const pool = new AgentPool(config.max_parallel);
    this.pools.add(pool);
    const run = new CodeRun(record, {
      config,
      gate,
      pool,
      worktrees: path.join(this.options.state, 'worktrees'),
      emit: (e) => this.emit(e),
      save: (r) => this.save(r),
      budgetFor: (role) => budgets.get(role) ?? config.context_budget_tokens,
      libraryTeams: options.library.map((t) => ({ id: t.id, owns: t.owns })),
      ...(options.workspaceName ? { workspaceName: options.workspaceName } : {}),
      ...(options.startNote ? { startNote: options.startNote } : {}),
    });
    this.live.set(id, run);
    this.events.open(id);
    this.save(record);
    const done = run
      .start(options.requireApproval)
      .catch((err: unknown) => this.options.log.error('coding run crashed', { run: id, error: String(err) }))
      .finally(() => {
        // Released once the final record is stored, so an instance starting meanwhile never marks it failed.
        void (this.saving.get(id) ?? Promise.resolve()).then(() => alive?.release());
        this.pools.delete(pool);
        return pool
          .close()
          .catch((err: unknown) => this.options.log.warn('coding-run agent pool did not close cleanly', { run: id, error: String(err) }));
      });
    // In an object: an async function returning the promise itself would resolve only when the run ends.
    return { done };
  }

  /**
   * Team mode, the queue's handler: run a dispatched run here, from the start, and resolve once it
   * settled (the job is done then). Attempt 1 is the first instance to take it; a job taken again
   * after its instance died (the queue retries it once) is attempt 2, on a fresh branch and worktree
   * of this machine; past `MAX_ATTEMPTS` the run ends failed. Nothing to do for a run that settled
   * meanwhile (cancelled while it waited). A run another instance still holds (a job expired while
   * its run lives on) is waited for: its lock frees when it ends or its instance dies.
   */
  async take(id: string): Promise<void> {
    const team = this.options.team;
    if (!team) return;
    if (this.closing) throw new Error('Hangar is stopping');
    const lock = await this.holdWhenFree(team, id);
    if (!lock) return;
    let done: Promise<void> | undefined;
    this.starting.set(id, false);
    try {
      const stored = await this.runs.get(id);
      if (!stored || !ACTIVE.includes(stored.status)) return;
      const attempt = (stored.attempts ?? 0) + 1;
      if (attempt > MAX_ATTEMPTS) return void (await this.abandonHeld(stored));
      const config = await this.config();
      const library = await this.library.teams(stored.repo);
      const record = attempt === 1 ? { ...stored, attempts: 1 } : restarted(stored, attempt);
      const earlier = stored.branch
        ? `; attempt ${attempt - 1}'s branch ${stored.branch} stays in the checkout of the machine that ran it`
        : '';
      // Earlier attempts' events stay in the run's log: a replay here is the whole run.
      await this.events.resume(id);
      ({ done } = await this.launch(record, {
        config,
        library,
        requireApproval: stored.require_approval ?? config.require_approval,
        alive: lock,
        ...(attempt > 1
          ? {
              workspaceName: `${id}-attempt-${attempt}`,
              startNote: `attempt ${attempt}: the instance running attempt ${attempt - 1} stopped; started again from the start here${earlier}`,
            }
          : {}),
      }));
      if (this.starting.get(id)) this.live.get(id)?.cancel();
      if (attempt > 1) this.options.log.warn('running a coding run again: the instance that ran it stopped', { run: id, attempt });
    } finally {
      this.starting.delete(id);
      if (!done) await lock.release();
    }
    await done;
  }

  /** The run's lock, once no other instance holds it; undefined when the run settled meanwhile. */
  private async holdWhenFree(team: CodeRunTeam, id: string): Promise<{ release(): Promise<void> } | undefined> {
    for (;;) {
      const lock = await team.hold(id);
      if (lock) return lock;
      const record = await this.runs.get(id);
      if (!record || !ACTIVE.includes(record.status)) return undefined;
      if (this.closing) throw new Error('Hangar is stopping');
      await sleep(1000);
    }
  }

  /** Team mode, the dead-letter handler: a run whose every attempt's instance died ends failed. */
  async abandon(id: string): Promise<void> {
    const team = this.options.team;
    const lock = await team?.hold(id);
    // Held: some instance runs it after all.
    if (!lock) return;
    try {
      const record = await this.runs.get(id);
      if (record && ACTIVE.includes(record.status)) await this.abandonHeld(record);
    } finally {
      await lock.release();
    }
  }

  private async abandonHeld(record: RunRecord): Promise<void> {
    const error = `interrupted: the instance running it stopped (attempt ${record.attempts ?? 1}); not retried again`;
    await this.settleHeld(record, 'failed', error, `failed: ${error}; branch ${record.branch ?? '(none)'} is on the machine that ran it`);
    this.options.log.warn('a coding run was abandoned by every instance that took it', { run: record.id });
  }

  /** Team mode: end a run no instance runs (its lock held here), with its `run_finished` stored for followers. */
  private async settleHeld(record: RunRecord, status: 'failed' | 'cancelled', error: string | null, summary: string): Promise<RunRecord> {
    const settled: RunRecord = { ...record, status, finished_at: new Date().toISOString(), error, summary };
    await this.runs.put(record.id, settled);
    await this.events.storeOnly({ type: 'run_finished', run: record.id, status, summary });
    return settled;
  }

  async get(id: string): Promise<RunRecord> {
    const live = this.live.get(id);
    if (live) return structuredClone(live.record);
    const stored = await this.runs.get(id);
    if (!stored) throw fail('HANGAR_CODERUN_RUN_NOT_FOUND', { run: id });
    return stored;
  }

  /**
   * Newest first; a run of this process answers with its live record (its store write may still
   * be on its way). Reads the first `offset + limit` stored runs from the index, not the collection.
   */
  async list(page: { limit?: number; offset?: number } = {}): Promise<RunRecord[]> {
    const offset = page.offset ?? 0;
    const end = page.limit === undefined ? undefined : offset + page.limit;
    const { items } = await this.runs.query({ orderBy: [{ field: 'created_at', desc: true }], limit: end });
    const runs = new Map(items.map((r) => [r.id, r]));
    for (const [id, run] of this.live) runs.set(id, structuredClone(run.record));
    return [...runs.values()].sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id)).slice(offset, end);
  }

  async latest(): Promise<RunRecord> {
    const [first] = await this.list({ limit: 1 });
    if (!first) throw fail('HANGAR_CODERUN_NO_RUNS', {});
    return first;
  }

  /** Events of a run: the live log, or a log rebuilt from the store for a past run. */
  async eventSource(id: string): Promise<EventLog<RunEvent>> {
    const existing = this.events.liveLog(id);
    if (existing) return existing;
    const record = await this.get(id);
    if (this.options.team && ACTIVE.includes(record.status)) return this.follow(id);
    return this.events.fromStore(id);
  }

  /** Team mode: a run on another instance, followed through the store until it finishes (one log per run here). */
  private async follow(id: string): Promise<EventLog<RunEvent>> {
    let following = this.followed.get(id);
    if (!following) {
      following = this.events.following(id);
      this.followed.set(id, following);
      void following.then(
        ({ log, more }) => {
          log.subscribe(
            () => {},
            () => this.followed.delete(id),
          );
          // An event stored between the record's read and the subscription: read once more.
          void more().then(() => this.endIfSettled(id, log, more));
        },
        () => this.followed.delete(id),
      );
    }
    return (await following).log;
  }

  /** A followed run whose instance died never sends `run_finished`: its stored record says it ended. */
  private async endIfSettled(id: string, log: EventLog<RunEvent>, more: () => Promise<void>): Promise<void> {
    const record = await this.runs.get(id).catch(() => undefined);
    if (log.ended || (record && ACTIVE.includes(record.status))) return;
    await more();
    if (!log.ended) log.end();
  }

  async activity(filter: { team?: string; run?: string }) {
    const runId = filter.run ?? (await this.latest().catch(() => undefined))?.id;
    if (!runId) return { run: null, events: [] };
    await this.get(runId);
    const log = await this.eventSource(runId);
    const events = log
      .all()
      .filter((e) => !filter.team || teamsOfEvent(e.data).includes(filter.team))
      .map((e) => ({ seq: e.seq, kind: classify(e.data), teams: teamsOfEvent(e.data), event: e.data }));
    return { run: runId, events };
  }

  private liveRun(id: string): CodeRun {
    const run = this.live.get(id);
    if (!run?.active) throw fail('HANGAR_CODERUN_RUN_NOT_RUNNING', { run: id });
    return run;
  }

  /** The plan-approval card; in team mode a run of another instance answers from its stored record. */
  async plan(id: string) {
    const live = this.live.get(id)?.record;
    const record = live ?? (this.options.team ? await this.runs.get(id) : undefined);
    return planCard(id, record);
  }

  /** Rule 3: edit the proposed plan at the approval gate; a refused edit changes nothing. */
  async editPlan(id: string, edit: unknown) {
    const team = this.options.team;
    if (team && !this.live.get(id)?.active) {
      return (await this.askElsewhere(team, id, { action: 'edit_plan', body: edit })) as ReturnType<typeof planCard>;
    }
    return this.editPlanHere(id, edit);
  }

  private editPlanHere(id: string, edit: unknown) {
    const run = this.liveRun(id);
    if (run.record.status !== 'awaiting_approval') throw fail('HANGAR_CODERUN_PLAN_NOT_EDITABLE', { run: id, status: run.record.status });
    const next = applyPlanEdit(run.record.plan!, run.record.teams, edit);
    run.record.plan = next.plan;
    run.record.teams = next.teams;
    // A dropped task added back, or the pinned team removed, clears what the cap left unsolved.
    if (run.record.plan_cut) run.record.plan_cut = refreshCut(run.record.plan_cut, next.plan);
    run.record.plan_problems = planProblems(run.record.plan_cut, next.plan, next.teams, run.record.pins);
    this.save(run.record);
    this.emit({ type: 'plan_edited', run: id });
    for (const d of next.dropped) this.emit({ type: 'dependency_dropped', run: id, ...d });
    return planCard(id, run.record);
  }

  async approve(id: string): Promise<RunRecord> {
    const team = this.options.team;
    if (team && !this.live.get(id)?.active) return (await this.askElsewhere(team, id, { action: 'approve' })) as RunRecord;
    return this.approveHere(id);
  }

  private approveHere(id: string): RunRecord {
    const run = this.liveRun(id);
    if (run.record.status !== 'awaiting_approval')
      throw fail('HANGAR_CODERUN_NOT_AWAITING_APPROVAL', { run: id, status: run.record.status });
    const problems = run.record.plan_problems ?? [];
    if (problems.length) throw fail('HANGAR_CODERUN_PLAN_PROBLEMS', { problems: problems.join('; ') });
    run.approve();
    return structuredClone(run.record);
  }

  async cancel(id: string): Promise<RunRecord> {
    const team = this.options.team;
    if (team && !this.live.get(id)?.active) return this.cancelElsewhere(team, id);
    const run = this.liveRun(id);
    run.cancel();
    // Team mode: answered as a cancel asked of another instance is, once the run has ended and its
    // record is stored; answered at once, a read on another instance could still find it waiting.
    if (team) {
      await untilEnded(() => run.record);
      await this.saving.get(id);
    }
    return structuredClone(run.record);
  }

  /**
   * Team mode: a run that is not running here. One no instance runs (waiting in the queue, or for
   * its next attempt) is cancelled here under its lock, so no instance takes it afterwards; the
   * instance running one is asked to cancel it, and the answer waits for the stored record to show it.
   */
  private async cancelElsewhere(team: CodeRunTeam, id: string): Promise<RunRecord> {
    const record = await this.get(id);
    if (!ACTIVE.includes(record.status)) throw fail('HANGAR_CODERUN_RUN_NOT_RUNNING', { run: id });
    const free = await team.hold(id);
    if (free) {
      try {
        const current = await this.runs.get(id);
        if (!current || !ACTIVE.includes(current.status)) throw fail('HANGAR_CODERUN_RUN_NOT_RUNNING', { run: id });
        const summary = current.attempts
          ? `cancelled while waiting to run again (the instance running attempt ${current.attempts} stopped)`
          : 'cancelled before an instance took it';
        return await this.settleHeld(current, 'cancelled', null, summary);
      } finally {
        await free.release();
      }
    }
    team.announce('coderun-cancel', id);
    return untilEnded(async () => (await this.runs.get(id)) ?? record);
  }

  /**
   * Team mode: a request for a run this instance does not run. Stored and announced; the instance
   * running the run applies it as a local request (`answerRequest`) and stores its answer or its
   * refusal (code, status, detail), which this answers with. A run no instance runs (waiting in the
   * queue or for its next attempt), or one whose instance does not answer within 10 s, is `not running`.
   */
  private async askElsewhere(team: CodeRunTeam, run: string, request: Pick<RunRequest, 'action' | 'task' | 'body'>): Promise<unknown> {
    const record = await this.runs.get(run);
    if (!record || !ACTIVE.includes(record.status)) throw fail('HANGAR_CODERUN_RUN_NOT_RUNNING', { run });
    const free = await team.hold(run);
    if (free) {
      await free.release();
      throw fail('HANGAR_CODERUN_RUN_NOT_RUNNING', { run });
    }
    return this.requestsElsewhere!.ask(run, request);
  }

  /** Team mode: apply a request stored for a run running here, and store the answer for the instance that asked. */
  private async answerRequest(key: string): Promise<void> {
    const run = runOfRequest(key);
    if (!this.live.get(run)?.active) return;
    await this.requestsElsewhere!.answer(key, async (request) => {
      const result = await this.applyRequest(request);
      // What it changed is in the store before the answer: the asking instance may read the record next.
      await new Promise((resolve) => setImmediate(resolve));
      await this.saving.get(run);
      return result;
    });
  }

  private applyRequest(request: RunRequest): unknown {
    switch (request.action) {
      case 'approve':
        return this.approveHere(request.run);
      case 'edit_plan':
        return this.editPlanHere(request.run, request.body);
      case 'patch_task':
        return this.patchTask(request.task!, request.body);
      case 'retry_task':
        return this.retryTask(request.task!, request.run);
    }
  }

  /**
   * Team mode: the run of another instance a task request goes to — the newest active run (the
   * named one, if named) holding the task that does not run here, unless an active run here has it.
   */
  private async runElsewhereOfTask(taskId: string, runId: string | undefined): Promise<string | undefined> {
    if (!this.options.team) return undefined;
    const here = runId ? [this.live.get(runId)] : [...this.live.values()];
    if (here.some((r) => r?.active && holdsTask(r.record, taskId))) return undefined;
    const stored = runId
      ? [await this.runs.get(runId)]
      : (await this.runs.query({ where: { status: [...ACTIVE] } })).items.sort((a, b) => b.created_at.localeCompare(a.created_at));
    return stored.find((r) => r && ACTIVE.includes(r.status) && holdsTask(r, taskId) && !this.live.get(r.id)?.active)?.id;
  }

  /** The run holding task `taskId`: the named run, else the newest live run that has it. */
  private runOfTask(taskId: string, runId: string | undefined, action: 'retry' | 'change'): CodeRun {
    const candidates = runId ? [this.live.get(runId)].filter(Boolean) : [...this.live.values()].reverse();
    const run = candidates.find((r) => r!.active && holdsTask(r!.record, taskId)) ?? candidates.find((r) => holdsTask(r!.record, taskId));
    if (!run) throw fail('HANGAR_CODERUN_TASK_NOT_FOUND', { task: taskId, where: runId ? `run '${runId}'` : 'any live run' });
    if (!run.active) throw finishedRunError(taskId, run.record, action);
    return run;
  }

  /**
   * `runOfTask`, and for a task of a run no longer in memory (an older one, or from before a
   * restart) the same 409 a finished live run gets, instead of a 404 that hides what happened.
   */
  private async runOfTaskOrPast(taskId: string, runId: string | undefined, action: 'retry' | 'change'): Promise<CodeRun> {
    try {
      return this.runOfTask(taskId, runId, action);
    } catch (err) {
      if (!(err instanceof HangarError) || err.code !== 'HANGAR_CODERUN_TASK_NOT_FOUND') throw err;
      const past = runId ? await this.runs.get(runId) : (await this.list()).find((r) => holdsTask(r, taskId));
      if (past && holdsTask(past, taskId) && !this.live.get(past.id)?.active) throw finishedRunError(taskId, past, action);
      throw err;
    }
  }

  /**
   * PATCH /api/tasks/{id}: change fields of a task of a live run; `squad` assigns a team (rule 1).
   * Board tasks can be changed while not yet dispatched; plan tasks while awaiting approval.
   */
  async patchTask(taskId: string, body: unknown) {
    const parsed = TaskPatch.safeParse(body ?? {});
    if (!parsed.success) throw fail('HANGAR_CODERUN_INVALID', { problems: formatIssues(parsed.error.issues, 'body') });
    const { run: runId, ...fields } = parsed.data;
    const elsewhere = await this.runElsewhereOfTask(taskId, runId);
    if (elsewhere && this.options.team) {
      return (await this.askElsewhere(this.options.team, elsewhere, {
        action: 'patch_task',
        task: taskId,
        body: { ...parsed.data, run: elsewhere },
      })) as never;
    }
    const run = await this.runOfTaskOrPast(taskId, runId, 'change');
    const record = run.record;
    const onBoard = record.tasks.find((t) => t.id === taskId);
    const current = onBoard ?? record.plan!.tasks.find((t) => t.id === taskId)!;
    if (onBoard && onBoard.state !== 'ready_to_dev') throw fail('HANGAR_CODERUN_TASK_DISPATCHED', { task: taskId, state: onBoard.state });
    const next = { ...current, ...fields };
    if ('squad' in fields || 'files' in fields) checkSquad(next, next.squad, record.teams);
    if ('role' in fields) assertStaffable(next.role, record.teams, taskId);
    if (onBoard) {
      record.tasks = record.tasks.map((t) => (t.id === taskId ? { ...t, ...fields } : t));
      this.emit({ type: 'task_update', run: record.id, task: taskId, team: next.squad, state: onBoard.state, note: 'edited' });
    } else {
      record.plan = { ...record.plan!, tasks: record.plan!.tasks.map((t) => (t.id === taskId ? { ...t, ...fields } : t)) };
    }
    this.save(record);
    return { run: record.id, task: onBoard ? record.tasks.find((t) => t.id === taskId) : record.plan!.tasks.find((t) => t.id === taskId) };
  }

  /**
   * Retry a stuck task (to_scope, or orphaned in progress) of a live run.
   *
   * Decision (the spec only says "retry a stuck task"): a finished run is not resumed. Its
   * worktree is removed, its gates, integration check and summary are final, and reopening it
   * would make a reported result change after the fact. The 409 says how to redo the task
   * instead — a new run, after merging the old run's branch if it should build on it. Runs that
   * are no longer in memory (older ones, or from before a restart) get the same answer, not a 404.
   */
  async retryTask(taskId: string, runId?: string) {
    const elsewhere = await this.runElsewhereOfTask(taskId, runId);
    if (elsewhere && this.options.team) {
      return (await this.askElsewhere(this.options.team, elsewhere, { action: 'retry_task', task: taskId })) as never;
    }
    const run = await this.runOfTaskOrPast(taskId, runId, 'retry');
    const task = run.record.tasks.find((t) => t.id === taskId);
    if (!task) throw fail('HANGAR_CODERUN_TASK_NOT_ON_BOARD', { task: taskId });
    if (run.isBusy(taskId)) throw fail('HANGAR_CODERUN_TASK_BUSY', { task: taskId, state: task.state });
    let next;
    try {
      next = transition(task, { type: 'retry' }, { reviewRounds: 1, attemptCeiling: 1 });
    } catch (err) {
      if (err instanceof BoardError) throw fail('HANGAR_CODERUN_TASK_NOT_RETRYABLE', { problem: err.message });
      throw err;
    }
    run.record.tasks = run.record.tasks.map((t) => (t.id === taskId ? next : t));
    this.save(run.record);
    this.emit({ type: 'task_update', run: run.record.id, task: taskId, team: next.squad, state: next.state, note: 'retried by a person' });
    return { run: run.record.id, task: next };
  }

  // ---- calibration -----------------------------------------------------------------------------

  async calibrate(): Promise<Calibration> {
    const config = await this.config();
    const gate = new ModelGate(this.options.endpoint, { maxParallel: Math.max(4, config.max_parallel), modelRoles: {}, escalation: [] });
    try {
      this.lastCalibration = await calibrate(gate, this.options.endpoint, config.max_parallel);
    } catch (err) {
      if (err instanceof ModelError) throw fail('HANGAR_CODERUN_MODEL_UNAVAILABLE', { problem: err.message });
      throw err;
    }
    return this.lastCalibration;
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const off of this.unsubscribe) off();
    for (const run of this.live.values()) if (run.active) run.cancel();
    const deadline = Date.now() + 5000;
    while ([...this.live.values()].some((r) => r.active) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await Promise.all(this.saving.values());
    await this.events.flush();
    await Promise.all([...this.pools].map((p) => p.close().catch(() => undefined)));
  }

  /** Wait until a run settles (tests, CLI). */
  async settled(id: string, timeoutMs = 60_000): Promise<RunRecord> {
    const deadline = Date.now() + timeoutMs;
    while (this.live.get(id)?.active) {
      if (Date.now() > deadline) throw new Error(`run ${id} did not settle within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 25));
    }
    await this.saving.get(id);
    return this.get(id);
  }
}

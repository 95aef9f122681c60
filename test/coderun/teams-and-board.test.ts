import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BoardError, blocked, fingerprint, newTask, nextWave, raiseDefect, transition } from '../../core/coderun/board.js';
import { findOverlaps, globsOverlap, ownersOf } from '../../core/coderun/ownership.js';
import { applyPlanEdit, approvalCard, checkSquad, PLAN_SIZE_CAP, shapePlan } from '../../core/coderun/plan.js';
import { compose, preselect } from '../../core/coderun/preselect.js';
import { CodeConfigSchema, type Plan, type Ticket } from '../../core/coderun/schemas.js';
import { type Team, TeamSchema } from '../../core/coderun/team-schema.js';
import { TeamLibrary } from '../../core/coderun/teams.js';

const team = (id: string, owns: string[], extra: Partial<Team> = {}): Team =>
  TeamSchema.parse({ id, charter: `${id} charter`, owns, acceptance: `npm test -- ${id}`, ...extra });

const api = team('api', ['src/api/**'], { match: { keywords: ['route', 'endpoint'], files: [], extensions: [] } });
const web = team('web', ['web/**', '*.css'], { match: { keywords: ['page', 'button'], files: [], extensions: ['tsx'] } });
const docs = team('docs', ['docs/**', 'README.md'], { match: { keywords: ['documentation'], files: [], extensions: ['md'] } });
const config = CodeConfigSchema.parse({});
const limits = { reviewRounds: 2, attemptCeiling: 2 };

describe('ownership', () => {
  it('finds the owner of a path, after normalising . and ..', () => {
    expect(ownersOf([api, web], 'src/api/health.ts').map((t) => t.id)).toEqual(['api']);
    expect(ownersOf([api, web], './web/../src/api/x.ts').map((t) => t.id)).toEqual(['api']);
    expect(ownersOf([api, web], 'lib/other.ts')).toEqual([]);
  });

  it('reports overlapping globs naming both teams and the globs', () => {
    expect(globsOverlap('src/**', 'src/api/*.ts')).toBe(true);
    expect(globsOverlap('src/api/**', 'src/web/**')).toBe(false);
    expect(globsOverlap('*.css', 'web/**')).toBe(false);
    expect(globsOverlap('**/*.ts', 'src/api/**')).toBe(true);
    const overlaps = findOverlaps([api, web, team('core', ['src/**/*.ts'])]);
    expect(overlaps).toEqual([{ teams: ['api', 'core'], globs: ['src/api/**', 'src/**/*.ts'] }]);
    expect(findOverlaps([api, web, docs])).toEqual([]);
  });
});

describe('preselect and composition', () => {
  it('selects by keywords, owned paths and extensions, deterministically and with reasons', () => {
    const report = preselect([api, docs, web], 'add a /health route in src/api/health.ts and a page', config);
    expect(report.mode).toBe('library');
    expect(report.teams.map((t) => t.id)).toEqual(['api', 'web']);
    expect(report.teams[0]!.reasons).toEqual(expect.arrayContaining(["keyword 'route'", 'mentions src/api/health.ts (src/api/**)']));
    expect(report.teams[1]!.reasons).toEqual(["keyword 'page'"]);
    expect(report.considered.find((c) => c.id === 'docs')).toEqual({ id: 'docs', score: 0, chosen: false });
    expect(preselect([web, api, docs], 'add a /health route in src/api/health.ts and a page', config)).toEqual(report);
  });

  it('honours run pins over configured pins and refuses unknown pins by name', () => {
    const pinnedByConfig = preselect([api, web, docs], 'a page', { ...config, teams: ['docs'] });
    expect(pinnedByConfig.mode).toBe('pinned');
    expect(pinnedByConfig.teams.map((t) => t.id)).toEqual(['docs']);
    const pinnedForRun = preselect([api, web, docs], 'a page', { ...config, teams: ['docs'] }, ['api']);
    expect(pinnedForRun.teams.map((t) => t.id)).toEqual(['api']);
    expect(pinnedForRun.note).toBe('teams pinned for this run');
    expect(() => preselect([api], 'x', config, ['nope'])).toThrow("unknown team 'nope'");
  });

  it('offers every team to the planner in dynamic mode (team_library off)', () => {
    const report = preselect([api, web], 'a page', { ...config, team_library: false });
    expect(report).toMatchObject({
      mode: 'dynamic',
      teams: [
        { id: 'web', reasons: ["keyword 'page'"] },
        { id: 'api', reasons: ['offered to the planner'] },
      ],
    });
  });

  it('falls back to every team when nothing matches, and says so', () => {
    const report = preselect([api, web], 'make it faster', config);
    expect(report.teams.map((t) => t.id)).toEqual(['api', 'web']);
    expect(report.note).toMatch(/no team matched/);
  });

  it('composes teams with their resolved manager and evidence', () => {
    const managed = team('api', ['src/api/**'], { manager: 'ada', match: api.match });
    const composition = compose([managed, web], preselect([managed, web], 'new endpoint', config));
    expect(composition).toMatchObject({ team_mode: 'library', teams: [{ id: 'api', manager: 'ada', evidence: ["keyword 'endpoint'"] }] });
    expect(compose([web], preselect([web], 'button', config)).teams[0]!.manager).toBe('project-manager');
  });
});

describe('team library', () => {
  let repo: string;
  afterEach(async () => rm(repo, { recursive: true, force: true }));

  it('overrides a shipped team in the repository and deleting the override reveals it', async () => {
    repo = await mkdtemp(path.join(os.tmpdir(), 'teams-'));
    const library = new TeamLibrary(() => [api, web]);
    const edited = await library.update(repo, 'api', { charter: 'our API', owns: ['server/**'] });
    expect(edited).toMatchObject({ source: 'override', team: { charter: 'our API', owns: ['server/**'], acceptance: api.acceptance } });
    expect(JSON.parse(await readFile(path.join(repo, '.hangar/teams/api.json'), 'utf8')).charter).toBe('our API');
    const { revealed } = await library.delete(repo, 'api');
    expect(revealed?.charter).toBe('api charter');
    expect((await library.get(repo, 'api')).source).toBe('shipped');
    await expect(library.delete(repo, 'api')).rejects.toMatchObject({ status: 409 });
  });

  it('refuses a team whose paths overlap another, naming both teams and the glob', async () => {
    repo = await mkdtemp(path.join(os.tmpdir(), 'teams-'));
    const library = new TeamLibrary(() => [api, web]);
    await expect(library.create(repo, { id: 'core', charter: 'c', owns: ['src/**'] })).rejects.toMatchObject({
      status: 422,
      detail: "ownership must be disjoint: teams 'api' and 'core' both own paths: 'src/api/**' overlaps 'src/**'",
    });
    await expect(library.update(repo, 'web', { owns: ['src/api/web/**'] })).rejects.toMatchObject({ status: 422 });
    expect((await library.list(repo)).map((t) => t.team.id)).toEqual(['api', 'web']);
  });
});

describe('board transitions', () => {
  const spec = {
    id: 'T1',
    title: 't',
    description: '',
    role: 'developer',
    squad: 'api',
    acceptance: '',
    criteria: [],
    priority: 5,
    files: ['src/api/a.ts'],
    dependencies: [],
  };

  it('moves ready_to_dev → in_progress → in_review → done and refuses other moves', () => {
    let task = newTask(spec);
    expect(() => transition(task, { type: 'approve' }, limits)).toThrow(BoardError);
    task = transition(task, { type: 'dispatch', assignee: 'dev' }, limits);
    expect(task).toMatchObject({ state: 'in_progress', attempts: 1, assignee: 'dev' });
    task = transition(task, { type: 'submit' }, limits);
    expect(transition(task, { type: 'approve' }, limits).state).toBe('done');
  });

  it('hands an exhausted review ladder to the corrector once, then sends it to to_scope', () => {
    let task = transition(transition(newTask(spec), { type: 'dispatch', assignee: 'dev' }, limits), { type: 'submit' }, limits);
    task = transition(task, { type: 'reject', findings: ['f1'], corrector: 'ts-corrector' }, limits);
    expect(task).toMatchObject({ state: 'in_progress', reviews: 1, handed_over: false });
    task = transition(
      transition(task, { type: 'submit' }, limits),
      { type: 'reject', findings: ['f2'], corrector: 'ts-corrector' },
      limits,
    );
    expect(task).toMatchObject({
      state: 'in_progress',
      handed_over: true,
      assignee: 'ts-corrector',
      reviews: 0,
      findings: ['f1', 'f2'],
      id: 'T1',
      files: spec.files,
    });
    task = transition(
      transition(task, { type: 'submit' }, limits),
      { type: 'reject', findings: ['f3'], corrector: 'ts-corrector' },
      limits,
    );
    task = transition(
      transition(task, { type: 'submit' }, limits),
      { type: 'reject', findings: ['f4'], corrector: 'ts-corrector' },
      limits,
    );
    expect(task).toMatchObject({ state: 'to_scope', needs_human: true });
  });

  it('goes straight to to_scope when no corrector can take it', () => {
    const one = { reviewRounds: 1, attemptCeiling: 2 };
    const task = transition(transition(newTask(spec), { type: 'dispatch', assignee: 'dev' }, one), { type: 'submit' }, one);
    expect(transition(task, { type: 'reject', findings: [], corrector: null }, one)).toMatchObject({
      state: 'to_scope',
      needs_human: true,
    });
  });

  it('re-queues an orphan until the attempt ceiling', () => {
    let task = transition(newTask(spec), { type: 'dispatch', assignee: 'dev' }, limits);
    task = transition(task, { type: 'orphaned' }, limits);
    expect(task).toMatchObject({ state: 'ready_to_dev', attempts: 1 });
    task = transition(transition(task, { type: 'dispatch', assignee: 'dev' }, limits), { type: 'orphaned' }, limits);
    expect(task).toMatchObject({ state: 'to_scope', attempts: 2, needs_human: true });
  });

  it('builds waves of tasks whose files do not collide, respecting dependencies', () => {
    const tasks = [
      newTask({ ...spec, id: 'T1', files: ['a.ts'] }),
      newTask({ ...spec, id: 'T2', files: ['a.ts'] }),
      newTask({ ...spec, id: 'T3', files: ['b.ts'] }),
      newTask({ ...spec, id: 'T4', files: ['c.ts'], dependencies: ['T1'] }),
    ];
    expect(nextWave(tasks).map((t) => t.id)).toEqual(['T1', 'T3']);
    const t1Done = tasks.map((t) => (t.id === 'T1' || t.id === 'T3' ? { ...t, state: 'done' as const } : t));
    expect(nextWave(t1Done).map((t) => t.id)).toEqual(['T2', 'T4']);
    const scoped = tasks.map((t) => (t.id === 'T1' ? { ...t, state: 'to_scope' as const } : t));
    expect(blocked(scoped).map((t) => t.id)).toEqual(['T4']);
  });

  it('raises one ticket per defect and bumps it when the same defect is found again', () => {
    const defect = { team: 'api', command: 'npm test', output: 'not ok 1 - health answers 200 (12ms)\n# fail 1', files: ['src/api/a.ts'] };
    const first = raiseDefect([], defect);
    expect(first).toMatchObject({
      action: 'raised',
      ticket: { id: 'TK1-API', command: 'npm test', acceptance: '`npm test` passes', files: ['src/api/a.ts'], count: 1 },
    });
    const again = raiseDefect(first.tickets, { ...defect, output: 'not ok 1 - health answers 200 (31ms)\n# fail 1' });
    expect(again.action).toBe('bumped');
    expect(again.tickets).toHaveLength(1);
    expect(again.ticket.count).toBe(2);
    const other = raiseDefect(again.tickets as Ticket[], { ...defect, output: 'not ok 2 - other' });
    expect(other.action).toBe('raised');
    expect(fingerprint(defect)).not.toBe(fingerprint({ ...defect, team: 'web' }));
  });
});

describe('plans and the approval gate', () => {
  const plan: Plan = {
    summary: 's',
    contract: [{ name: 'health', spec: 'GET /health → {ok:true}', provider: 'api', consumers: ['web'] }],
    tasks: [
      {
        id: 'T1',
        title: 'route and page',
        description: '',
        role: 'developer',
        squad: null,
        acceptance: '',
        criteria: [],
        priority: 1,
        files: ['src/api/health.ts', 'web/health.tsx'],
        dependencies: ['T0'],
      },
      {
        id: 'T2',
        title: 'docs',
        description: '',
        role: 'developer',
        squad: 'docs',
        acceptance: '',
        criteria: [],
        priority: 5,
        files: ['docs/health.md'],
        dependencies: ['T1'],
      },
    ],
  };

  it('cuts a task along team boundaries into derived ids and repairs dependencies', () => {
    const shaped = shapePlan(plan, [api, web, docs]);
    expect(shaped.plan.tasks.map((t) => [t.id, t.squad, t.files])).toEqual([
      ['T1-API', 'api', ['src/api/health.ts']],
      ['T1-WEB', 'web', ['web/health.tsx']],
      ['T2', 'docs', ['docs/health.md']],
    ]);
    expect(shaped.plan.tasks[2]!.dependencies).toEqual(['T1-API', 'T1-WEB']);
    expect(shaped.dropped).toEqual([
      { task: 'T1-API', dependency: 'T0', reason: 'no such task' },
      { task: 'T1-WEB', dependency: 'T0', reason: 'no such task' },
    ]);
  });

  it('caps the plan at the plan size limit', () => {
    const many = { ...plan, tasks: Array.from({ length: 12 }, (_, i) => ({ ...plan.tasks[1]!, id: `T${i + 1}`, dependencies: [] })) };
    const shaped = shapePlan(many, [docs]);
    expect(shaped.plan.tasks).toHaveLength(PLAN_SIZE_CAP);
    expect(shaped.cut).toEqual(['T9', 'T10', 'T11', 'T12']);
    expect(approvalCard(shaped.plan)).toMatchObject({ shown: 8, total: 8, note: null });
  });

  it('applies edits: omitted fields untouched, cleared fields cleared, removals repair dependencies', () => {
    const live = shapePlan(plan, [api, web, docs]).plan;
    const { plan: next, dropped } = applyPlanEdit(live, [api, web, docs], {
      tasks: [
        { id: 'T2', description: '', acceptance: '', title: 'write the docs' },
        { id: 'T1-WEB', remove: true },
      ],
    });
    expect(next.tasks.map((t) => t.id)).toEqual(['T1-API', 'T2']);
    expect(next.tasks[1]).toMatchObject({ title: 'write the docs', description: '', priority: 5, dependencies: ['T1-API'] });
    expect(dropped).toEqual([{ task: 'T2', dependency: 'T1-WEB', reason: 'task removed at the approval gate' }]);
  });

  it('refuses an unstaffable role and an edit breaking disjoint ownership, leaving the plan untouched', () => {
    const live = shapePlan(plan, [api, web, docs]).plan;
    const before = structuredClone(live);
    expect(() => applyPlanEdit(live, [api, web, docs], { tasks: [{ id: 'T2', role: 'astronaut' }] })).toThrow(
      "role 'astronaut' cannot be staffed",
    );
    expect(() =>
      applyPlanEdit(live, [api, web, docs], {
        tasks: [{ id: 'T2', title: 'changed' }],
        teams: [{ id: 'docs', owns: ['docs/**', 'src/**'] }],
      }),
    ).toThrow("teams 'api' and 'docs' both own paths");
    expect(live).toEqual(before);
  });

  it('refuses a squad assignment against file ownership, naming the owner', () => {
    expect(() => checkSquad({ id: 'T1', files: ['src/api/a.ts'] }, 'web', [api, web])).toThrow("src/api/a.ts is owned by team 'api'");
    expect(() => checkSquad({ id: 'T1', files: ['src/api/a.ts'] }, null, [api, web])).toThrow("owned by team 'api'");
    expect(() => checkSquad({ id: 'T1', files: ['lib/x.ts'] }, 'web', [api, web])).not.toThrow();
  });
});

describe('write fence', () => {
  let dir: string;
  afterEach(async () => rm(dir, { recursive: true, force: true }));

  it('resolves .. and symlinks, including dangling ones, before checking ownership', async () => {
    const { mkdir, symlink, realpath } = await import('node:fs/promises');
    const { checkWrite } = await import('../../core/coderun/fence.js');
    dir = await mkdtemp(path.join(os.tmpdir(), 'fence-'));
    const root = path.join(await realpath(dir), 'repo');
    await mkdir(path.join(root, 'src/api'), { recursive: true });
    await mkdir(path.join(root, 'src/web'), { recursive: true });
    await symlink('../web', path.join(root, 'src/api/to-web'));
    await symlink('../../../outside.txt', path.join(root, 'src/api/dangling'));
    await symlink('../web/new.ts', path.join(root, 'src/api/dangling-web'));
    const teams = [api, web];
    expect(checkWrite(root, 'src/api/new/deep/file.ts', api, teams)).toBe('src/api/new/deep/file.ts');
    expect(checkWrite(root, './src/web/../api/x.ts', api, teams)).toBe('src/api/x.ts');
    expect(() => checkWrite(root, 'src/api/to-web/x.ts', api, teams)).toThrow(
      "src/api/to-web/x.ts (resolves to src/web/x.ts) is outside team 'api'",
    );
    expect(() => checkWrite(root, 'src/api/dangling', api, teams)).toThrow('src/api/dangling is outside the repository');
    expect(() => checkWrite(root, 'src/api/dangling-web', api, teams)).toThrow(
      "src/api/dangling-web (resolves to src/web/new.ts) is outside team 'api'",
    );
    expect(() => checkWrite(root, '/etc/passwd', api, teams)).toThrow('outside the repository');
    expect(() => checkWrite(root, 'lib/x.ts', { id: 'unowned', owns: [], unowned: true }, teams)).not.toThrow();
    expect(() => checkWrite(root, 'web/x.ts', { id: 'unowned', owns: [], unowned: true }, teams)).toThrow(
      "web/x.ts is owned by team 'web'",
    );
  });
});

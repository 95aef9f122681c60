/**
 * The team library: shipped teams (the workspace's `teams/` drop-ins, JSON or `defineTeam`) under
 * project overrides (`<repo>/.hangar/teams/<id>.json` in the target repository). An override with a
 * shipped team's id replaces it; deleting the override reveals the shipped team again.
 *
 * Invariant kept by every write: the owned globs of the effective teams are disjoint. A write that
 * would break it is refused whole, naming both teams and the glob.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatIssues } from '../http/validate.js';
import { fail } from '../kernel/errors.js';
import type { DropInKind } from '../kernel/registry.js';
import { PARSE_ONCE } from '../lib/parse-once.js';
import { describeOverlap, findOverlaps } from './ownership.js';
import { type Team, type TeamInput, TeamPatch, TeamSchema } from './team-schema.js';

export type TeamSource = 'shipped' | 'project' | 'override';

export interface LibraryTeam {
  team: Team;
  /** shipped: from teams/; project: only in the repository; override: replaces a shipped team. */
  source: TeamSource;
}

/** The manager every team falls back to when it names none. */
export const DEFAULT_MANAGER = 'project-manager';

/** The `team` drop-in kind: `teams/<id>.json` or `teams/<id>.ts` exporting `defineTeam({...})`. */
export const teamKind: DropInKind<Team> = {
  kind: 'team',
  folder: 'teams',
  json: true,
  load(exported, defaultName) {
    const value = (exported as { default?: unknown })?.default ?? exported;
    const raw = value && typeof value === 'object' ? { id: defaultName, ...(value as object) } : value;
    const parsed = TeamSchema.safeParse(raw, PARSE_ONCE);
    if (!parsed.success) throw new Error(formatIssues(parsed.error.issues, 'team'));
    return parsed.data;
  },
  nameOf: (team) => team.id,
};

export function parseTeam(input: unknown, where = 'body'): Team {
  const parsed = TeamSchema.safeParse(input);
  if (!parsed.success) throw fail('HANGAR_CODERUN_INVALID', { problems: formatIssues(parsed.error.issues, where) });
  return parsed.data;
}

/** Refuse (422) when the teams' owned globs overlap, naming both teams and the globs. */
export function assertDisjoint(teams: readonly Team[]): void {
  const overlaps = findOverlaps(teams);
  if (overlaps.length) throw fail('HANGAR_CODERUN_OWNERSHIP_OVERLAP', { overlaps: overlaps.map(describeOverlap).join('; ') });
}

export class TeamLibrary {
  constructor(private readonly shipped: () => Team[]) {}

  static overridesDir(repo: string): string {
    return path.join(repo, '.hangar', 'teams');
  }

  /** Teams defined in the repository, by id. A broken file is reported, never silently skipped. */
  async overrides(repo: string): Promise<Map<string, Team>> {
    const dir = TeamLibrary.overridesDir(repo);
    const out = new Map<string, Team>();
    let names: string[];
    try {
      names = (await readdir(dir)).filter((n) => n.endsWith('.json')).sort();
    } catch {
      return out;
    }
    for (const name of names) {
      const file = path.join(dir, name);
      let raw: unknown;
      try {
        raw = JSON.parse(await readFile(file, 'utf8'));
      } catch (err) {
        throw fail('HANGAR_CODERUN_TEAM_FILE_INVALID', { file, problem: (err as Error).message });
      }
      const team = parseTeam({ id: name.slice(0, -5), ...(raw as object) }, `.hangar/teams/${name}`);
      out.set(team.id, team);
    }
    return out;
  }

  /** Effective teams of a repository, sorted by id. */
  async list(repo: string): Promise<LibraryTeam[]> {
    const shipped = new Map(this.shipped().map((t) => [t.id, t]));
    const overrides = await this.overrides(repo);
    const out: LibraryTeam[] = [];
    for (const [id, team] of shipped) if (!overrides.has(id)) out.push({ team, source: 'shipped' });
    for (const [id, team] of overrides) out.push({ team, source: shipped.has(id) ? 'override' : 'project' });
    return out.sort((a, b) => a.team.id.localeCompare(b.team.id));
  }

  async teams(repo: string): Promise<Team[]> {
    return (await this.list(repo)).map((t) => t.team);
  }

  async get(repo: string, id: string): Promise<LibraryTeam> {
    const found = (await this.list(repo)).find((t) => t.team.id === id);
    if (!found) throw fail('HANGAR_CODERUN_TEAM_NOT_FOUND', { team: id });
    return found;
  }

  shippedTeam(id: string): Team | undefined {
    return this.shipped().find((t) => t.id === id);
  }

  async create(repo: string, input: TeamInput): Promise<LibraryTeam> {
    const team = parseTeam(input);
    const current = await this.list(repo);
    if (current.some((t) => t.team.id === team.id)) throw fail('HANGAR_CODERUN_TEAM_EXISTS', { team: team.id });
    assertDisjoint([...current.map((t) => t.team), team]);
    await this.writeOverride(repo, team);
    return this.get(repo, team.id);
  }

  /** Edit a team (omitted fields untouched); writes a project override of a shipped team. */
  async update(repo: string, id: string, patch: unknown): Promise<LibraryTeam> {
    const parsed = TeamPatch.strict().safeParse(patch ?? {});
    if (!parsed.success) throw fail('HANGAR_CODERUN_INVALID', { problems: formatIssues(parsed.error.issues, 'body') });
    const current = await this.list(repo);
    const existing = current.find((t) => t.team.id === id);
    if (!existing) throw fail('HANGAR_CODERUN_TEAM_NOT_FOUND', { team: id });
    const given = Object.fromEntries(Object.entries(patch as object).filter(([k]) => k in parsed.data)) as Partial<Team>;
    const team = parseTeam({ ...existing.team, ...given, id }, 'body');
    assertDisjoint(current.map((t) => (t.team.id === id ? team : t.team)));
    await this.writeOverride(repo, team);
    return this.get(repo, id);
  }

  /**
   * Delete the repository's definition of a team. Deleting an override reveals the shipped team
   * (returned); a shipped team has no file here to delete, so that is refused.
   */
  async delete(repo: string, id: string): Promise<{ deleted: string; revealed: Team | null }> {
    const existing = await this.get(repo, id);
    if (existing.source === 'shipped') {
      throw fail('HANGAR_CODERUN_TEAM_SHIPPED', { team: id });
    }
    const revealed = this.shippedTeam(id) ?? null;
    // Checked before the file goes: revealing the shipped globs must not break disjointness.
    if (revealed) assertDisjoint((await this.teams(repo)).map((t) => (t.id === id ? revealed : t)));
    await rm(path.join(TeamLibrary.overridesDir(repo), `${id}.json`));
    return { deleted: id, revealed };
  }

  /** Write through a temporary file so a crash never leaves half a team. */
  async writeOverride(repo: string, team: Team): Promise<void> {
    const dir = TeamLibrary.overridesDir(repo);
    await mkdir(dir, { recursive: true });
    const file = path.join(dir, `${team.id}.json`);
    const tmp = `${file}.${process.pid}.tmp`;
    const { id: _id, ...body } = team;
    await writeFile(tmp, JSON.stringify(body, null, 2) + '\n');
    await rename(tmp, file);
  }
}

/**
 * Preselection: which library teams a request selects, and why. Deterministic and model-free, so
 * the same request over the same library always gives the same report (the UI shows it before a
 * run, and a test can pin it). Evidence comes from the teams' match rules (keywords, files,
 * extensions) and from paths in the request that a team owns.
 */
import { fail } from '../kernel/errors.js';
import { escapeRegExp } from '../lib/regexp.js';
import { globMatcher, ownedBy } from './ownership.js';
import type { CodeConfig } from './schemas.js';
import type { Team } from './team-schema.js';
import { DEFAULT_MANAGER } from './teams.js';

export type TeamMode = 'pinned' | 'library' | 'dynamic';

export interface Staffing {
  manager: string;
  developers: string[];
  reviewer: string;
  tester: string;
  correctors: string[];
}

export interface SelectedTeam {
  id: string;
  score: number;
  /** Human-readable evidence: "keyword 'api'", "mentions src/api/x.ts (owned by src/api/**)". */
  reasons: string[];
  manager: string;
  staffing: Staffing;
}

export interface PreselectReport {
  mode: TeamMode;
  note: string;
  teams: SelectedTeam[];
  /** Every library team with its score, chosen or not, for the teams page. */
  considered: Array<{ id: string; score: number; chosen: boolean }>;
}

/** Roles the harness can always staff with its generic agents, whatever the roster holds. */
export const GENERIC_ROLES = ['developer', 'reviewer', 'tester', 'corrector', 'manager'] as const;

export function effectiveManager(team: Team): string {
  return team.manager ?? DEFAULT_MANAGER;
}

/** Who works for a team: roster agents by role, generic agents where the roster has none. */
export function staffingOf(team: Team): Staffing {
  const byRole = (role: string) => team.agents.filter((a) => a.role === role).map((a) => a.name);
  const developers = byRole('developer');
  return {
    manager: effectiveManager(team),
    developers: developers.length ? developers : [`${team.id}-developer`],
    reviewer: team.seats.reviewer ?? byRole('reviewer')[0] ?? `${team.id}-reviewer`,
    tester: team.seats.tester ?? byRole('tester')[0] ?? `${team.id}-tester`,
    correctors: byRole('corrector'),
  };
}

/** Letters, digits, `_`, `.`, `@`, `-`: what a path segment is made of. */
function isPathChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 46 || c === 64 || c === 45;
}

const SLASH = 47;
const COLON = 58;

/** `name.ext` with a 1–6 letter or digit extension: `README.md`, `health.test.ts`. */
function isFileName(word: string): boolean {
  const dot = word.lastIndexOf('.');
  if (dot <= 0 || word.length - dot - 1 < 1 || word.length - dot - 1 > 6 || word.charCodeAt(0) === 46) return false;
  for (let i = dot + 1; i < word.length; i++) {
    const c = word.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122))) return false;
  }
  return true;
}

/** A `/`-joined run with at least one non-empty segment after a slash: `src/api`, `/etc/hosts`, `./lib/`. */
function isSlashPath(part: string): boolean {
  for (let i = part.indexOf('/'); i >= 0; i = part.indexOf('/', i + 1)) {
    if (i + 1 < part.length && part.charCodeAt(i + 1) !== SLASH) return true;
  }
  return false;
}

/** Trailing sentence punctuation and a leading `./` are not part of the path. */
function tidy(candidate: string): string {
  let end = candidate.length;
  while (end > 0 && candidate.charCodeAt(end - 1) === 46) end--;
  const start = candidate.startsWith('./') ? 2 : 0;
  return candidate.slice(start, end);
}

/**
 * Path-like tokens of a request: `src/api/health.ts`, `README.md`, `./lib/`.
 *
 * One left-to-right pass over maximal runs of path characters and slashes, so the time is linear in
 * the request's length. (It replaced a regular expression whose leading `[\w.@-]*` backtracked over
 * every start position: 64,000 letters without a slash blocked the server for 23 s.) Within a run,
 * a doubled slash separates two mentions; a run right after `scheme:` is a URL, not a path; a run
 * without a slash counts when it is a file name, and `@` splits words (`me@example.com`).
 */
export function mentionedPaths(request: string): string[] {
  const out = new Set<string>();
  const add = (candidate: string) => {
    const p = tidy(candidate);
    if (p) out.add(p);
  };
  const n = request.length;
  let i = 0;
  while (i < n) {
    const c = request.charCodeAt(i);
    if (!isPathChar(c) && c !== SLASH) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < n && (isPathChar(request.charCodeAt(j)) || request.charCodeAt(j) === SLASH)) j++;
    const run = request.slice(i, j);
    const isUrl = i > 0 && request.charCodeAt(i - 1) === COLON && run.startsWith('//');
    if (!isUrl) {
      if (run.includes('/')) {
        for (const part of run.split(/\/{2,}/)) if (isSlashPath(part)) add(part);
      } else {
        for (const word of run.split('@')) {
          const name = tidy(word);
          if (isFileName(name)) out.add(name);
        }
      }
    }
    i = j;
  }
  return [...out];
}

/** Evidence one team has for a request; score = number of distinct pieces of evidence. */
export function evidenceFor(team: Team, request: string): string[] {
  const reasons: string[] = [];
  const text = request.toLowerCase();
  for (const keyword of team.match.keywords) {
    if (new RegExp(`(^|[^a-z0-9])${escapeRegExp(keyword.toLowerCase())}([^a-z0-9]|$)`).test(text)) reasons.push(`keyword '${keyword}'`);
  }
  const paths = mentionedPaths(request);
  for (const p of paths) {
    const glob = ownedBy(team, p) ?? team.match.files.find((g) => globMatcher(g)(p));
    if (glob) reasons.push(`mentions ${p} (${glob})`);
  }
  for (const ext of team.match.extensions) {
    const e = ext.replace(/^\./, '').toLowerCase();
    if (paths.some((p) => p.toLowerCase().endsWith(`.${e}`)) || new RegExp(`(^|\\s)\\.${escapeRegExp(e)}\\b`).test(text)) {
      reasons.push(`extension .${e}`);
    }
  }
  return [...new Set(reasons)];
}

/**
 * Select teams for a request. Pins (run-scoped first, then the configured `teams`) win outright;
 * with `team_library` off the mode is `dynamic` and every team is offered to the planner; else
 * teams with evidence are chosen, best first (ties by id). Decision: when no team has evidence,
 * every library team is chosen and the note says so, rather than starting a run with nobody.
 */
export function preselect(
  library: readonly Team[],
  request: string,
  config: Pick<CodeConfig, 'team_library' | 'teams'>,
  pins: readonly string[] = [],
): PreselectReport {
  const effectivePins = pins.length ? [...pins] : [...config.teams];
  const scored = library
    .map((team) => ({ team, reasons: evidenceFor(team, request) }))
    .sort((a, b) => b.reasons.length - a.reasons.length || a.team.id.localeCompare(b.team.id));
  const select = (team: Team, reasons: string[]): SelectedTeam => ({
    id: team.id,
    score: reasons.length,
    reasons,
    manager: effectiveManager(team),
    staffing: staffingOf(team),
  });

  let mode: TeamMode;
  let note: string;
  let chosen: SelectedTeam[];
  if (effectivePins.length) {
    const unknown = effectivePins.filter((id) => !library.some((t) => t.id === id));
    if (unknown.length) throw fail('HANGAR_CODERUN_TEAMS_UNKNOWN', { teams: unknown.map((u) => `'${u}'`).join(', ') });
    mode = 'pinned';
    note = pins.length ? 'teams pinned for this run' : 'teams pinned by configuration (teams)';
    chosen = scored.filter((s) => effectivePins.includes(s.team.id)).map((s) => select(s.team, ['pinned', ...s.reasons]));
  } else if (!config.team_library) {
    mode = 'dynamic';
    note = 'team_library is off: every team is offered and the planner assigns squads';
    chosen = scored.map((s) => select(s.team, s.reasons.length ? s.reasons : ['offered to the planner']));
  } else {
    mode = 'library';
    const matched = scored.filter((s) => s.reasons.length > 0);
    if (matched.length) {
      note = `${matched.length} of ${library.length} teams matched the request`;
      chosen = matched.map((s) => select(s.team, s.reasons));
    } else {
      note = 'no team matched the request; every library team is used';
      chosen = scored.map((s) => select(s.team, ['no evidence; library fallback']));
    }
  }
  const ids = new Set(chosen.map((c) => c.id));
  return {
    mode,
    note,
    teams: chosen,
    considered: scored.map((s) => ({ id: s.team.id, score: s.reasons.length, chosen: ids.has(s.team.id) })),
  };
}

export interface Composition {
  teams: Array<{ id: string; manager: string; evidence: string[]; owns: string[]; acceptance: string }>;
  team_mode: TeamMode;
  team_note: string;
}

/** The composition a run would use: the preselected teams with resolved managers and evidence. */
export function compose(library: readonly Team[], report: PreselectReport): Composition {
  return {
    team_mode: report.mode,
    team_note: report.note,
    teams: report.teams.map((s) => {
      const team = library.find((t) => t.id === s.id)!;
      return { id: s.id, manager: s.manager, evidence: s.reasons, owns: team.owns, acceptance: team.acceptance };
    }),
  };
}

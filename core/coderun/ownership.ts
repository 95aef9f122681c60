/**
 * Who owns which path. Pure functions over team globs: the owner of a file, whether two teams'
 * globs overlap (ownership must be disjoint), and a normalised repository-relative path.
 */
import picomatch from 'picomatch';
import type { Team } from './team-schema.js';

const matchers = new Map<string, (path: string) => boolean>();

/** A cached matcher; `dot: true` because `.github/**` is as ownable as `src/**`. */
export function globMatcher(glob: string): (path: string) => boolean {
  let m = matchers.get(glob);
  if (!m) {
    m = picomatch(glob, { dot: true });
    if (matchers.size > 2000) matchers.clear();
    matchers.set(glob, m);
  }
  return m;
}

/** `./a//b/../c` → `a/c`; backslashes become slashes. Paths escaping the root come back with `..`. */
export function normalizeRelative(p: string): string {
  const parts: string[] = [];
  for (const seg of p.replace(/\\/g, '/').split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..' && parts.length && parts[parts.length - 1] !== '..') parts.pop();
    else parts.push(seg);
  }
  return parts.join('/');
}

/** The first glob of `team` matching `file`, if any. */
export function ownedBy(team: Pick<Team, 'owns'>, file: string): string | undefined {
  const rel = normalizeRelative(file);
  return team.owns.find((g) => globMatcher(g)(rel));
}

/** Teams owning `file` (one when ownership is disjoint). */
export function ownersOf(teams: readonly Team[], file: string): Team[] {
  return teams.filter((t) => ownedBy(t, file) !== undefined);
}

/** The literal directory prefix of a glob (`src/api/**` → `src/api`). */
function staticBase(glob: string): string {
  const scan = picomatch.scan(glob);
  return normalizeRelative(scan.isGlob ? scan.base : glob);
}

/**
 * Concrete paths a glob matches, used as witnesses: `**` is tried as nothing and as one folder,
 * `*` as a name, `{a,b}` as each branch. Enough to find a shared path for the globs teams write.
 */
function witnesses(glob: string, other = ''): string[] {
  const braces = /\{([^{}]*)\}/.exec(glob);
  if (braces) {
    return braces[1]!
      .split(',')
      .flatMap((alt) => witnesses(glob.slice(0, braces.index) + alt + glob.slice(braces.index + braces[0].length), other));
  }
  // Hints from the other glob: its folder (for a leading `**/`) and its file suffix (for a
  // trailing `/**`), so `**/*.ts` and `src/api/**` meet at `src/api/w.ts`.
  const otherBase = staticBase(other);
  const suffix = /(\.[\w-]+)$/.exec(other)?.[1] ?? '.x';
  const variants = new Set<string>();
  for (const deep of ['', 'w/', otherBase ? `${otherBase}/` : '']) {
    const p = glob
      .replace(/^\*\*\//, deep)
      .replace(/\*\*\//g, 'w/')
      .replace(/\/\*\*$/g, `/w${suffix}`)
      .replace(/\*\*/g, 'w')
      .replace(/\*/g, 'w')
      .replace(/\?/g, 'w')
      .replace(/\[[^\]]*\]/g, 'w');
    variants.add(normalizeRelative(p));
  }
  return [...variants];
}

function nested(a: string, b: string): boolean {
  return a === '' || b === '' || a === b || b.startsWith(a + '/') || a.startsWith(b + '/');
}

/**
 * Do two globs share a path? Globs under unrelated folders never do; otherwise a witness path of
 * one matching the other proves an overlap. Accepted edge case: exotic globs (extglobs, character
 * classes both sides) that share only paths no witness hits are reported disjoint.
 */
export function globsOverlap(a: string, b: string): boolean {
  if (!nested(staticBase(a), staticBase(b))) return false;
  const ma = globMatcher(a);
  const mb = globMatcher(b);
  return witnesses(a, b).some((p) => mb(p)) || witnesses(b, a).some((p) => ma(p));
}

export interface OwnershipOverlap {
  teams: [string, string];
  globs: [string, string];
}

/** Every pair of teams whose owned globs overlap; empty means ownership is disjoint. */
export function findOverlaps(teams: readonly Pick<Team, 'id' | 'owns'>[]): OwnershipOverlap[] {
  const out: OwnershipOverlap[] = [];
  for (let i = 0; i < teams.length; i++) {
    for (let j = i + 1; j < teams.length; j++) {
      for (const ga of teams[i]!.owns) {
        const gb = teams[j]!.owns.find((g) => globsOverlap(ga, g));
        if (gb) {
          out.push({ teams: [teams[i]!.id, teams[j]!.id], globs: [ga, gb] });
          break;
        }
      }
    }
  }
  return out;
}

export function describeOverlap(o: OwnershipOverlap): string {
  return `teams '${o.teams[0]}' and '${o.teams[1]}' both own paths: '${o.globs[0]}' overlaps '${o.globs[1]}'`;
}

import { SourceMap, type SourceMapPayload } from 'node:module';
import path from 'node:path';

/**
 * Stack traces that point at the person's own file and line. Drop-ins run as bundles evaluated
 * under a virtual name (`hangar-dropin:<file>?v=<build>`, core/kernel/evaluator.ts), so a raw
 * frame names bundle coordinates (`crash.ts?v=f747e023f4:27:9` for a throw on line 2) between
 * frames of Hangar's own `dist/chunk-*.mjs`. `cleanStack` maps each drop-in frame through its
 * build's source map and, as Next.js's overlay collapses framework frames, leaves Hangar's and
 * Node's frames out — unless `HANGAR_DEBUG=1` asks for them.
 *
 * Only the two newest builds of each entry are kept (a source map per reload would grow with
 * every save): the one evaluated last, and the one before it, which still serves when the newest
 * failed to load. A frame of an older build still running shows its file without a line.
 */

/** What the evaluator wraps a bundle in; frames on the first line are shifted by its length. */
export const WRAPPER_HEAD = '(function (exports, require, module, __filename, __dirname) {';
const PREFIX = 'hangar-dropin:';

interface KnownBuild {
  hash: string;
  root: string;
  payload: SourceMapPayload;
  map?: SourceMap;
}

/** entry file → its newest builds, newest last */
const builds = new Map<string, KnownBuild[]>();
const KEPT = 2;

/** The name evaluated code runs under; stack frames with it are mapped back to the source. */
export function virtualName(file: string, hash: string): string {
  return `${PREFIX}${file}?v=${hash}`;
}

export function rememberBuild(file: string, hash: string, root: string, payload: SourceMapPayload): void {
  const known = (builds.get(file) ?? []).filter((b) => b.hash !== hash);
  known.push({ hash, root, payload });
  builds.set(file, known.slice(-KEPT));
}

export interface SourceLocation {
  /** Relative to the workspace. */
  file: string;
  line?: number;
  column?: number;
}

/** Where a bundle line and column came from, in the workspace's own files. */
export function originalLocation(file: string, hash: string, line: number, column: number): SourceLocation | undefined {
  const known = builds.get(file);
  if (!known) return undefined;
  const build = known.find((b) => b.hash === hash);
  const shown = path.relative(known[0]!.root, file) || file;
  if (!build) return { file: shown };
  build.map ??= new SourceMap(build.payload);
  if (line === 1) column -= WRAPPER_HEAD.length;
  const entry = build.map.findEntry(line - 1, column - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number };
  if (!entry.originalSource) return { file: shown };
  // Sources are relative to the outfile's folder (.hangar/build), see bundleDropIn.
  const source = path.resolve(build.root, '.hangar', 'build', entry.originalSource);
  return {
    file: path.relative(build.root, source) || source,
    line: (entry.originalLine ?? 0) + 1,
    column: (entry.originalColumn ?? 0) + 1,
  };
}

const FRAME = /hangar-dropin:(.+?)\?v=([0-9a-f]+):(\d+):(\d+)/;

export interface CleanStack {
  /** The stack with drop-in frames mapped and, unless debugging, only those frames kept. */
  stack: string;
  /** The frames alone, `at fn (agents/crash.ts:2:9)`. */
  frames: string[];
  /** The innermost frame in the person's code. */
  top?: SourceLocation;
}

/**
 * Where a drop-in's run threw, for an error body beside `detail`: the innermost frame in the
 * person's file (`file`, `line`, `column`) and the cleaned stack; nulls when no frame is theirs.
 */
export function runErrorFields(err: unknown): { file: string | null; line: number | null; column: number | null; stack: string[] } {
  const clean = err instanceof Error && err.stack ? cleanStack(err.stack) : undefined;
  const top = clean?.top;
  return { file: top?.file ?? null, line: top?.line ?? null, column: top?.column ?? null, stack: clean?.frames ?? [] };
}

export function cleanStack(stack: string, debug = process.env.HANGAR_DEBUG === '1'): CleanStack {
  const lines = stack.split('\n');
  const isFrame = (line: string) => /^\s+at /.test(line);
  const mapped = lines.map((line) => {
    const m = FRAME.exec(line);
    if (!m) return { line, user: false as const };
    const where = originalLocation(m[1]!, m[2]!, Number(m[3]), Number(m[4]));
    const shown = where ? `${where.file}${where.line ? `:${where.line}:${where.column}` : ' (an earlier version)'}` : path.basename(m[1]!);
    return { line: line.replace(FRAME, shown), user: true as const, where };
  });
  const anyUser = mapped.some((m) => m.user);
  // Without a frame in the person's code the error is Hangar's own: its frames are the useful ones.
  const kept = mapped.filter((m) => !isFrame(m.line) || m.user || debug || !anyUser);
  const top = mapped.find((m) => m.user && m.where?.line)?.where;
  return {
    stack: kept.map((m) => m.line).join('\n'),
    frames: kept.filter((m) => isFrame(m.line)).map((m) => m.line.trim()),
    top,
  };
}

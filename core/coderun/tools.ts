/**
 * The tools a coding agent acts through: read, write, list, search, run a command, finish. They run
 * inside the agent's worker thread. Every write goes through the fence (`fence.ts`); reads, lists
 * and searches are confined to the repository. A tool never throws at the loop: failures come back
 * as `{ok: false}` results the model sees, so a bad call costs one turn, not the run.
 */
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ToolSpec } from '../lib/model-client.js';
import { runCommand } from './command.js';
import { type CommandSnapshot, type ForeignChange, foreignChanges, restore, snapshotForeign } from './command-fence.js';
import { checkWrite, type FenceTeam, resolveInside } from './fence.js';

export interface ToolContext {
  /** Real path of the repository (the run's worktree). */
  root: string;
  team: FenceTeam;
  teams: FenceTeam[];
  commandTimeoutMs: number;
  signal: AbortSignal;
  /** Repository-relative paths written so far (what the task's commit stages). */
  written: Set<string>;
  /**
   * Which of a command's writes into foreign paths to revert. The run answers this: it knows which
   * of them are another task's own fenced writes made while the command ran. Without it, all are.
   */
  judgeCommandWrites?: (writes: CommandWrites) => Promise<string[]>;
}

/** What one `run_command` changed in paths its task does not own. */
export interface CommandWrites {
  command: string;
  /** Date.now() before the snapshot: a fenced write at or after this happened while it ran. */
  started: number;
  changes: ForeignChange[];
}

export interface ToolResult {
  ok: boolean;
  /** What the model reads back. */
  content: string;
  /** One line for the live view. */
  detail: string;
  finished?: { summary: string };
  /** The path a successful write_file wrote (the run journals fenced writes). */
  wrote?: string;
}

const str = { type: 'string' } as const;

export const AGENT_TOOLS: ToolSpec[] = [
  {
    name: 'read_file',
    description: 'Read a text file of the repository.',
    parameters: { type: 'object', properties: { path: str }, required: ['path'] },
  },
  {
    name: 'write_file',
    description: 'Create or replace a file. Only paths your team owns are writable.',
    parameters: { type: 'object', properties: { path: str, content: str }, required: ['path', 'content'] },
  },
  {
    name: 'list_files',
    description: 'List files under a folder (default: the repository root).',
    parameters: { type: 'object', properties: { path: str } },
  },
  {
    name: 'search',
    description: 'Search file contents with a regular expression; returns path:line: text.',
    parameters: { type: 'object', properties: { pattern: str, path: str }, required: ['pattern'] },
  },
  {
    name: 'run_command',
    description: 'Run a shell command in the repository root (tests, builds). Output tail and exit code come back.',
    parameters: { type: 'object', properties: { command: str }, required: ['command'] },
  },
  {
    name: 'finish',
    description: 'Say the task is done, with a one-paragraph summary.',
    parameters: { type: 'object', properties: { summary: str }, required: ['summary'] },
  },
];

const SKIP = new Set(['.git', 'node_modules', '.hangar']);
const MAX_READ = 100_000;

async function walk(root: string, start: string, limit: number): Promise<string[]> {
  const out: string[] = [];
  const queue = [start];
  while (queue.length && out.length < limit) {
    const dir = queue.shift()!;
    let entries;
    try {
      entries = await readdir(path.join(root, dir), { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (SKIP.has(e.name)) continue;
      const rel = dir ? `${dir}/${e.name}` : e.name;
      if (e.isDirectory()) queue.push(rel);
      else out.push(rel);
      if (out.length >= limit) break;
    }
  }
  return out;
}

/** Repository files (breadth first, bounded) for prompts and listings. */
export function listRepository(root: string, limit = 300): Promise<string[]> {
  return walk(root, '', limit);
}

function str_(args: Record<string, unknown>, key: string): string {
  const v = args[key];
  if (typeof v !== 'string') throw new Error(`argument '${key}' must be a string`);
  return v;
}

/** Revert what a command wrote into foreign paths; returns the line the model and the live view read. */
async function fenceCommand(command: string, started: number, before: CommandSnapshot | Error, ctx: ToolContext): Promise<string> {
  if (before instanceof Error) return `(its writes could not be checked: ${before.message})`;
  try {
    const changes = await foreignChanges(ctx.root, ctx.team, ctx.teams, before);
    if (!changes.length) return '';
    const revert = new Set(
      ctx.judgeCommandWrites ? await ctx.judgeCommandWrites({ command, started, changes }) : changes.map((c) => c.path),
    );
    const reverted = changes.filter((c) => revert.has(c.path));
    if (!reverted.length) return '';
    await restore(
      ctx.root,
      before,
      reverted.map((c) => c.path),
    );
    return `reverted its writes outside your team's paths: ${reverted.map((c) => `${c.path} (team '${c.owner}')`).join(', ')}`;
  } catch (err) {
    return `(its writes could not be checked: ${(err as Error).message})`;
  }
}

export async function runTool(name: string, args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
  try {
    switch (name) {
      case 'read_file': {
        const rel = resolveInside(ctx.root, str_(args, 'path'));
        const text = await readFile(path.join(ctx.root, rel), 'utf8');
        return { ok: true, content: text.length > MAX_READ ? `${text.slice(0, MAX_READ)}\n[truncated]` : text, detail: `read ${rel}` };
      }
      case 'write_file': {
        const rel = checkWrite(ctx.root, str_(args, 'path'), ctx.team, ctx.teams);
        const content = str_(args, 'content');
        await mkdir(path.dirname(path.join(ctx.root, rel)), { recursive: true });
        await writeFile(path.join(ctx.root, rel), content);
        ctx.written.add(rel);
        return { ok: true, content: `wrote ${rel} (${Buffer.byteLength(content)} bytes)`, detail: `wrote ${rel}`, wrote: rel };
      }
      case 'list_files': {
        const requested = typeof args.path === 'string' && args.path.trim() ? args.path : '.';
        const rel = requested === '.' ? '' : resolveInside(ctx.root, requested);
        const files = await walk(ctx.root, rel, 500);
        return { ok: true, content: files.join('\n') || '(no files)', detail: `listed ${rel || '.'} (${files.length})` };
      }
      case 'search': {
        const pattern = new RegExp(str_(args, 'pattern'));
        const under = typeof args.path === 'string' && args.path.trim() ? resolveInside(ctx.root, args.path) : '';
        const hits: string[] = [];
        for (const file of await walk(ctx.root, under, 2000)) {
          const full = path.join(ctx.root, file);
          if ((await stat(full)).size > 1_000_000) continue;
          const lines = (await readFile(full, 'utf8')).split('\n');
          lines.forEach((line, i) => {
            if (hits.length < 50 && pattern.test(line)) hits.push(`${file}:${i + 1}: ${line.slice(0, 200)}`);
          });
          if (hits.length >= 50) break;
        }
        return { ok: true, content: hits.join('\n') || '(no matches)', detail: `searched /${pattern.source}/ (${hits.length})` };
      }
      case 'run_command': {
        const command = str_(args, 'command');
        const started = Date.now();
        // A snapshot that fails (a broken worktree) must not stop the agent from running tests:
        // the command runs unchecked and the run's after-loop check is what remains.
        const before = await snapshotForeign(ctx.root, ctx.team, ctx.teams).catch((err: Error) => err);
        const result = await runCommand(command, { cwd: ctx.root, timeoutMs: ctx.commandTimeoutMs, signal: ctx.signal });
        const tailText = result.output.split('\n').slice(-60).join('\n');
        const status = result.timed_out ? 'killed at timeout' : result.cancelled ? 'cancelled' : `exit ${result.exit_code}`;
        const fenced = ctx.signal.aborted ? '' : await fenceCommand(command, started, before, ctx);
        return {
          ok: result.exit_code === 0,
          content: `${status}\n${tailText}${fenced ? `\n${fenced}` : ''}`,
          detail: `ran \`${command}\`: ${status}${fenced ? `; ${fenced}` : ''}`,
        };
      }
      case 'finish': {
        const summary = typeof args.summary === 'string' ? args.summary : '';
        return { ok: true, content: 'finished', detail: 'finished', finished: { summary } };
      }
      default:
        return {
          ok: false,
          content: `error: unknown tool '${name}'; use one of ${AGENT_TOOLS.map((t) => t.name).join(', ')}`,
          detail: `unknown tool ${name}`,
        };
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { ok: false, content: `error: ${message}`, detail: `${name} failed: ${message}` };
  }
}

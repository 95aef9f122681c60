/**
 * Runtime files of running servers, kept as Jupyter keeps its `jpserver-<pid>.json`: one file per
 * server at `<workspace>/.hangar/servers/<pid>.json` naming its URL, port, workspace, start time,
 * pid and the tokens a client on this machine needs (the coding-run session token). `hangar list`
 * prints them; `hangar code`, `hangar notebook` and `hangar login` use them to find the server of
 * their workspace instead of guessing a port.
 *
 * - Written with mode 0600 in a 0700 folder: the session token in it is what proves a caller may
 *   drive coding runs, so only the workspace's owner may read it.
 * - Removed when the server closes (and, as a last resort, when its process exits); a file whose
 *   process is gone (SIGKILL, a crash, a power cut) is ignored and deleted by the next reader.
 * - Keyed by pid, as Jupyter's are: two servers of one process on one workspace (tests do this)
 *   share a name, so a server removes the file at close only while it still names its own port.
 *   Accepted edge case: a recycled pid makes a stale file look alive until that process exits.
 * - Read and written with synchronous calls: a few small files in the workspace's state folder. A
 *   start lists and writes them while discovery evaluates the drop-ins, and each asynchronous step
 *   waited for the main thread to be free again: the listing and the write, a dozen thread-pool
 *   round trips in turn, ended 8-15 ms after discovery, and `/readiness` waits for them (session 25).
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const SERVERS_DIR = 'servers';

export interface ServerInfo {
  pid: number;
  /** Base URL of the API (`http://127.0.0.1:8787`); the UI is at `${url}/ui/`. */
  url: string;
  port: number;
  host: string;
  /** Absolute workspace folder the server serves. */
  workspace: string;
  /** ISO time the server started listening. */
  started: string;
  version: string;
  /** The coding-run session token (header X-Hangar-Session); absent on servers without coding runs. */
  session?: string;
}

export function serversDir(workspace: string): string {
  return path.join(workspace, '.hangar', SERVERS_DIR);
}

function fileOf(workspace: string, pid: number): string {
  return path.join(serversDir(workspace), `${pid}.json`);
}

/** Whether a process exists; EPERM means it does, only owned by someone else. */
export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Files to remove if the process exits without closing its servers (process.exit from a handler). */
const removeAtExit = new Set<string>();
let exitHookInstalled = false;

export async function writeServerFile(info: ServerInfo): Promise<string> {
  const dir = serversDir(info.workspace);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = fileOf(info.workspace, info.pid);
  // Written aside and renamed, so a reader never sees half a file.
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(temporary, JSON.stringify(info, null, 2) + '\n', { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, file);
  removeAtExit.add(file);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const f of removeAtExit) removeQuietly(f);
    });
  }
  return file;
}

/** Removes this server's file unless another server of the same process has written it since. */
export async function removeServerFile(info: Pick<ServerInfo, 'workspace' | 'pid' | 'port'>): Promise<void> {
  const file = fileOf(info.workspace, info.pid);
  const current = readInfo(file);
  if (current && current.port !== info.port) return;
  removeAtExit.delete(file);
  removeQuietly(file);
}

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

function readInfo(file: string): ServerInfo | undefined {
  try {
    const info = JSON.parse(readFileSync(file, 'utf8')) as ServerInfo;
    return typeof info.pid === 'number' && typeof info.url === 'string' ? info : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The running servers of one workspace, oldest first. Files of processes that are gone are
 * deleted on the way (as `jupyter server list` cleans up after crashed servers).
 */
export async function listServers(workspace: string): Promise<ServerInfo[]> {
  const dir = serversDir(path.resolve(workspace));
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const found: ServerInfo[] = [];
  for (const name of names) {
    if (!/^\d+\.json$/.test(name)) continue;
    const file = path.join(dir, name);
    const info = readInfo(file);
    if (info && isAlive(info.pid)) found.push(info);
    else removeQuietly(file);
  }
  return found.sort((a, b) => a.started.localeCompare(b.started));
}

/** The newest running server of a workspace, if any. */
export async function serverFor(workspace: string): Promise<ServerInfo | undefined> {
  return (await listServers(workspace)).at(-1);
}

const SKIP = new Set(['node_modules', '.git', 'dist']);

/**
 * Workspaces at or below `folder` that hold a servers folder, `depth` levels down at most; folders
 * named in SKIP and other dot-folders are not entered (a node_modules tree would cost seconds).
 */
export function workspacesUnder(folder: string, depth = 4): string[] {
  const found: string[] = [];
  const visit = (dir: string, left: number) => {
    if (existsSync(serversDir(dir))) found.push(dir);
    if (left === 0) return;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name.startsWith('.') || SKIP.has(entry.name)) continue;
      visit(path.join(dir, entry.name), left - 1);
    }
  };
  visit(path.resolve(folder), depth);
  return found;
}

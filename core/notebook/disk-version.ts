/**
 * Which version of a notebook file a session holds, so a save never silently overwrites an edit
 * made on disk meanwhile (another editor, `git pull`), as VS Code's "the file has been changed on
 * disk" check and JupyterLab's "File Changed" dialog guard theirs.
 *
 * The version is the file's modification time plus a hash of its bytes; the hash decides (a
 * `touch`, or a save that wrote the same bytes, is no change), the time is kept for the answer.
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { diffNotebooks, formatDiffText } from './diff.js';
import { parseNotebook } from './formats.js';
import type { Notebook } from './schemas.js';

export interface DiskVersion {
  mtimeMs: number;
  hash: string;
}

export const hashText = (text: string) => createHash('sha256').update(text).digest('hex');

/** The file's version and text now; undefined when it does not exist (nothing to conflict with). */
export async function readDiskVersion(file: string): Promise<{ version: DiskVersion; text: string } | undefined> {
  try {
    const [info, text] = await Promise.all([stat(file), readFile(file, 'utf8')]);
    return { version: { mtimeMs: info.mtimeMs, hash: hashText(text) }, text };
  } catch {
    return undefined;
  }
}

/** Whether the file on disk is no longer the version the session holds. */
export function isNewerOnDisk(held: DiskVersion | undefined, now: DiskVersion | undefined): boolean {
  return Boolean(held && now && now.hash !== held.hash);
}

/**
 * What the disk version changes compared with the session's notebook, as `notebook diff` prints it
 * (a = this session, b = the file). A file that no longer parses is shown as its parse error.
 */
export function diskDiff(session: Notebook, diskText: string, file: string): string {
  let onDisk: Notebook;
  try {
    onDisk = parseNotebook(diskText, file);
  } catch (err) {
    return `the file on disk does not parse as a notebook: ${(err as Error).message}\n`;
  }
  return formatDiffText(diffNotebooks(session, onDisk), { a: 'this session', b: 'on disk' });
}

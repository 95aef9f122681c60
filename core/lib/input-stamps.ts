/**
 * Whether the files a build read have changed since: each file's size and modification time, as
 * make and esbuild's own incremental mode judge it. Used to skip a build whose inputs are all as
 * they were (drop-in bundles, core/kernel/build-cache.ts; worker bundles, worker-bundle.ts).
 */
import { statSync } from 'node:fs';

export type InputStamp = [file: string, size: number, mtimeMs: number];

/** The stamps of `files` now; throws if one is gone (the build is then stale by definition). */
export function stampInputs(files: readonly string[]): InputStamp[] {
  return files.map((file) => {
    const stat = statSync(file);
    return [file, stat.size, stat.mtimeMs];
  });
}

/** True when every file still has the size and modification time it was stamped with. */
export function inputsUnchanged(stamps: readonly InputStamp[]): boolean {
  for (const [file, size, mtimeMs] of stamps) {
    const now = statSync(file, { throwIfNoEntry: false });
    if (!now || now.size !== size || now.mtimeMs !== mtimeMs) return false;
  }
  return true;
}

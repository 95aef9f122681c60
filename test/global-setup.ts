import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { resolveTestBrowser, type TestBrowser } from './support/test-browser.js';

declare module 'vitest' {
  export interface ProvidedContext {
    testBrowser: TestBrowser;
  }
}

/** The prefix of a run's temporary folder (see `setup`); test/tmpdir.test.ts checks the workers use it. */
export const RUN_TMPDIR_PREFIX = 'hangar-tests-';

/**
 * Once per run, before any test file:
 * - The browser is resolved. Extracting the bundled Chromium in two workers at once would race on
 *   the same temp folder. The line printed says which browser the run drives. It stays in the OS temp
 *   folder, so later runs reuse it.
 * - Every temporary file after that goes under one folder of the run's own, removed when the run
 *   ends. That covers workspaces, databases, browser profiles and the files of the processes tests
 *   start. The workers and everything they spawn inherit `TMPDIR`. Tests that forget a cleanup, or
 *   stop before it, then leave nothing behind: before this, one `npm test` left ~250 folders in /tmp.
 *   The folder is open to every user, as /tmp is: as root, PostgreSQL runs as `postgres` and must
 *   reach its data folder.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const browser = await resolveTestBrowser();
  process.stdout.write(`browser tests: ${browser.version} (${browser.source}: ${browser.executablePath})\n`);
  project.provide('testBrowser', browser);

  const scratch = await mkdtemp(path.join(os.tmpdir(), RUN_TMPDIR_PREFIX));
  await chmod(scratch, 0o1777);
  // os.tmpdir() reads TMPDIR on POSIX, TEMP then TMP on Windows.
  for (const name of ['TMPDIR', 'TEMP', 'TMP']) process.env[name] = scratch;
  return async () => {
    // A folder left behind is not a failed run: it is said, and the OS's temp cleaning gets it later.
    await rm(scratch, { recursive: true, force: true, maxRetries: 3 }).catch((err: Error) => {
      process.stderr.write(`could not remove the run's temp folder ${scratch}: ${err.message}\n`);
    });
  };
}

import { statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { RUN_TMPDIR_PREFIX } from './global-setup.js';

// test/global-setup.ts points every temporary file of a run at one folder it removes at the end.
it("the run's temporary files go to its own folder, open to every user as /tmp is", () => {
  const tmp = os.tmpdir();
  expect(path.basename(tmp).startsWith(RUN_TMPDIR_PREFIX)).toBe(true);
  expect(statSync(tmp).mode & 0o7777).toBe(0o1777);
});

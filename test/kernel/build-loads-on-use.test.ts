/**
 * scripts/build.mjs leaves some packages out of dist/cli.cjs, loaded from node_modules on first use
 * (CLI_LOADS_ON_USE). `require` from dist/ must find the copy the bundled importers expect, so the
 * build refuses when one is not Hangar's own dependency, or when the lockfile holds two copies.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { repo } from '../support/cli.js';

const copies: string[] = [];
afterEach(() => {
  for (const dir of copies.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A copy of the build's inputs with package.json and the lockfile as `edit` leaves them. */
function checkoutWith(edit: (manifest: Record<string, any>, lock: Record<string, any>) => void): string {
  const copy = mkdtempSync(path.join(os.tmpdir(), 'hangar-build-check-'));
  copies.push(copy);
  for (const part of ['bin', 'scripts']) cpSync(path.join(repo, part), path.join(copy, part), { recursive: true });
  symlinkSync(path.join(repo, 'node_modules'), path.join(copy, 'node_modules'));
  const manifest = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8'));
  const lock = JSON.parse(readFileSync(path.join(repo, 'package-lock.json'), 'utf8'));
  edit(manifest, lock);
  writeFileSync(path.join(copy, 'package.json'), JSON.stringify(manifest));
  writeFileSync(path.join(copy, 'package-lock.json'), JSON.stringify(lock));
  return copy;
}

const build = (checkout: string) =>
  spawnSync(process.execPath, [path.join(checkout, 'scripts', 'build.mjs'), '--quiet'], { cwd: checkout, encoding: 'utf8' });

describe('the build leaves a package out of the CLI bundle only when dist/ can load it', () => {
  it('refuses one that is not a dependency of Hangar', () => {
    const checkout = checkoutWith((manifest) => delete manifest.dependencies['iconv-lite']);
    const result = build(checkout);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('iconv-lite is left out of dist/cli.cjs but is not a dependency in package.json');
  });

  it('refuses one the lockfile holds twice', () => {
    const checkout = checkoutWith((_manifest, lock) => {
      lock.packages['node_modules/body-parser/node_modules/iconv-lite'] = { ...lock.packages['node_modules/iconv-lite'], version: '0.6.3' };
    });
    const result = build(checkout);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(
      'iconv-lite is left out of dist/cli.cjs but the lockfile has 2 copies (node_modules/iconv-lite, node_modules/body-parser/node_modules/iconv-lite)',
    );
  });
});

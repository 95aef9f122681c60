/**
 * The docker export's package.json lists every package its runner imports (#23: `bytes` was
 * missing and the image failed with ERR_MODULE_NOT_FOUND). Checked by installing what it lists,
 * and nothing else, from this repository's node_modules (the registry is not reachable offline:
 * each listed package and its dependencies are linked in) and running the exported runner with
 * --preserve-symlinks, so a package reached only through our own node_modules is not found.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CliIo, notebookCli } from '../../core/app/cli/notebook.js';

const repo = resolve(import.meta.dirname, '..', '..');

/** Link `names` and everything they depend on from the repository's node_modules into `target`. */
async function installFromRepo(names: string[], target: string): Promise<void> {
  const done = new Set<string>();
  const queue = [...names];
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (done.has(name)) continue;
    done.add(name);
    const source = join(repo, 'node_modules', name);
    if (!existsSync(source)) continue; // an optional dependency for another platform
    await mkdir(dirname(join(target, name)), { recursive: true });
    await symlink(source, join(target, name));
    const manifest = JSON.parse(await readFile(join(source, 'package.json'), 'utf8'));
    queue.push(...Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies, ...manifest.peerDependencies }));
  }
}

describe('notebook export --format docker', () => {
  it('lists every package the runner imports, and the runner runs with only those installed', async () => {
    const out = await mkdtemp(join(tmpdir(), 'nb-docker-'));
    const io: CliIo = { out: () => undefined, err: (t) => process.stderr.write(t), color: false };
    expect(await notebookCli(['export', join(repo, 'notebooks', 'sales.nb.ts'), '--format', 'docker', '-o', out], io)).toBe(0);
    const manifest = JSON.parse(await readFile(join(out, 'package.json'), 'utf8'));
    expect(Object.keys(manifest.dependencies)).toEqual(expect.arrayContaining(['bytes', 'arquero', 'esbuild']));

    await installFromRepo(Object.keys(manifest.dependencies), join(out, 'node_modules'));
    await mkdir(join(out, 'data'));
    await copyFile(join(repo, 'notebooks', 'data', 'sales.csv'), join(out, 'data', 'sales.csv'));
    const run = spawnSync(process.execPath, ['--preserve-symlinks', '--preserve-symlinks-main', 'runner.mjs', 'run', 'notebook.nb.ts'], {
      cwd: out,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('7/7 cells succeeded');
  });
});

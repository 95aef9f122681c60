/**
 * The analysis functions run inside a kernel's worker thread, which cannot load TypeScript, so
 * `worker/entry.ts` is bundled once with esbuild into `node_modules/.cache/hangar-notebook/`
 * (keyed by a hash of the worker sources), where bare imports (arquero, ml-*) resolve to Hangar's
 * own dependencies.
 *
 * ES module, not CommonJS like the worker entry points: it is loaded with a dynamic `import()` by
 * the kernel (never `require()`d by piscina), and ml-kmeans ships only as an ES module, which a
 * CommonJS bundle would have to `require()`.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { assetDir, packageRoot } from '../assets.js';

let built: string | undefined;

export function intelWorkerFile(): string {
  if (built) return built;
  const sourceDir = join(assetDir(), 'intel', 'worker');
  const files = readdirSync(sourceDir).filter((f) => f.endsWith('.ts')).sort();
  const hash = createHash('sha256');
  for (const f of files) hash.update(f).update('\0').update(readFileSync(join(sourceDir, f))).update('\0');
  const dir = join(packageRoot(), 'node_modules', '.cache', 'hangar-notebook');
  const target = join(dir, `intel-worker.${hash.digest('hex').slice(0, 12)}.mjs`);
  if (!existsSync(target)) {
    mkdirSync(dir, { recursive: true });
    // Temporary name then rename: a second server starting at the same time never imports half a file.
    const tmp = `${target}.${process.pid}.tmp`;
    buildSync({
      entryPoints: [join(sourceDir, 'entry.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      outfile: tmp,
      logLevel: 'silent',
    });
    renameSync(tmp, target);
    // Kernels import the file once and keep it, so older builds can go.
    for (const old of readdirSync(dir)) {
      if (old.startsWith('intel-worker.') && join(dir, old) !== target && !old.endsWith('.tmp')) rmSync(join(dir, old), { force: true });
    }
  }
  return (built = target);
}

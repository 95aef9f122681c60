// `npm run bench`: runs every benchmark in bench/ in its own process, one after another.
// Benchmarks named *.bench.ts or *.bench.mjs import the code under test from core/ directly and
// are bundled with esbuild first; any other *.mjs (one that only drives the built CLI) runs as is.
// Each prints its figures as medians and as a ratio against a baseline measured in the same run.
// `npm run bench -- reload` runs only the benchmarks whose file name contains "reload".
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const dir = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(dir, '..', '.hangar', 'bench');
mkdirSync(out, { recursive: true });
const filter = process.argv[2];
const files = readdirSync(dir)
  .filter((f) => (f.endsWith('.bench.ts') || f.endsWith('.mjs')) && f !== 'run.mjs')
  .filter((f) => !filter || f.includes(filter))
  .sort();

let failed = 0;
for (const file of files) {
  let script = path.join(dir, file);
  if (/\.bench\.m?[jt]s$/.test(file)) {
    script = path.join(out, file.replace(/\.(ts|mjs)$/, '.out.mjs'));
    await esbuild.build({
      entryPoints: [path.join(dir, file)],
      outfile: script,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node22',
      packages: 'external',
      alias: { hangar: path.join(dir, '..', 'core', 'sdk.ts') },
      logLevel: 'warning',
    });
  }
  console.log(`\n=== ${file}`);
  const result = spawnSync(process.execPath, ['--expose-gc', script], { stdio: 'inherit', cwd: path.join(dir, '..') });
  if (result.status !== 0) {
    failed++;
    console.log(`!!! ${file} exited with ${result.status}`);
  }
}
process.exit(failed ? 1 : 0);

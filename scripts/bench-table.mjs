// `npm run bench:table [results.json]`: write the README's benchmark table from a results file of
// `npm run bench`, so the README shows what was measured and nothing else.
//
// The results file (default .hangar/bench/results.json, the latest figure of every benchmark run on
// this machine) is copied to bench/results.json, which is committed with the README: anyone can
// see the raw figures behind the table, and `--check` (run by the test suite) fails when the table
// and bench/results.json disagree.
//
//   npm run bench:table                         .hangar/bench/results.json → bench/results.json → README
//   npm run bench:table -- some/results.json    another results file
//   npm run bench:table -- --check              exit 1 if the README's table is not bench/results.json's
//   --readme <file>                             another README (tests)
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readResults, replaceTable } from '../bench/lib/results.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { check: { type: 'boolean', default: false }, readme: { type: 'string' }, committed: { type: 'string' } },
});
const readme = path.resolve(values.readme ?? path.join(repo, 'README.md'));
const committed = path.resolve(values.committed ?? path.join(repo, 'bench', 'results.json'));

try {
  const text = readFileSync(readme, 'utf8');
  if (values.check) {
    const expected = replaceTable(text, readResults(committed));
    if (expected !== text) {
      console.error(
        `${path.relative(process.cwd(), readme)}: the benchmark table differs from ${path.relative(process.cwd(), committed)}; run npm run bench:table`,
      );
      process.exit(1);
    }
    console.log(`${path.relative(process.cwd(), readme)}: benchmark table matches ${path.relative(process.cwd(), committed)}`);
  } else {
    const source = path.resolve(positionals[0] ?? path.join(repo, '.hangar', 'bench', 'results.json'));
    const results = readResults(source);
    if (results.figures.length === 0) throw new Error(`${source} holds no figures; run npm run bench first`);
    if (source !== committed) copyFileSync(source, committed);
    writeFileSync(readme, replaceTable(text, results));
    const misses = results.figures.filter((f) => f.pass === false).length;
    console.log(
      `${path.relative(process.cwd(), readme)}: table of ${results.figures.length} figures (${misses} missed) from ${path.relative(process.cwd(), source)}`,
    );
  }
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
}

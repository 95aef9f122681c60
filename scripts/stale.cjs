// Whether dist/ must be rebuilt: missing, or older than a source file, package.json or the
// lockfile. Kept apart from build.mjs (which loads esbuild) so `hangar` can check in its own
// process and start at once.
const { existsSync, readdirSync, statSync } = require('node:fs');
const path = require('node:path');

// Paths joined by hand, not with path.join: its normalisation was most of this walk (~8 ms of every
// `hangar` start, CPU profile), and names read from a directory need none.
function newest(dir) {
  let latest = 0;
  if (!existsSync(dir)) return latest;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = `${dir}${path.sep}${entry.name}`;
    latest = Math.max(latest, entry.isDirectory() ? newest(full) : statSync(full).mtimeMs);
  }
  return latest;
}

function distIsStale(repo) {
  const out = path.join(repo, 'dist', 'cli.cjs');
  if (!existsSync(out)) return true;
  // The bundle's sources: core/ and desktop/ (its build and policy modules are bundled; an edit to
  // the views, which are built at run time, costs one needless ~0.2 s rebuild, not a stale bundle).
  const sources = Math.max(
    newest(path.join(repo, 'core')),
    newest(path.join(repo, 'desktop')),
    statSync(path.join(repo, 'package.json')).mtimeMs,
    // npm packages are bundled into dist/ (scripts/build.mjs): an `npm install` that changes one
    // changes the lockfile, and the bundle must follow.
    existsSync(path.join(repo, 'package-lock.json')) ? statSync(path.join(repo, 'package-lock.json')).mtimeMs : 0,
  );
  return statSync(out).mtimeMs < sources;
}

module.exports = { distIsStale };

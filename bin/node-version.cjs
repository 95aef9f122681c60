// Which Node.js lines Hangar runs on: the `engines.node` range of package.json, checked before
// anything else loads, so an old Node fails with one line instead of at the first newer API.
// Plain JavaScript that parses on any Node (no syntax newer than the oldest line people still have).
const { readFileSync } = require('node:fs');
const path = require('node:path');

const SUPPORTED_RANGE = JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')).engines.node;

/**
 * A range of the one shape engines ranges take here, `>=MAJOR[.MINOR[.PATCH]]`, as numbers; other
 * shapes go to semver. Loading semver's satisfies (its ~10 modules from node_modules) cost every
 * start ~14 ms of CPU before anything else could run.
 */
function lowerBound(range) {
  const m = /^>=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(range.trim());
  return m ? [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)] : undefined;
}

function satisfies(version, range) {
  const bound = lowerBound(range);
  const release = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  // A prerelease or an unusual range: semver's rules (its own modules, not the index's ~50).
  if (!bound || !release) return require('semver/functions/satisfies')(version, range);
  const parts = release.slice(1).map(Number);
  for (let i = 0; i < 3; i++) if (parts[i] !== bound[i]) return parts[i] > bound[i];
  return true;
}

/** The lowest release the range admits, as people name it ("22.17", "24"), for the advice. */
function lowestRelease(range) {
  const min = require('semver/ranges/min-version')(range);
  if (!min) return range;
  return min.minor === 0 && min.patch === 0 ? `${min.major}` : `${min.major}.${min.minor}`;
}

/**
 * `undefined` when `version` (as `process.versions.node` spells it) satisfies the supported range,
 * else the one line `hangar` prints before exiting 1.
 */
function unsupportedNodeMessage(version, range = SUPPORTED_RANGE) {
  if (satisfies(version, range)) return undefined;
  return (
    `hangar: Node ${version} is not supported; install Node ${lowestRelease(range)} or newer ` +
    `(Hangar needs node ${range}; Node 22 and 24 are the supported LTS lines, see README "Supported Node.js versions")`
  );
}

module.exports = { SUPPORTED_RANGE, unsupportedNodeMessage };

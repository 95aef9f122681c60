// Which Node.js lines Hangar runs on: the `engines.node` range of package.json, checked before
// anything else loads, so an old Node fails with one line instead of at the first newer API.
// Plain JavaScript that parses on any Node (no syntax newer than the oldest line people still have).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
// semver's own modules, not its index: the index loads all ~50 of them, which cost every start
// ~50 ms before anything else could run; the advice's minVersion is loaded only when it is printed.
const satisfies = require('semver/functions/satisfies');

export const SUPPORTED_RANGE = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines.node;

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
export function unsupportedNodeMessage(version, range = SUPPORTED_RANGE) {
  if (satisfies(version, range)) return undefined;
  return (
    `hangar: Node ${version} is not supported; install Node ${lowestRelease(range)} or newer ` +
    `(Hangar needs node ${range}; Node 22 and 24 are the supported LTS lines, see README "Supported Node.js versions")`
  );
}

let lastMs = -1;
let lastIso = '';

/**
 * `new Date().toISOString()`, computed at most once per millisecond: formatting costs ~0.4 µs and
 * the agent engine stamps every checkpoint and event, many of them within the same millisecond.
 */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}

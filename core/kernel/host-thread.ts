/**
 * Imported first by every drop-in host's worker entry (agents', endpoint handlers', ingestors'):
 * what a host thread sets up before it loads anything else.
 *
 * - V8's code cache on disk, so the modules it loads next (zod, the SDK) are not compiled again in
 *   every host thread, as bin/hangar.mjs does for the server; the setting is per thread.
 * - A lower scheduling priority (nice +5) on Linux, where the nice value is per thread: a host
 *   spinning in a loop or collecting a heap at its cap then yields the CPU to the server's thread
 *   (the API, the UI, the store), as a browser lowers a background tab. Only under contention does
 *   it matter; a host with a core to itself runs as fast. Elsewhere the call would lower the whole
 *   process, so it is not made.
 */
import module from 'node:module';
import os from 'node:os';

module.enableCompileCache?.();

// Once the worker's modules have loaded: a host starting after a restart is what a caller waits
// for, so its start-up runs at the server's priority.
if (process.platform === 'linux') {
  setImmediate(() => {
    try {
      os.setPriority(0, Math.max(os.getPriority(0), 5));
    } catch {
      // Not permitted (a sandbox): the host runs at the server's priority.
    }
  });
}

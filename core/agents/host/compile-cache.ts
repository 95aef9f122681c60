/**
 * Imported first by the host worker, so the modules it loads next (zod, the SDK) come from V8's
 * code cache on disk rather than being compiled again: every agent's host loads the same ~150 KB
 * bundle and zod, and a host that starts faster is ready before its first call more often. As
 * bin/hangar.mjs does for the server; the setting is per thread, so a worker enables it itself.
 */
import module from 'node:module';

module.enableCompileCache?.();

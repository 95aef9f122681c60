/**
 * Imported first by a drop-in host's worker entry, so the modules it loads next (zod, the SDK) come
 * from V8's code cache on disk rather than being compiled again in every host thread, as
 * bin/hangar.mjs does for the server; the setting is per thread, so a worker enables it itself.
 */
import module from 'node:module';

module.enableCompileCache?.();

/**
 * Imported first by the agent host worker: the set-up every drop-in host thread makes before it
 * loads anything else (V8's code cache, so zod and the SDK are not compiled again in each host; a
 * lower scheduling priority than the server's thread), core/kernel/host-thread.ts.
 */
import '../../kernel/host-thread.js';

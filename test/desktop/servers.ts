import { SUBSYSTEMS } from '../../core/app/subsystems.js';

/**
 * The subsystems for desktop tests that start and stop servers every few hundred milliseconds.
 * The ML plugin pool starts a worker thread at setup (core/predictors/pool.ts, minThreads 1), and on
 * Node 20 terminating a worker that is still loading its ES module aborts the whole test process
 * (FATAL ERROR: v8::Module::IsGraphAsync, from piscina's worker require). These tests have nothing
 * to do with plugins, so their servers run without that subsystem; the browser tests keep it.
 */
export const WITHOUT_PLUGIN_WORKERS = SUBSYSTEMS.filter((s) => s.name !== 'plugins');

import { SUBSYSTEMS } from '../../core/app/subsystems.js';

/**
 * The subsystems for desktop tests that start and stop servers every few hundred milliseconds. They
 * have nothing to do with ML plugins, so their servers run without that subsystem (its pool starts
 * no thread until a plugin loads, but discovery would still load the shipped plugin's model); the
 * browser tests keep it.
 */
export const WITHOUT_PLUGIN_WORKERS = SUBSYSTEMS.filter((s) => s.name !== 'plugins');

/**
 * The kinds of resources the control plane drains and disables. Apart from schemas.ts so the
 * service, set up at every start, does not build the plane's request schemas, which load with its
 * routes only when the plane is on (core/control/subsystem.ts).
 */
export const CONTROLLED_RESOURCES = ['agent', 'endpoint', 'plugin', 'ingestor', 'pipeline'] as const;

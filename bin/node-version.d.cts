/** The `engines.node` range of package.json. */
export const SUPPORTED_RANGE: string;
/** `undefined` when `version` is supported, else the one line `hangar` prints before exiting 1. */
export function unsupportedNodeMessage(version: string, range?: string): string | undefined;

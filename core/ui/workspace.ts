import type { HangarContext } from '../kernel/context.js';
import type { DropInProblem } from '../kernel/registry.js';

/**
 * What the sidebar shows: every drop-in by kind, and the broken ones with file and line.
 * Kinds the UI always lists come first, in the order of the sidebar, so an empty folder still
 * has its section; kinds added later by other subsystems follow alphabetically.
 */
export const SIDEBAR_KINDS = ['agent', 'endpoint', 'plugin', 'pipeline', 'notebook', 'run'] as const;

export interface WorkspaceItem {
  name: string;
  file: string;
  version: string;
  loadedAt: string;
  description: string | null;
}

export interface WorkspaceSnapshot {
  kinds: Record<string, WorkspaceItem[]>;
  problems: DropInProblem[];
}

export function workspaceSnapshot(ctx: HangarContext): WorkspaceSnapshot {
  const kinds: Record<string, WorkspaceItem[]> = {};
  const names = [
    ...SIDEBAR_KINDS,
    ...ctx.registry
      .kinds()
      .filter((k) => !(SIDEBAR_KINDS as readonly string[]).includes(k))
      .sort(),
  ];
  for (const kind of names) {
    kinds[kind] = ctx.registry.list(kind).map((entry) => {
      const description = (entry.definition as { description?: unknown } | null)?.description;
      return {
        name: entry.name,
        file: entry.file,
        version: entry.version,
        loadedAt: entry.loadedAt,
        description: typeof description === 'string' ? description : null,
      };
    });
  }
  return { kinds, problems: ctx.registry.problemsOf() };
}

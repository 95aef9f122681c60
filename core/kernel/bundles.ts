import type { BuiltModule } from './evaluator.js';

/**
 * The bundles discovery evaluated, kept so a supervised host (core/agents/host/) evaluates exactly
 * the code the registry's definition came from, without bundling again. As for source maps
 * (stack.ts), only the two newest builds of each entry are kept: the live one and the one before
 * it, which may still be running when a save lands. Older ones are dropped, so 500 reloads hold
 * two bundles, not 500.
 */
const kept = new Map<string, BuiltModule[]>();
const KEPT = 2;

export function rememberBundle(built: BuiltModule): void {
  const known = (kept.get(built.file) ?? []).filter((b) => b.hash !== built.hash);
  known.push(built);
  kept.set(built.file, known.slice(-KEPT));
}

/** The bundle of entry `file` (absolute) at version `hash`, while it is one of the two newest. */
export function bundleOf(file: string, hash: string): BuiltModule | undefined {
  return kept.get(file)?.find((b) => b.hash === hash);
}

/**
 * The `tool` drop-in kind: `tools/<name>.ts` exports a `defineTool(...)`, checked at discovery
 * like an agent (a bad one is a drop-in error in /api/v1/status), hot-reloaded, and listed by
 * agents by name (`tools: ['weather']`), resolved at each run so a saved tool serves the next call.
 */
import { fail } from '../kernel/errors.js';
import type { DropInKind, Registry } from '../kernel/registry.js';
import { type AnyTool, validateTools } from './tools.js';

export const toolKind: DropInKind<AnyTool> = {
  kind: 'tool',
  folder: 'tools',
  load(exported, defaultName) {
    if (!exported || typeof exported !== 'object') throw new Error('expected a tool: export default defineTool({ … })');
    // As with agents, the name defaults to the file's (tools/weather.ts → weather).
    const named = (exported as { name?: unknown }).name === undefined ? { ...(exported as object), name: defaultName } : exported;
    // An object, checked above, so what validateTools returns is a tool and not a name.
    return validateTools([named])[0] as AnyTool;
  },
  nameOf: (tool) => tool.name,
};

/** The live tool called `name`, or a 404 naming it. */
export function findTool(registry: Registry, name: string): AnyTool {
  const entry = registry.get<AnyTool>('tool', name);
  if (!entry) throw fail('HANGAR_AGENT_TOOL_NOT_FOUND', { tool: name });
  return entry.definition;
}

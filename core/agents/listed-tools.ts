/**
 * An agent's `tools` list resolved to tools: its own definitions as they are (or as `own` turns
 * them: a supervised agent's are run in its host, host/host-tools.ts), names to the live `tools/`
 * drop-ins, `mcp:` entries to their servers' tools. One function for the engine and the host, so
 * a supervised agent's default tools are exactly an inline one's.
 */
import type { AgentRef } from './engine.js';
import { type AnyTool, MCP_TOOL_REF } from './tools.js';

export interface ToolResolvers {
  resolveTool?: (name: string) => AnyTool | undefined;
  resolveMcpTools?: (ref: string, agent: string) => Promise<AnyTool[]>;
}

export async function resolveListedTools(
  agent: AgentRef,
  resolvers: ToolResolvers,
  own: (tool: AnyTool) => AnyTool = (tool) => tool,
): Promise<AnyTool[]> {
  const listed = agent.definition.tools ?? [];
  const resolved = await Promise.all(
    listed.map(async (tool): Promise<AnyTool | AnyTool[]> => {
      if (typeof tool !== 'string') return own(tool);
      if (MCP_TOOL_REF.test(tool)) {
        if (!resolvers.resolveMcpTools) throw new Error(`agent '${agent.name}' lists '${tool}', but no MCP servers are configured`);
        return resolvers.resolveMcpTools(tool, agent.name);
      }
      const found = resolvers.resolveTool?.(tool);
      if (!found) throw new Error(`agent '${agent.name}' lists tool '${tool}', which is not a loaded tool (tools/${tool}.ts)`);
      return found;
    }),
  );
  return resolved.flat();
}

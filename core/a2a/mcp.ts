/**
 * Model Context Protocol over streamable HTTP at /mcp, with the official TypeScript SDK: every
 * registered agent is a tool (name = agent name, description from its card, input a message and an
 * optional thread), so MCP hosts (IDEs, desktop assistants) can call Hangar agents.
 *
 * Decisions:
 * - Stateless transport: a fresh server and transport per request, built from the registry as it
 *   is at that moment, so an agent discovered a second ago is a tool on the next `tools/list` and
 *   nothing is held between requests (GET/DELETE session routes answer 405).
 * - DNS-rebinding protection is the SDK's own host validation middleware, fed with the same host
 *   names the platform accepts, in front of the platform's Host check and token check.
 * - A tool call runs the agent like /invoke; its answer is the text content and the whole
 *   AgentInvokeResponse is the structured content. An agent error is a tool error (`isError`), not
 *   a protocol error, as MCP asks; the client's cancellation aborts the agent's signal.
 */
import type { Request, RequestHandler, Response } from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { hostHeaderValidation } from '@modelcontextprotocol/sdk/server/middleware/hostHeaderValidation.js';
import { z } from 'zod';
import { buildAgentCard } from '../platform/card.js';
import type { Agent } from '../agents/kind.js';
import { runtimeOf } from '../agents/runtime.js';
import { HttpError, errorMessage } from '../http/errors.js';
import { allowedHostNames } from '../http/security.js';
import type { HangarContext } from '../kernel/context.js';

export const MCP_PATH = '/mcp';

const toolInput = {
  message: z.string().min(1).describe('What to ask the agent'),
  thread_id: z.string().min(1).optional().describe('Continue this conversation thread'),
};

/** An MCP server exposing the agents registered right now. */
export function buildMcpServer(ctx: HangarContext): McpServer {
  const server = new McpServer({ name: 'hangar', version: ctx.version });
  for (const { definition: agent } of ctx.registry.list<Agent>('agent')) {
    const card = buildAgentCard(ctx, agent);
    server.registerTool(
      agent.name,
      {
        title: agent.slug,
        description: card.description || `Run the Hangar agent ${agent.name}`,
        inputSchema: toolInput,
      },
      async ({ message, thread_id }, extra) => {
        try {
          const response = await runtimeOf(ctx).service.invoke(
            agent.name,
            {
              query: message,
              thread_id: thread_id ?? null,
              user_id: 'mcp',
              context: {},
              metadata: { source: 'mcp' },
              temperature: null,
              max_tokens: null,
            },
            extra.signal,
          );
          return { content: [{ type: 'text' as const, text: response.response }], structuredContent: response as unknown as Record<string, unknown> };
        } catch (err) {
          const text = err instanceof HttpError && typeof err.detail !== 'string' ? JSON.stringify(err.detail) : errorMessage(err);
          return { content: [{ type: 'text' as const, text }], isError: true };
        }
      },
    );
  }
  return server;
}

/** The SDK's DNS-rebinding guard for the names this server answers to (IPv6 in brackets). */
export function mcpHostValidation(ctx: HangarContext): RequestHandler {
  const names = [...allowedHostNames(ctx.settings)].map((name) => (name.includes(':') ? `[${name}]` : name));
  return hostHeaderValidation(names);
}

/** Handle one streamable-HTTP request (POST; GET and DELETE need sessions, which we don't keep). */
export async function handleMcp(ctx: HangarContext, req: Request, res: Response): Promise<void> {
  if (req.method !== 'POST') {
    res
      .status(405)
      .set('Allow', 'POST')
      .json({ jsonrpc: '2.0', error: { code: -32000, message: 'this MCP endpoint is stateless: use POST' }, id: null });
    return;
  }
  const server = buildMcpServer(ctx);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
}

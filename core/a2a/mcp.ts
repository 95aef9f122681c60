/**
 * Model Context Protocol over streamable HTTP at /mcp, with the official TypeScript SDK: every
 * registered agent is a tool (name = agent name, description from its card, input a message and an
 * optional thread), so MCP hosts (IDEs, desktop assistants) can call Hangar agents.
 *
 * Decisions:
 * - Stateless transport: a fresh server and transport per request, built from the registry as it
 *   is at that moment, so an agent discovered a second ago is a tool on the next `tools/list` and
 *   nothing is held between requests (GET/DELETE session routes answer 405).
 * - DNS-rebinding protection checks the Host name (port-agnostic) as the SDK's host validation
 *   middleware does, with the same JSON-RPC 403 answer, fed with the same host names the platform
 *   accepts; it runs as a route `onRequest` hook after the platform's Host and token checks and
 *   before the body is read.
 * - The SDK transport writes the node response itself: the Fastify reply is hijacked and the
 *   transport gets the raw request, the raw response and the body Fastify already parsed.
 * - A tool call runs the agent like /invoke; its answer is the text content and the whole
 *   AgentInvokeResponse is the structured content. An agent error is a tool error (`isError`), not
 *   a protocol error, as MCP asks; the client's cancellation aborts the agent's signal.
 * - A run that suspends for a human approval is not an error: the result's structured content is
 *   `{status: 'input-required', approval: {approval_id, thread_id, node_name, message, links}}`
 *   and its text says what to approve. The decision is made over MCP too, with the tool
 *   `hangar.decide_approval` (`agent`, `thread_id`, `approval_id`, `approved`, `context`,
 *   `reason`), whose result has the same shapes as an agent tool's. Its name has a dot, which
 *   agent names cannot, so it never shadows an agent. Elicitation is not used: a stateless server
 *   cannot hold the run open across the client's answer.
 */
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { buildAgentCard } from '../platform/card.js';
import type { Agent } from '../agents/kind.js';
import { runtimeOf } from '../agents/runtime.js';
import { HttpError, errorMessage } from '../http/errors.js';
import { allowedHostNames } from '../http/security.js';
import type { HangarContext } from '../kernel/context.js';
import { viewerOf } from '../kernel/ownership.js';
import type { SuspensionDetail } from '../agents/service.js';

export const MCP_PATH = '/mcp';

/** The MCP tool that decides approvals (a dot: no agent can be called that). */
export const DECIDE_TOOL = 'hangar.decide_approval';

const decideInput = {
  agent: z.string().min(1).describe('The agent whose run waits'),
  thread_id: z.string().min(1).describe('The thread named by the suspension'),
  approval_id: z.string().min(1).describe('The approval to decide'),
  approved: z.boolean().describe('true continues the run, false discards it'),
  context: z.record(z.string(), z.unknown()).optional().describe('Merged into the run state when approved'),
  reason: z.string().optional().describe('Why it was rejected'),
};

interface ToolCallLog {
  ctx: HangarContext;
  agent: string;
  operation: string;
  principal: string | undefined;
  input: unknown;
}

/**
 * A tool result for what a run produced: its answer, or the approval it now waits for. Each call
 * is one invocation-log record, as a REST call is (an agent error is a failed record).
 */
function runResult(log: ToolCallLog, run: () => Promise<unknown>) {
  const started = Date.now();
  const result = run().then(
    (response) => {
      const text = (response as { response?: unknown }).response;
      return {
        content: [{ type: 'text' as const, text: typeof text === 'string' ? text : JSON.stringify(response) }],
        structuredContent: response as Record<string, unknown>,
      };
    },
    (err: unknown) => {
      if (err instanceof HttpError && err.status === 202) {
        const { status: _suspended, ...approval } = err.detail as unknown as SuspensionDetail;
        return {
          content: [
            {
              type: 'text' as const,
              text: `Waiting for a human approval: ${approval.message} (approval ${approval.approval_id} on thread ${approval.thread_id}; decide with hangar.decide_approval or POST ${approval.links.approve})`,
            },
          ],
          structuredContent: { status: 'input-required', approval },
        };
      }
      const text = err instanceof HttpError && typeof err.detail !== 'string' ? JSON.stringify(err.detail) : errorMessage(err);
      return { content: [{ type: 'text' as const, text }], isError: true as const };
    },
  );
  return result.then((outcome) => {
    const failed = 'isError' in outcome;
    log.ctx.invocations?.record({
      resource: 'agent',
      name: log.agent,
      operation: log.operation,
      principal: log.principal ?? 'anonymous',
      started,
      ok: !failed,
      http_status: 200,
      input: log.input,
      output: failed ? undefined : outcome.structuredContent,
      error: failed ? outcome.content[0]!.text : null,
    });
    return outcome;
  });
}

const toolInput = {
  message: z.string().min(1).describe('What to ask the agent'),
  thread_id: z.string().min(1).optional().describe('Continue this conversation thread'),
};

/**
 * The SDK, loaded by the first MCP request rather than at every start: it takes ~250 ms to load,
 * a quarter of a cold start, for a route most sessions never call.
 */
let sdk: Promise<[typeof import('@modelcontextprotocol/sdk/server/mcp.js'), typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js')]> | undefined;
const loadSdk = () => (sdk ??= Promise.all([import('@modelcontextprotocol/sdk/server/mcp.js'), import('@modelcontextprotocol/sdk/server/streamableHttp.js')]));

/** An MCP server exposing the agents registered right now. */
export async function buildMcpServer(ctx: HangarContext, principal?: string, viewer: string | undefined = principal): Promise<McpServer> {
  const [{ McpServer }] = await loadSdk();
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
      ({ message, thread_id }, extra) =>
        runResult({ ctx, agent: agent.name, operation: 'mcp', principal, input: { message, thread_id } }, () =>
          runtimeOf(ctx).service.invoke(
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
            undefined,
            principal,
            { source: 'mcp' },
          ),
        ),
    );
  }
  server.registerTool(
    DECIDE_TOOL,
    {
      title: 'Decide a human approval',
      description: 'Approve or reject a Hangar agent run that waits for a human approval (named by a tool result with status input-required)',
      inputSchema: decideInput,
    },
    ({ agent, thread_id, approval_id, approved, context, reason }) =>
      runResult({ ctx, agent, operation: approved ? 'mcp:approve' : 'mcp:reject', principal, input: { thread_id, approval_id, approved, context, reason } }, () => {
        const service = runtimeOf(ctx).service;
        return approved
          ? service.approve(agent, thread_id, { approval_id, approved: true, context: context ?? {} }, viewer)
          : service.reject(agent, thread_id, { approval_id, reason: reason ?? null }, viewer);
      }),
  );
  return server;
}

/** A JSON-RPC error without an id, as the SDK answers transport-level refusals. */
const transportError = (message: string) => ({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });

/**
 * The DNS-rebinding guard for the names this server answers to (IPv6 in brackets): the logic and
 * answers of the SDK's `hostHeaderValidation` middleware (which is express-only), as a hook.
 */
export function mcpHostValidation(ctx: HangarContext): onRequestHookHandler {
  const names = new Set([...allowedHostNames(ctx.settings)].map((name) => (name.includes(':') ? `[${name}]` : name)));
  return function mcpHostValidation(req, reply, done) {
    const hostHeader = req.headers.host;
    if (!hostHeader) {
      reply.code(403).send(transportError('Missing Host header'));
      return;
    }
    let hostname: string;
    try {
      // The URL parser handles IPv4, IPv6 (kept in brackets) and names, and drops the port.
      hostname = new URL(`http://${hostHeader}`).hostname;
    } catch {
      reply.code(403).send(transportError(`Invalid Host header: ${hostHeader}`));
      return;
    }
    if (!names.has(hostname)) {
      reply.code(403).send(transportError(`Invalid Host: ${hostname}`));
      return;
    }
    done();
  };
}

/** Handle one streamable-HTTP request (POST; GET and DELETE need sessions, which we don't keep). */
export async function handleMcp(ctx: HangarContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (req.method !== 'POST') {
    reply.code(405).header('Allow', 'POST').send(transportError('this MCP endpoint is stateless: use POST'));
    return;
  }
  const [, { StreamableHTTPServerTransport }] = await loadSdk();
  const server = await buildMcpServer(ctx, req.principal, viewerOf(req, ctx.settings));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  // From here the SDK owns the node response (JSON or an SSE stream).
  reply.hijack();
  const res = reply.raw;
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(req.raw, res, req.body);
  } catch (err) {
    // A hijacked reply never reaches the error handler: answer (or end) the response here.
    ctx.log.error(`${req.method} ${MCP_PATH} failed: ${errorMessage(err)}`);
    if (!res.headersSent) {
      const text = JSON.stringify(transportError('internal server error'));
      res.writeHead(500, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    } else if (!res.writableEnded) {
      res.end();
    }
  }
}

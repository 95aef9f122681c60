/**
 * Model Context Protocol over streamable HTTP at /mcp, with the official TypeScript SDK: every
 * registered agent is a tool (name = agent name, description from its card, input a message and an
 * optional thread), so MCP hosts (IDEs, desktop assistants) can call Hangar agents.
 *
 * Decisions:
 * - Sessions, as the streamable-HTTP transport defines them: `initialize` opens one (its id comes
 *   back in `Mcp-Session-Id`); later requests name it, GET opens its server-to-client stream and
 *   DELETE ends it; an unknown or another principal's id is a 404, and a session idle for 30 minutes
 *   is closed. A session's tools follow the registry: an agent discovered a second ago is a tool on
 *   the next `tools/list` (the client is told with `tools/list_changed`). A POST that names no
 *   session and is not `initialize` is still answered statelessly, by a server built for it alone.
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
 *   agent names cannot, so it never shadows an agent.
 * - Elicitation where the client declared it: in a session whose client has the `elicitation`
 *   capability, a suspended run asks the person through the client (a form with `approved` and
 *   `reason`) while the tool call stays open; accept with approved continues the run (and asks
 *   again at its next approval), accept without it or decline rejects it with the reason, cancel
 *   leaves it waiting and answers the input-required result above.
 */
import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { z } from 'zod';
import type { RunEvent } from '../agents/events.js';
import type { Agent } from '../agents/kind.js';
import { isSuspension, type SuspensionDetail } from '../agents/service.js';
import { allowedHostNames } from '../http/security.js';
import type { HangarContext } from '../kernel/context.js';
import { errorMessage, HangarError } from '../kernel/errors.js';
import { viewerOf } from '../kernel/ownership.js';
import type { Registry } from '../kernel/registry.js';

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
  /** Who the caller acts as for records (approvals): see core/kernel/ownership.ts. */
  viewer?: string;
  input: unknown;
}

/**
 * A tool result for what a run produced: its answer, or the approval it now waits for. Each call
 * is one invocation-log record, as a REST call is (an agent error is a failed record).
 */
function runResult(log: ToolCallLog, run: () => Promise<unknown>, elicit?: Elicit) {
  const started = Date.now();
  const result = settleApprovals(run, log, elicit).then(
    (response) => {
      const text = (response as { response?: unknown }).response;
      return {
        content: [{ type: 'text' as const, text: typeof text === 'string' ? text : JSON.stringify(response) }],
        structuredContent: response as Record<string, unknown>,
      };
    },
    (err: unknown) => {
      if (isSuspension(err)) {
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
      const text = err instanceof HangarError && typeof err.detail !== 'string' ? JSON.stringify(err.detail) : errorMessage(err);
      return { content: [{ type: 'text' as const, text }], isError: true as const };
    },
  );
  return result.then((outcome) => {
    const failed = 'isError' in outcome;
    log.ctx.services.find('invocations')?.record({
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

/** Asks the person about a pending approval through the MCP client; null: they did not decide. */
type Elicit = (
  approval: Omit<SuspensionDetail, 'status'>,
) => Promise<{ approved: true } | { approved: false; reason: string | null } | null>;

/**
 * Runs `run`; while it suspends for an approval and the client can be asked, asks, and continues
 * (approve) or ends (reject) the run with the answer. Without an answer the suspension stands.
 */
async function settleApprovals(run: () => Promise<unknown>, log: ToolCallLog, elicit?: Elicit): Promise<unknown> {
  let next = run;
  for (;;) {
    try {
      return await next();
    } catch (err) {
      if (!(elicit && isSuspension(err))) throw err;
      const { status: _suspended, ...approval } = err.detail as unknown as SuspensionDetail;
      const answer = await elicit(approval);
      if (!answer) throw err;
      const service = log.ctx.services.get('agents').service;
      const agent = log.agent;
      next = answer.approved
        ? () => service.approve(agent, approval.thread_id, { approval_id: approval.approval_id, approved: true, context: {} }, log.viewer)
        : () => service.reject(agent, approval.thread_id, { approval_id: approval.approval_id, reason: answer.reason }, log.viewer);
    }
  }
}

/** The form an approval is asked with (MCP elicitation: a flat object of primitive fields). */
const APPROVAL_FORM = {
  type: 'object' as const,
  properties: {
    approved: { type: 'boolean' as const, title: 'Approve', description: 'Continue the run (true) or reject it (false)' },
    reason: { type: 'string' as const, title: 'Reason', description: 'Why it is rejected (optional)' },
  },
  required: ['approved'],
};

const toolInput = {
  message: z.string().min(1).describe('What to ask the agent'),
  thread_id: z.string().min(1).optional().describe('Continue this conversation thread'),
};

/**
 * The SDK, loaded by the first MCP request rather than at every start: it takes ~250 ms to load,
 * a quarter of a cold start, for a route most sessions never call.
 */
let sdk:
  | Promise<[typeof import('@modelcontextprotocol/sdk/server/mcp.js'), typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js')]>
  | undefined;
const loadSdk = () =>
  (sdk ??= Promise.all([import('@modelcontextprotocol/sdk/server/mcp.js'), import('@modelcontextprotocol/sdk/server/streamableHttp.js')]));

/**
 * An MCP server exposing the registered agents. `refresh()` brings its tools in line with the
 * registry (registering and removing tools makes the SDK tell a connected client
 * `tools/list_changed`).
 */
export async function buildMcpServer(
  ctx: HangarContext,
  principal?: string,
  viewer: string | undefined = principal,
): Promise<McpServer & { refresh(): void }> {
  const [{ McpServer }] = await loadSdk();
  const server = new McpServer({ name: 'hangar', version: ctx.version }) as McpServer & { refresh(): void };
  // Asked only when the client said it can answer (its `elicitation` capability).
  const elicit: Elicit = async (approval) => {
    if (!server.server.getClientCapabilities()?.elicitation) return null;
    const answer = await server.server.elicitInput({
      message: `${approval.message} (agent run on thread ${approval.thread_id}, approval ${approval.approval_id})`,
      requestedSchema: APPROVAL_FORM,
    });
    if (answer.action === 'cancel') return null;
    const content = (answer.content ?? {}) as { approved?: unknown; reason?: unknown };
    if (answer.action === 'accept' && content.approved === true) return { approved: true };
    return {
      approved: false,
      reason:
        typeof content.reason === 'string' && content.reason
          ? content.reason
          : answer.action === 'decline'
            ? 'declined in the MCP client'
            : null,
    };
  };
  const tools = new Map<string, { remove(): void }>();
  const register = (agent: Agent) =>
    server.registerTool(
      agent.name,
      {
        title: agent.slug,
        // The description its agent card shows.
        description: agent.description || `Run the Hangar agent ${agent.name}`,
        inputSchema: toolInput,
      },
      ({ message, thread_id }, extra) =>
        runResult(
          { ctx, agent: agent.name, operation: 'mcp', principal, viewer, input: { message, thread_id } },
          () =>
            ctx.services.get('agents').service.invoke(
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
              toolProgress(extra),
              principal,
              { source: 'mcp' },
            ),
          elicit,
        ),
    );
  server.refresh = () => {
    const live = new Map(ctx.registry.list<Agent>('agent').map(({ definition }) => [definition.name, definition]));
    for (const [name, tool] of tools) {
      if (!live.has(name)) {
        tool.remove();
        tools.delete(name);
      }
    }
    for (const [name, agent] of live) if (!tools.has(name)) tools.set(name, register(agent));
  };
  server.refresh();
  server.registerTool(
    DECIDE_TOOL,
    {
      title: 'Decide a human approval',
      description:
        'Approve or reject a Hangar agent run that waits for a human approval (named by a tool result with status input-required)',
      inputSchema: decideInput,
    },
    ({ agent, thread_id, approval_id, approved, context, reason }) =>
      runResult(
        {
          ctx,
          agent,
          operation: approved ? 'mcp:approve' : 'mcp:reject',
          principal,
          viewer,
          input: { thread_id, approval_id, approved, context, reason },
        },
        () => {
          const service = ctx.services.get('agents').service;
          return approved
            ? service.approve(agent, thread_id, { approval_id, approved: true, context: context ?? {} }, viewer)
            : service.reject(agent, thread_id, { approval_id, reason: reason ?? null }, viewer);
        },
      ),
  );
  return server;
}

/** What a tool handler gets from the SDK that progress needs: the request's `_meta` and a way to notify. */
interface ProgressExtra {
  _meta?: { progressToken?: string | number };
  sendNotification(notification: {
    method: 'notifications/progress';
    params: { progressToken: string | number; progress: number; message?: string };
  }): Promise<void>;
}

/**
 * The agent's tool calls as MCP progress, when the client asked for progress (a `progressToken`
 * in the call's `_meta`): one `notifications/progress` per tool_start and tool_end, `progress`
 * counting them, `message` saying which call and how it went (MCP progress carries text only).
 */
function toolProgress(extra: ProgressExtra): ((event: RunEvent) => void) | undefined {
  const token = extra._meta?.progressToken;
  if (token === undefined) return undefined;
  let progress = 0;
  return (event) => {
    if (event.type !== 'tool_start' && event.type !== 'tool_end') return;
    const args = JSON.stringify(event.arguments);
    const message =
      event.type === 'tool_start'
        ? `tool ${event.name} (${event.call_id}) started with ${args}`
        : event.error !== undefined
          ? `tool ${event.name} (${event.call_id}) failed in ${Math.round(event.duration_ms)} ms: ${event.error}`
          : `tool ${event.name} (${event.call_id}) finished in ${Math.round(event.duration_ms)} ms: ${JSON.stringify(event.result)}`;
    // A client gone meanwhile is the run's business (its signal), not the notification's.
    extra
      .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: ++progress, message } })
      .catch(() => {});
  };
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

/** A live MCP session: its transport and server, whose principal it serves, when it was last used. */
interface McpSession {
  transport: import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport;
  server: McpServer & { refresh(): void };
  principal: string | undefined;
  lastUsed: number;
}

const SESSION_IDLE_MS = 30 * 60_000;
const SESSION_HEADER = 'mcp-session-id';

/**
 * The open MCP sessions of one server, provided lazily (`mcpSessions`): built by the first MCP
 * request, it then keeps every session's tools in line with the registry and closes idle sessions.
 */
export class McpSessions {
  readonly #open = new Map<string, McpSession>();
  readonly #sweep: NodeJS.Timeout;
  readonly #unfollow: () => void;

  constructor(registry: Registry) {
    const refresh = () => {
      for (const session of this.#open.values()) session.server.refresh();
    };
    registry.on('change', refresh);
    this.#unfollow = () => registry.off('change', refresh);
    this.#sweep = setInterval(() => {
      for (const [id, session] of this.#open) if (Date.now() - session.lastUsed > SESSION_IDLE_MS) void this.close(id, session);
    }, 60_000);
    this.#sweep.unref();
  }

  get(id: string): McpSession | undefined {
    return this.#open.get(id);
  }

  add(id: string, session: McpSession): void {
    this.#open.set(id, session);
  }

  /** A transport that closed by itself: its session goes, unless the id names another one by now. */
  forget(id: string, transport: McpSession['transport']): void {
    if (this.#open.get(id)?.transport === transport) this.#open.delete(id);
  }

  async close(id: string, session: McpSession): Promise<void> {
    this.#open.delete(id);
    await session.transport.close().catch(() => {});
    await session.server.close().catch(() => {});
  }

  /** At shutdown: every session, and the watching. */
  async closeAll(): Promise<void> {
    clearInterval(this.#sweep);
    this.#unfollow();
    await Promise.all([...this.#open].map(([id, session]) => this.close(id, session)));
  }
}

declare module '../kernel/services.js' {
  interface ServiceMap {
    mcpSessions: McpSessions;
  }
}

const isInitialize = (body: unknown) =>
  (Array.isArray(body) ? body : [body]).some(
    (m) => typeof m === 'object' && m !== null && (m as { method?: unknown }).method === 'initialize',
  );

/** Handle one streamable-HTTP request: a session's, one that opens a session, or a stateless POST. */
export async function handleMcp(ctx: HangarContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const sessionId = req.headers[SESSION_HEADER];
  const open = ctx.services.get('mcpSessions');
  if (typeof sessionId === 'string') {
    const session = open.get(sessionId);
    // Someone else's session answers like an unknown one.
    if (!session || session.principal !== req.principal) {
      reply.code(404).send({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null });
      return;
    }
    session.lastUsed = Date.now();
    reply.hijack();
    await serve(ctx, req, reply.raw, () => session.transport.handleRequest(req.raw, reply.raw, req.body));
    if (req.method === 'DELETE') await open.close(sessionId, session);
    return;
  }
  if (req.method !== 'POST') {
    reply.code(400).send(transportError('name a session (Mcp-Session-Id) or open one with initialize'));
    return;
  }
  const [, { StreamableHTTPServerTransport }] = await loadSdk();
  const server = await buildMcpServer(ctx, req.principal, viewerOf(req, ctx.settings));
  if (isInitialize(req.body)) {
    const principal = req.principal;
    const transport: McpSession['transport'] = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        open.add(id, { transport, server, principal, lastUsed: Date.now() });
      },
    });
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id) open.forget(id, transport);
    };
    await server.connect(transport);
    reply.hijack();
    await serve(ctx, req, reply.raw, () => transport.handleRequest(req.raw, reply.raw, req.body));
    return;
  }
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  // From here the SDK owns the node response (JSON or an SSE stream).
  reply.hijack();
  const res = reply.raw;
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await serve(ctx, req, res, () => transport.handleRequest(req.raw, res, req.body));
}

/** Runs the SDK's handling of a hijacked reply; a failure is answered (or the response ended) here. */
async function serve(ctx: HangarContext, req: FastifyRequest, res: FastifyReply['raw'], handle: () => Promise<void>): Promise<void> {
  try {
    await handle();
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

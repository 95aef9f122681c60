/**
 * MCP servers' tools for agents (`mcp.servers` in the settings), through the official MCP
 * TypeScript SDK's client. An agent lists `mcp:<server>/*` (every tool of the server) or
 * `mcp:<server>/<tool>`; the model sees each as `<server>__<tool>` (namespaced, as Claude Code's
 * `mcp__server__tool`, within the protocol's 64 characters), with the server's JSON Schema.
 *
 * Supervision, as Mastra's `MCPClient` and Claude Desktop manage servers:
 * - started on first use (a run that lists its tools), never at start-up; the SDK is imported then;
 * - a stdio server's stderr goes to the log line by line, named by the server;
 * - a server that fails to start is an error in its status and in the run that needed it (502
 *   `HANGAR_AGENT_MCP_UNAVAILABLE`), never a crash; a later use tries again once its backoff
 *   has passed (0.5 s doubling to 30 s), and fails at once with the last error before that;
 * - a server that goes away (a stdio process exiting, a connection closing) is restarted after
 *   the same backoff; a call in flight then fails, and the model reads that as the call's error;
 * - all are stopped when Hangar stops.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { z } from 'zod';
import { fail } from '../kernel/errors.js';
import type { Logger } from '../kernel/log.js';
import type { Settings } from '../kernel/settings.js';
import { expandEnvRefs } from '../lib/env-refs.js';
import { type AnyTool, MCP_TOOL_REF, withParameters } from './tools.js';

export type McpServerConfig = Settings['mcp']['servers'][string];

export type McpServerState = 'idle' | 'starting' | 'ready' | 'failed' | 'stopped';

/** A server as `/api/v1/status` shows it. */
export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  state: McpServerState;
  error: string | null;
  /** Times it was started again after it went away or failed. */
  restarts: number;
  pid: number | null;
  tools: string[];
}

interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

const MAX_BACKOFF_MS = 30_000;
const FIRST_BACKOFF_MS = 500;

/** One configured server and its connection. */
class McpServerConnection {
  state: McpServerState = 'idle';
  error: string | null = null;
  restarts = 0;
  tools: McpToolInfo[] = [];
  private client: Client | undefined;
  private pid: number | null = null;
  private connecting: Promise<Client> | undefined;
  private failures = 0;
  private retryAt = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Hangar-side tools, rebuilt when the server's list changes. */
  private wrapped = new Map<string, AnyTool>();

  constructor(
    readonly name: string,
    private readonly config: McpServerConfig,
    private readonly log: Logger,
    private readonly version: string,
  ) {}

  get transport(): 'stdio' | 'http' {
    return 'command' in this.config ? 'stdio' : 'http';
  }

  status(): McpServerStatus {
    return {
      name: this.name,
      transport: this.transport,
      state: this.state,
      error: this.error,
      restarts: this.restarts,
      pid: this.pid,
      tools: this.tools.map((t) => t.name),
    };
  }

  /** The connected client: connects on first use, or again after a failure once its backoff passed. */
  ensure(): Promise<Client> {
    if (this.state === 'stopped') return Promise.reject(this.unavailable('Hangar is stopping'));
    if (this.client && this.state === 'ready') return Promise.resolve(this.client);
    if (this.connecting) return this.connecting;
    if (this.state === 'failed' && Date.now() < this.retryAt) return Promise.reject(this.unavailable(this.error ?? 'failed'));
    if (this.state === 'failed') this.restarts++;
    this.connecting = this.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  /** Hangar tools for the server's tools (all of them for `*`). */
  async toolsFor(pattern: string, agent: string, ref: string): Promise<AnyTool[]> {
    await this.ensure();
    if (pattern === '*') return this.tools.map((t) => this.wrap(t));
    const tool = this.tools.find((t) => t.name === pattern);
    if (!tool)
      throw fail('HANGAR_AGENT_MCP_NO_TOOL', { agent, ref, server: this.name, tools: this.tools.map((t) => t.name).join(', ') || 'none' });
    return [this.wrap(tool)];
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => {});
  }

  private unavailable(problem: string) {
    return fail('HANGAR_AGENT_MCP_UNAVAILABLE', { server: this.name, problem });
  }

  private async connect(): Promise<Client> {
    this.state = 'starting';
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const client = new Client({ name: 'hangar', version: this.version });
    try {
      const transport = await this.transportOf();
      client.onclose = () => this.closed(client);
      await client.connect(transport);
      this.pid = 'pid' in transport && typeof transport.pid === 'number' ? transport.pid : null;
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : {});
        tools.push(
          ...page.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema as Record<string, unknown> })),
        );
        cursor = page.nextCursor;
      } while (cursor);
      this.tools = tools;
      this.wrapped.clear();
      this.client = client;
      this.state = 'ready';
      this.error = null;
      this.failures = 0;
      this.log.info(`MCP server '${this.name}' is ready with ${tools.length} tools`);
      return client;
    } catch (err) {
      const problem = err instanceof Error ? err.message : String(err);
      client.onclose = undefined;
      await client.close().catch(() => {});
      this.failed(`could not start: ${problem}`);
      throw this.unavailable(this.error!);
    }
  }

  private async transportOf() {
    if ('command' in this.config) {
      const { StdioClientTransport, getDefaultEnvironment } = await import('@modelcontextprotocol/sdk/client/stdio.js');
      const env: Record<string, string> = { ...getDefaultEnvironment() };
      for (const [key, value] of Object.entries(this.config.env)) env[key] = this.secret(`env.${key}`, value);
      const transport = new StdioClientTransport({
        command: this.config.command,
        args: this.config.args,
        env,
        ...(this.config.cwd ? { cwd: this.config.cwd } : {}),
        stderr: 'pipe',
      });
      let partial = '';
      transport.stderr?.on('data', (chunk: Buffer) => {
        const lines = (partial + chunk.toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) if (line.trim()) this.log.info(`[mcp:${this.name}] ${line}`);
      });
      return transport;
    }
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(this.config.headers)) headers[key] = this.secret(`headers.${key}`, value);
    return new StreamableHTTPClientTransport(new URL(this.config.url), { requestInit: { headers } });
  }

  private secret(field: string, value: string): string {
    try {
      return expandEnvRefs(value);
    } catch (err) {
      throw new Error(`mcp.servers.${this.name}.${field}: ${(err as Error).message}`);
    }
  }

  /** The connection went away while it was in use: restart after the backoff. */
  private closed(client: Client): void {
    if (client !== this.client || this.state === 'stopped') return;
    this.client = undefined;
    this.pid = null;
    this.failed(this.transport === 'stdio' ? 'the server process exited' : 'the connection closed');
    this.log.warn(`MCP server '${this.name}' went away (${this.error}); restarting in ${this.retryAt - Date.now()} ms`);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // A timer may fire a millisecond before Date.now() reaches retryAt (timers use another clock):
      // the backoff has passed when the timer says so, or ensure() would refuse and nothing retries.
      this.retryAt = Math.min(this.retryAt, Date.now());
      if (this.state === 'failed') this.ensure().catch(() => {});
    }, this.retryAt - Date.now());
    this.timer.unref();
  }

  private failed(problem: string): void {
    this.state = 'failed';
    this.error = problem;
    this.failures++;
    this.retryAt = Date.now() + Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (this.failures - 1));
  }

  private wrap(info: McpToolInfo): AnyTool {
    const existing = this.wrapped.get(info.name);
    if (existing) return existing;
    const name = `${this.name}__${info.name}`.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64);
    let input: z.ZodType;
    try {
      input = z.fromJSONSchema(info.inputSchema as Parameters<typeof z.fromJSONSchema>[0]);
    } catch {
      // A schema zod cannot read: the server validates the arguments itself.
      input = z.looseObject({});
    }
    const tool: AnyTool = {
      name,
      description: info.description || `${info.name} (MCP server ${this.name})`,
      input,
      needsApproval: this.config.needsApproval,
      run: async (args: unknown, ctx) => {
        const client = await this.ensure();
        const result = await client.callTool({ name: info.name, arguments: args as Record<string, unknown> }, undefined, {
          signal: ctx.signal,
        });
        const text = textOf(result.content);
        if (result.isError) throw new Error(text || 'the MCP tool reported an error');
        return result.structuredContent ?? text;
      },
    };
    // The model gets the server's own JSON Schema, not a round trip through zod.
    const parameters = { ...info.inputSchema };
    delete parameters.$schema;
    withParameters(tool, { type: 'object', properties: {}, ...parameters });
    this.wrapped.set(info.name, tool);
    return tool;
  }
}

function textOf(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((part: { type?: string; text?: string }) => (part.type === 'text' ? (part.text ?? '') : `[${part.type ?? 'content'}]`))
    .join('\n');
}

/** Every configured server, supervised; the `mcp` part of the agent runtime. */
export class McpServers {
  private readonly servers = new Map<string, McpServerConnection>();

  constructor(config: Settings['mcp'], log: Logger, version: string) {
    for (const [name, server] of Object.entries(config.servers))
      this.servers.set(name, new McpServerConnection(name, server, log, version));
  }

  /** The tools an agent's `mcp:<server>/<tool|*>` entry names. */
  resolve(ref: string, agent: string): Promise<AnyTool[]> {
    const match = MCP_TOOL_REF.exec(ref);
    const server = match ? this.servers.get(match[1]!) : undefined;
    if (!match || !server) return Promise.reject(fail('HANGAR_AGENT_MCP_UNKNOWN_SERVER', { agent, ref, server: match?.[1] ?? ref }));
    return server.toolsFor(match[2]!, agent, ref);
  }

  status(): McpServerStatus[] {
    return [...this.servers.values()].map((s) => s.status());
  }

  async stop(): Promise<void> {
    await Promise.all([...this.servers.values()].map((s) => s.stop()));
  }
}

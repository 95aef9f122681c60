/**
 * The tools of a supervised agent's own module, as the server's tool loop sees them. The loop
 * (model calls, argument validation, approvals, events) runs on the server, but a tool's `run` is
 * the drop-in's code (and so is its `needsApproval` rule): it runs in the host, in the module
 * instance the agent's `run` lives in, so state the two share (a counter, a cache, a client) is one and the same, and a tool stuck in a loop
 * costs the host, not the server. Tools of `tools/` drop-ins run on the server, as for any agent.
 */
import type { AgentRef } from '../engine.js';
import { resolveListedTools, type ToolResolvers } from '../listed-tools.js';
import type { AnyTool, ToolContext } from '../tools.js';
import { type FromHost, rebuildError, type ToHostMessage } from './protocol.js';

/** Where a call's messages to its host go (the supervisor stamps the call on them). */
export interface HostSender {
  send(message: ToHostMessage): void;
}

export class HostTools {
  readonly #ref: AgentRef;
  readonly #channel: HostSender;
  readonly #resolvers: ToolResolvers;
  readonly #pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  #next = 0;

  constructor(ref: AgentRef, channel: HostSender, resolvers: ToolResolvers) {
    this.#ref = ref;
    this.#channel = channel;
    this.#resolvers = resolvers;
  }

  /**
   * The tools for one `ctx.model.run` of the host: those it named (functions cannot cross threads,
   * so they go by name), or, when it named none, the agent's own list, as inline.
   */
  forRun(names: string[] | undefined): Promise<AnyTool[]> {
    if (names) return Promise.all(names.map((name) => this.#named(name)));
    return resolveListedTools(this.#ref, this.#resolvers, (tool) => this.#inHost(tool));
  }

  /** A tool's answer from the host. */
  settle(message: Extract<FromHost, { type: 'tool-done' }>): void {
    const waiting = this.#pending.get(message.id);
    this.#pending.delete(message.id);
    if (message.error) waiting?.reject(rebuildError(message.error));
    else waiting?.resolve(message.value);
  }

  /** The node call ended: no tool answer will come. */
  close(reason: Error): void {
    for (const waiting of this.#pending.values()) waiting.reject(reason);
    this.#pending.clear();
  }

  async #named(name: string): Promise<AnyTool> {
    for (const tool of this.#ref.definition.tools ?? []) {
      if (typeof tool !== 'string' && tool.name === name) return this.#inHost(tool);
      if (tool === name) break;
    }
    const found = this.#resolvers.resolveTool?.(name);
    if (found) return found;
    // A tool of an `mcp:` entry the agent lists goes by the name the model sees.
    const mcp = (await resolveListedTools(this.#ref, this.#resolvers)).find((tool) => tool.name === name);
    if (mcp) return mcp;
    throw new Error(
      `tool '${name}' passed to ctx.model.run is neither one of agent '${this.#ref.name}''s tools nor a tools/ drop-in (a supervised agent's tools go by name)`,
    );
  }

  /**
   * The server's copy of the tool (its schemas and limits), with `run` and a `needsApproval` rule
   * sent to the host: the rule is the agent's code too, so it runs in the module instance `run`
   * does, and the tool loop bounds it by the tool's `timeout_ms` as it does a `tools/` drop-in's.
   */
  #inHost(tool: AnyTool): AnyTool {
    const rule = tool.needsApproval;
    return {
      ...tool,
      run: (args: unknown, ctx: ToolContext) => this.#call(tool, 'run', args, ctx),
      needsApproval:
        typeof rule === 'function'
          ? (args: unknown, ctx: ToolContext) => this.#call(tool, 'needsApproval', args, ctx) as Promise<boolean>
          : rule,
    };
  }

  #call(tool: AnyTool, fn: 'run' | 'needsApproval', args: unknown, ctx: ToolContext): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const id = this.#next++;
      this.#pending.set(id, { resolve, reject });
      const onAbort = () =>
        this.#channel.send({ type: 'tool-abort', id, reason: String((ctx.signal.reason as Error)?.message ?? 'aborted') });
      if (ctx.signal.aborted) onAbort();
      else ctx.signal.addEventListener('abort', onAbort, { once: true });
      const { toolCallId, agent, input, threadId, workspace, messages } = ctx;
      this.#channel.send({
        type: 'run-tool',
        id,
        name: tool.name,
        fn,
        args,
        context: { toolCallId, agent, input, threadId, workspace, messages },
      });
    });
  }
}

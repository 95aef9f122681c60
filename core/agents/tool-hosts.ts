/**
 * Where `tools/` drop-ins run: each loaded tool drop-in has its own supervised host
 * (core/kernel/dropin-host.ts), so a tool that loops, allocates without bound or never returns
 * costs its own thread, never the server. The tool loop that calls it (model, validation,
 * approvals, events, its `timeout_ms`) stays on the server; `hosted` gives the loop the server's
 * copy of the tool with `run` sent to the host. A tool that asks for `isolation: 'inline'`, and
 * one defined in an agent's own module (that runs in the agent's host), are left as they are.
 */
import { DropInHosts, type DropInHostsOptions, hostedSource, isLoadedDropIn } from '../kernel/dropin-host.js';
import type { HostedTask } from '../kernel/dropin-host-protocol.js';
import type { Registry } from '../kernel/registry.js';
import type { AnyTool, ToolContext } from './tools.js';
import type { WorkspaceDocument } from './types.js';

/** One call of a tool's `run`, as the host runs it. */
export interface ToolTask extends HostedTask {
  /** Which of the tool's functions: its `run`, or its `needsApproval` rule (a boolean answer). */
  call: 'run' | 'needsApproval';
  args: unknown;
  context: Omit<ToolContext, 'signal' | 'documents'>;
}

export interface ToolHostsOptions extends Pick<DropInHostsOptions, 'watchdogMs' | 'onRestart' | 'onWarmError'> {
  registry: Registry;
  root: string;
  /** `agents.maxHeapMb` (a tool is an agent's), unless the tool's `max_heap_mb` says otherwise. */
  maxHeapMb: number;
}

export class ToolHosts {
  readonly #options: ToolHostsOptions;
  readonly #hosts: DropInHosts<ToolTask>;
  /** The hosted copy of each loaded definition, so every lookup of one build gives the same tool. */
  readonly #hosted = new WeakMap<AnyTool, AnyTool>();

  constructor(options: ToolHostsOptions) {
    this.#options = options;
    this.#hosts = new DropInHosts<ToolTask>({ ...options, kind: 'tool', entry: 'core/agents/tool-worker.ts' });
  }

  /** `tool` as the server's tool loop should call it: its `run` in its host when it is a supervised drop-in. */
  hosted<T extends AnyTool | undefined>(tool: T): T {
    if (!tool || tool.isolation === 'inline') return tool;
    if (!isLoadedDropIn(this.#options.registry, this.#options.root, 'tool', tool.name, tool)) return tool;
    let hosted = this.#hosted.get(tool);
    if (!hosted) {
      const rule = tool.needsApproval;
      hosted = {
        ...tool,
        run: (args: unknown, ctx: ToolContext) => this.#run(tool, 'run', args, ctx),
        // The rule is the tool's code too: it runs in the same host, under the same limits.
        needsApproval:
          typeof rule === 'function'
            ? (args: unknown, ctx: ToolContext) => this.#run(tool, 'needsApproval', args, ctx) as Promise<boolean>
            : rule,
      };
      this.#hosted.set(tool, hosted);
    }
    return hosted as T;
  }

  /** Start the tool's host ahead of its first call (discovery loaded or reloaded it): a tool's `timeout_ms` is often short. */
  prepare(tool: AnyTool): void {
    if (this.hosted(tool) !== tool) this.#hosts.prepare(tool.name, this.#heapOf(tool));
  }

  forget(name: string): void {
    this.#hosts.forget(name);
  }

  status() {
    return this.#hosts.status();
  }

  close(): Promise<void> {
    return this.#hosts.close();
  }

  #heapOf(tool: AnyTool): number {
    return tool.max_heap_mb ?? this.#options.maxHeapMb;
  }

  #run(tool: AnyTool, call: ToolTask['call'], args: unknown, ctx: ToolContext): Promise<unknown> {
    const source = hostedSource(this.#options.registry, this.#options.root, 'tool', tool.name, tool);
    if (!source) throw new Error(`tool '${tool.name}' is not a loaded drop-in`);
    const { toolCallId, agent, input, threadId, workspace, messages } = ctx;
    const { signal } = ctx;
    const work = this.#hosts.run({
      name: tool.name,
      heapMb: this.#heapOf(tool),
      code: source.code,
      signal,
      task: {
        name: tool.name,
        file: source.file,
        hash: source.hash,
        call,
        args,
        context: { toolCallId, agent, input, threadId, workspace, messages },
      },
      onCall: (method, callArgs) =>
        method === 'documents'
          ? ctx.documents(String(callArgs[0])).then((docs): WorkspaceDocument[] => docs)
          : Promise.reject(new Error(`unknown host call '${method}'`)),
    });
    // The caller is answered when the signal aborts, whether or not the host has stopped yet.
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }
}

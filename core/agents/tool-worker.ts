/**
 * The host thread a `tools/` drop-in's `run` runs in (tool-hosts.ts starts it with a heap cap). The
 * tool loop stays on the server (the model, argument and result validation, approvals, events);
 * only `run` is here, with the context it gets on the server: `documents` is answered by the server.
 */
import '../kernel/host-thread.js';
import type { MessagePort } from 'node:worker_threads';
import * as zod from 'zod';
import type { HostedReply, WarmTask } from '../kernel/dropin-host-protocol.js';
import { definitionOf, serveHosted } from '../kernel/dropin-host-worker.js';
import * as sdk from '../sdk.js';
import type { ToolTask } from './tool-hosts.js';
import type { ToolContext } from './tools.js';
import type { WorkspaceDocument } from './types.js';

const provided: Record<string, unknown> = { hangar: sdk, zod, 'zod/v4': zod };

export default function runTool(task: (ToolTask & { port: MessagePort }) | WarmTask): Promise<HostedReply> {
  // Loading this module (the SDK, zod) was the work; nothing else to do.
  if ('warm' in task) return Promise.resolve({ value: undefined });
  return serveHosted(task, provided, async (exports, io) => {
    const definition = definitionOf(exports);
    const run = task.call === 'needsApproval' ? definition.needsApproval : definition.run;
    if (typeof run !== 'function') throw new Error(`this build of tool '${task.name}' has no ${task.call}()`);
    const ctx: ToolContext = {
      ...task.context,
      signal: io.signal,
      documents: (collection) => io.call<WorkspaceDocument[]>('documents', [collection]),
    };
    const value = await run.call(definition, task.args, ctx);
    return task.call === 'needsApproval' ? Boolean(value) : value;
  });
}

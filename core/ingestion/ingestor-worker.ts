/**
 * The host thread an ingestor's functions run in (hosts.ts starts it with a heap cap): `discover`,
 * `read` and `health`, each one call with the `ctx` they get on the server. What they return
 * crosses back; the server validates it and writes the store.
 */
import '../kernel/host-thread.js';
import type { MessagePort } from 'node:worker_threads';
import * as zod from 'zod';
import type { HostedReply, WarmTask } from '../kernel/dropin-host-protocol.js';
import { definitionOf, serveHosted } from '../kernel/dropin-host-worker.js';
import * as sdk from '../sdk.js';
import type { IngestorTask } from './hosts.js';

const provided: Record<string, unknown> = { hangar: sdk, zod, 'zod/v4': zod };

export default function runIngestor(task: (IngestorTask & { port: MessagePort }) | WarmTask): Promise<HostedReply> {
  // Loading this module (the SDK, zod) was the work; nothing else to do.
  if ('warm' in task) return Promise.resolve({ value: undefined });
  return serveHosted(task, provided, async (exports, io) => {
    const fn = definitionOf(exports)[task.fn];
    if (typeof fn !== 'function') throw new Error(`this build of ingestor '${task.name}' has no ${task.fn}()`);
    const ctx = { workspace: task.workspace, options: task.options, signal: io.signal };
    return task.fn === 'read' ? fn(task.resource, ctx) : fn(ctx);
  });
}

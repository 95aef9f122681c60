/**
 * When a workspace's plugin thread starts (core/predictors/subsystem.ts): with discovery's scan, not
 * at set-up, where it shared the machine with the routes, listen and the scan and kept the server
 * from /readiness for longer; and still ahead of the first prediction.
 */
import { cp } from 'node:fs/promises';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startServer } from '../../core/app/server.js';
import { workerBundleAsync } from '../../core/lib/worker-bundle.js';
import { agentSource, makeWorkspace } from '../support/server.js';

const repo = path.resolve(import.meta.dirname, '../..');
const created: Worker[] = [];
const onWorker = (worker: Worker) => created.push(worker);
let close: (() => Promise<void>) | undefined;

afterEach(async () => {
  process.off('worker', onWorker);
  created.length = 0;
  await close?.();
  close = undefined;
});

describe('the plugin thread at start-up', () => {
  it('starts when discovery registers the first drop-in, not during set-up, and the plugin is ready without a call', async () => {
    const root = await makeWorkspace({ 'agents/alpha.ts': agentSource(`{ isolation: 'inline', run: async () => 'a' }`) });
    await cp(path.join(repo, 'plugins', 'iris'), path.join(root, 'plugins', 'iris'), { recursive: true });
    // Built before the server starts, as a second start finds it: no build delays the thread.
    await workerBundleAsync('core/predictors/worker.ts');
    process.on('worker', onWorker);
    let release!: () => void;
    const server = await startServer(
      { root, port: 0, logLevel: 'silent', watch: false },
      { discoveryGate: new Promise<void>((resolve) => (release = resolve)) },
    );
    close = server.close;
    // Set up, routed and listening, discovery held: no thread has been started (a pool warmed at
    // set-up had its thread well within this wait).
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(created).toHaveLength(0);
    release();
    await server.discovered;
    await vi.waitFor(
      async () => {
        const { plugins } = (await (await fetch(`${server.url}/api/v1/plugins`)).json()) as {
          plugins: Array<{ name: string; status: string }>;
        };
        expect(plugins).toEqual([expect.objectContaining({ name: 'iris', status: 'ready' })]);
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(created.length).toBeGreaterThan(0);
  });
});

/**
 * An idle server lets its thread sleep: a desktop app that wakes its event loop a hundred times a
 * second costs a laptop's battery while nobody uses it. Measured from outside, as Linux counts it:
 * the voluntary context switches of the `hangar` process's main thread (each is a sleep in
 * epoll_wait that something ended) over two idle seconds. prom-client's event-loop lag histogram at
 * its 10 ms default made ~108 a second; at Hangar's 100 ms (core/kernel/metrics.ts), ~20, half of
 * them the live channel's timer checking every 100 ms whether a stop had begun (core/ui/events.ts,
 * now told by `Lifecycle.onStopping`); without it, ~10.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, stopAll } from '../support/cli.js';

afterEach(() => stopAll());

/** The main thread's voluntary context switches so far (its task id is the process id). */
function sleepsOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
  return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)![1]);
}

describe.skipIf(!existsSync('/proc/self/task'))('an idle server', () => {
  it('wakes its main thread fewer than 15 times a second', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'hangar-idle-'));
    const server = runCli(['--no-window', '--port', '0', '--root', root]);
    await server.line(/ready at http/);
    // Past the start's own work (the code cache written, threads settling).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const pid = server.child.pid!;
    const before = sleepsOf(pid);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const perSecond = (sleepsOf(pid) - before) / 2;
    expect(perSecond).toBeLessThan(15);
  });
});

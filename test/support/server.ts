import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type RunningServer, type StartOptions, startServer } from '../../core/app/server.js';
import { Logger } from '../../core/kernel/log.js';
import type { SettingsInput } from '../../core/kernel/settings.js';

/**
 * A real Hangar server on an ephemeral port over a temporary workspace. Tests write drop-ins into
 * `root` and talk to `url` with fetch — nothing of ours is mocked.
 */
export interface TestServer extends RunningServer {
  root: string;
  /** fetch relative to the server, JSON-decoding the body when it is JSON. */
  request(
    pathname: string,
    init?: RequestInit & { json?: unknown },
  ): Promise<{ status: number; headers: Headers; body: any; text: string }>;
  write(relative: string, content: string): Promise<void>;
  logs: string[];
  stop(): Promise<void>;
}

export async function makeWorkspace(files: Record<string, string> = {}): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'hangar-test-'));
  for (const [relative, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, relative)), { recursive: true });
    await writeFile(path.join(root, relative), content);
  }
  return root;
}

export async function startTestServer(
  options: { root?: string; files?: Record<string, string>; settings?: Partial<SettingsInput>; start?: StartOptions } = {},
): Promise<TestServer> {
  const root = options.root ?? (await makeWorkspace(options.files));
  const logs: string[] = [];
  const running = await startServer(
    { root, port: 0, logLevel: 'debug', ...options.settings },
    { logger: new Logger('debug', (line) => logs.push(line)), graceMs: 500, ...options.start },
  );
  await running.discovered;
  const request: TestServer['request'] = async (pathname, init = {}) => {
    const { json, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (json !== undefined) headers.set('content-type', 'application/json');
    const res = await fetch(running.url + pathname, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body });
    const text = await res.text();
    let body: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json')) body = text ? JSON.parse(text) : undefined;
    return { status: res.status, headers: res.headers, body, text };
  };
  const write = (relative: string, content: string) => writeAtomically(root, relative, content);
  const stop = async () => {
    await running.close();
    if (!options.root) await rm(root, { recursive: true, force: true });
  };
  return { ...running, root, request, write, logs, stop };
}

/**
 * Write a workspace file the way editors that save atomically do: the content goes to a temporary
 * file at the workspace root (which no watcher reads), then one rename puts it in place, so the
 * watcher never sees it half-written — which a plain writeFile allows on a loaded machine.
 */
export async function writeAtomically(root: string, relative: string, content: string): Promise<void> {
  const target = path.join(root, relative);
  await mkdir(path.dirname(target), { recursive: true });
  const temporary = path.join(root, `.write-${randomUUID()}`);
  await writeFile(temporary, content);
  await rename(temporary, target);
}

/** Poll until `check` returns a truthy value (hot reload is asynchronous by nature). */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Poll every 100 ms until `what` gives a value other than undefined; fails naming `label` after
 * `timeoutMs`. Unlike `eventually`, an error thrown by `what` fails at once: the team tests poll
 * other processes, and a refused request there is the finding, not a reason to wait.
 */
export async function until<T>(what: () => Promise<T | undefined> | T | undefined, label: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await what();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export const agentSource = (body: string, extra = '') =>
  `import { defineAgent } from 'hangar';\n${extra}\nexport default defineAgent(${body});\n`;

/**
 * Wait until `count` agent hosts are running (they start in the background after readiness), for
 * tests whose deadlines are about the agents, not about a host thread starting on a loaded machine.
 */
export async function hostsReady(server: TestServer, count: number): Promise<void> {
  await eventually(async () => {
    const all: Array<{ kind: string; ready: boolean }> = (await server.request('/api/v1/status')).body.hosts;
    const hosts = all.filter((host) => host.kind === 'agent');
    return hosts.length === count && hosts.every((host) => host.ready);
  }, 30_000);
}

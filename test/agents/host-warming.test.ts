import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOSTS_STARTED_AHEAD_AT_START } from '../../core/agents/runtime.js';
import { agentSource, eventually, hostsReady, startTestServer, type TestServer } from '../support/server.js';

/** Two more agents than get their host started ahead at start-up; each answers from its host. */
const COUNT = HOSTS_STARTED_AHEAD_AT_START + 2;
const name = (i: number) => `agent-${String(i).padStart(2, '0')}`;
const source = (reply: string) =>
  agentSource(`{ run: async () => (isMainThread ? 'server' : '${reply}') }`, "import { isMainThread } from 'node:worker_threads';");

type HostStatus = { kind: string; agent: string; ready: boolean };
const agentHosts = async (server: TestServer): Promise<HostStatus[]> =>
  ((await server.request('/api/v1/status')).body.hosts as HostStatus[]).filter((h) => h.kind === 'agent');

describe('agent hosts started ahead of a first call', () => {
  let server: TestServer;
  beforeAll(async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < COUNT; i++) files[`agents/${name(i)}.ts`] = source(`host ${i}`);
    server = await startTestServer({ files });
  });
  afterAll(async () => server?.stop());

  it('at start-up, only for the first agents in path order; the others start at their first call', async () => {
    await hostsReady(server, HOSTS_STARTED_AHEAD_AT_START);
    const started = (await agentHosts(server)).map((h) => h.agent).sort();
    expect(started).toEqual(Array.from({ length: HOSTS_STARTED_AHEAD_AT_START }, (_, i) => name(i)));

    const last = name(COUNT - 1);
    const answer = await server.request(`/api/v1/${last}/invoke`, { method: 'POST', json: { query: 'x' } });
    expect(answer.body.response).toBe(`host ${COUNT - 1}`);
    expect((await agentHosts(server)).map((h) => h.agent)).toContain(last);
  });

  it('after start-up, for an agent as soon as it is saved', async () => {
    const saved = name(COUNT - 2);
    expect((await agentHosts(server)).map((h) => h.agent)).not.toContain(saved);
    await writeFile(path.join(server.root, 'agents', `${saved}.ts`), source('saved'));
    await eventually(async () => (await agentHosts(server)).find((h) => h.agent === saved && h.ready));
    const answer = await server.request(`/api/v1/${saved}/invoke`, { method: 'POST', json: { query: 'x' } });
    expect(answer.body.response).toBe('saved');
  });
});

/**
 * The agent worker pool follows the current `max_parallel`: piscina cannot resize a live pool, so
 * each run gets a pool sized by its own setting, and raising the setting between runs widens the
 * next run's wave for real (not just its model bound).
 */
import { describe, expect, it } from 'vitest';
import { AgentPool } from '../../core/coderun/pool.js';
import { API_TEAM, type CodeServer, makeRepo, startCodeServer, tearDownAfterEach } from './support/fixture.js';
import { agentScript, approve, barrier, type ScriptedModel, startScriptedModel, write } from './support/scripted-model.js';

const task = (id: string, file: string) => ({
  id,
  title: `task ${id}`,
  description: `do ${id}`,
  role: 'developer',
  squad: 'api',
  acceptance: '',
  criteria: [],
  priority: 5,
  files: [file],
  dependencies: [],
});

let model: ScriptedModel | undefined;
let server: CodeServer | undefined;
let repo: string | undefined;
tearDownAfterEach(() => [server, model, repo]);

describe('agent pool sizing', () => {
  it('a pool is sized by the run it serves and closes idempotently', async () => {
    const pool = new AgentPool(3);
    expect(pool.threads).toBe(3);
    await Promise.all([pool.close(), pool.close()]);
    const floor = new AgentPool(0);
    expect(floor.threads).toBe(1);
    await floor.close();
  });

  it('max_parallel raised between two runs widens the second run to the new setting', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    let round = 1;
    // In the second run the three agents' first calls wait for one another: with a pool of three
    // threads they are all in flight at once, however long each thread took to start.
    const together = barrier(3);
    model = await startScriptedModel(async (c) => {
      if (c.kind === 'planner') {
        return {
          tool_calls: [
            {
              name: 'submit_plan',
              arguments: {
                tasks: ['T1', 'T2', 'T3'].slice(0, round === 1 ? 2 : 3).map((id) => task(id, `src/api/${round}-${id}.mjs`)),
                contract: [],
              },
            },
          ],
        };
      }
      if (c.kind === 'reviewer') return approve;
      if (round === 2 && c.kind === 'agent' && c.turn === 0) await together();
      // Slow answers: in the first run, calls of two loops would overlap if the bound of one did not hold.
      return { ...agentScript([write(`src/api/${round}-${c.task}.mjs`, 'export {};\n')], c), delayMs: 400 };
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM }, code: { max_parallel: 1 } });

    const first = await server.api('/api/runs', { method: 'POST', json: { request: 'two files', repo } });
    const run1 = await server.settle(first.body.id);
    expect(run1.tasks.map((t: any) => t.state)).toEqual(['done', 'done']);
    expect(model.peakConcurrency).toBe(1);

    expect((await server.api('/api/config', { method: 'PUT', json: { max_parallel: 3 } })).status).toBe(200);
    round = 2;
    const second = await server.api('/api/runs', { method: 'POST', json: { request: 'three files', repo } });
    const run2 = await server.settle(second.body.id);
    expect(run2.tasks.map((t: any) => t.state)).toEqual(['done', 'done', 'done']);
    const events = (await server.api(`/api/runs/${run2.id}/events`)).text;
    expect(events).toContain('"type":"wave","run":"' + run2.id + '","wave":1,"tasks":["T1","T2","T3"]');
    // A pool kept from the first run (one thread, or the old floor of two) would cap this below 3.
    expect(model.peakConcurrency).toBe(3);
  });
});

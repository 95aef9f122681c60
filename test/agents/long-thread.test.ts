import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Checkpoint } from '../../core/agents/checkpointer.js';
import type { SqliteStore } from '../../core/storage/sqlite-store.js';
import { agentSource, makeWorkspace, startTestServer, type TestServer } from '../support/server.js';

/**
 * A 600-turn chat with an echo agent, through the HTTP API (the store issue, #25: at 200
 * turns a thread's checkpoints held 100 full copies of the conversation). A checkpoint now stores
 * what its step changed and refers to the thread's messages, so late turns store what early ones
 * did, and the studio still reads every state, old or new, whole.
 */
const TURNS = 600;
let server: TestServer;
const sizes: Array<{ turns: number; checkpoints: number; messages: number }> = [];

const bytes = (names: string[]) =>
  (
    (server.ctx.store as SqliteStore)
      .statement(`SELECT SUM(pgsize) AS b FROM dbstat WHERE name IN (${names.map(() => '?').join(', ')})`)
      .get(...names) as { b: number }
  ).b;
const CHECKPOINT_TABLES = ['cp_steps', 'cp_steps_id', 'cp_blobs', 'cp_messages', 'cp_chains'];

beforeAll(async () => {
  // The disk benchmark's agent (bench/store.bench.ts): a turn's answer is its question, prefixed.
  const root = await makeWorkspace({ 'agents/echo.ts': agentSource(`{ run: async (input) => 'echo: ' + input.query }`) });
  server = await startTestServer({ root, settings: { logLevel: 'error' } });
  for (let turn = 0; turn < TURNS; turn++) {
    const res = await server.request('/api/v1/echo/chat', {
      method: 'POST',
      json: { content: `turn ${turn}: a question of typical length about something`, thread_id: 'long' },
    });
    if (res.status !== 200) throw new Error(`turn ${turn} answered ${res.status}: ${res.text}`);
    if (turn === TURNS / 2 - 1 || turn === TURNS - 1)
      sizes.push({ turns: turn + 1, checkpoints: bytes(CHECKPOINT_TABLES), messages: bytes(['log_items']) });
  }
}, 300_000);

afterAll(async () => {
  await server?.stop();
});

describe('a 600-turn chat thread', () => {
  it('stores checkpoints whose size per turn does not grow with the conversation, within a bound of its messages', async () => {
    const [half, whole] = sizes as [(typeof sizes)[0], (typeof sizes)[0]];
    const early = half.checkpoints / half.turns;
    const late = (whole.checkpoints - half.checkpoints) / (whole.turns - half.turns);
    expect(late).toBeLessThan(early * 1.25);
    const messages = await server.ctx.services.get('agents').threads.allMessages('echo', 'long');
    expect(messages).toHaveLength(2 * TURNS);
    const messageBytes = messages.reduce((n, m) => n + Buffer.byteLength(JSON.stringify(m)), 0);
    // Each turn's two checkpoints hold its question, its answer and three ids: about twice the
    // bytes of its two messages (100 copies of the history each, before). Pages included.
    expect(whole.checkpoints).toBeLessThan(2.5 * messageBytes);
    // The thread as a whole: its messages (one row each) and its checkpoints.
    expect(whole.checkpoints + whole.messages).toBeLessThan(4.2 * messageBytes);
  });

  it('answers state history, old states and time travel whole, from the thread log it refers to', async () => {
    const messages = await server.ctx.services.get('agents').threads.allMessages('echo', 'long');
    const history = (await server.request('/studio/agents/echo/threads/long/history')).body as Checkpoint[];
    expect(history).toHaveLength(100);
    expect(history[0]!.state.response).toBe(`echo: turn ${TURNS - 1}: a question of typical length about something`);
    // Every kept step by default: the first turn's input checkpoint is still there, by id.
    const all = await server.ctx.services.get('agents').service.checkpoints.list('echo', 'long');
    expect(all).toHaveLength(2 * TURNS);
    const turn = 250;
    const input = all[all.length - 1 - turn * 2]!;
    expect(input.metadata.source).toBe('input');
    const state = (await server.request(`/studio/agents/echo/threads/long/state?checkpoint_id=${input.id}`)).body as {
      state: Checkpoint['state'];
      step: number;
    };
    // The history the turn was given (the newest 100 then) and its question, exactly as stored in the thread.
    expect(state.state.messages).toEqual([
      ...messages.slice(turn * 2 - 100, turn * 2),
      { role: 'user', content: messages[turn * 2]!.content },
    ]);
    expect(input.metadata.input.history).toEqual(messages.slice(turn * 2 - 100, turn * 2));

    // Time travel: a studio run from that old step answers from it and branches the thread.
    const run = await server.request('/studio/agents/echo/runs', {
      method: 'POST',
      json: { query: 'again', thread_id: 'long', checkpoint_id: all[all.length - 1 - (turn * 2 + 1)]!.id },
    });
    expect(run.status).toBe(200);
    const latest = (await server.request('/studio/agents/echo/threads/long/state')).body as { state: Checkpoint['state'] };
    expect(latest.state.response).toBe('echo: again');
    // The new turn continues the conversation as it stood at that step: its history, question and answer.
    expect(latest.state.messages).toEqual([
      ...messages.slice(turn * 2 - 100, turn * 2),
      { role: 'user', content: messages[turn * 2]!.content },
      { role: 'assistant', content: messages[turn * 2 + 1]!.content },
      { role: 'user', content: 'again' },
    ]);
  });
});

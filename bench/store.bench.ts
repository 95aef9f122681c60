/**
 * The embedded store under Hangar's own workload (the store issue, #25), through the real server:
 *
 * 1. Appends per second with 16 concurrent writers (16 connections chatting on one thread, each
 *    turn stores two messages), `storage.durability: normal` and `full` side by side in one run.
 *    No target: the figure is what the durability promise costs (`full` fsyncs every commit).
 * 2. Disk: the bytes the store holds for a 1,000-turn chat thread against the bytes of its
 *    messages (target ≤ 3×): the workspace's database once the server stopped (its WAL emptied
 *    into it), with where the bytes are — the messages' rows, the checkpoints, everything else.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import autocannon from 'autocannon';
import { startServer } from '../core/app/server.js';
import { Logger } from '../core/kernel/log.js';
import type { SqliteStore } from '../core/storage/sqlite-store.js';
import { report, round, workspace } from './lib/measure.js';

const echo = `import { defineAgent } from 'hangar';\nexport default defineAgent({ run: async (input) => 'echo: ' + input.query });\n`;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const TURNS = Number(process.env.BENCH_TURNS ?? 1000);

async function appendsPerSecond(durability: 'normal' | 'full'): Promise<number> {
  const root = await workspace({ 'agents/echo.ts': echo });
  const server = await startServer(
    { root, port: 0, watch: false, requestLog: false, logLevel: 'error', storage: { durability } },
    { logger: new Logger('error') },
  );
  await server.discovered;
  const result = await autocannon({
    url: `${server.url}/api/v1/echo/chat`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ content: 'a question of typical length about something', thread_id: 'shared', persist: true }),
    connections: 16,
    duration: SECONDS,
  });
  await server.close();
  if (result.non2xx > 0) throw new Error(`${result.non2xx} chat turns failed`);
  return result.requests.average * 2;
}

async function diskPerMessageBytes(): Promise<{
  stored: number;
  messages: number;
  messageRows: number;
  checkpoints: number;
  rest: number;
}> {
  const root = await workspace({ 'agents/echo.ts': echo });
  const server = await startServer({ root, port: 0, watch: false, requestLog: false, logLevel: 'error' }, { logger: new Logger('error') });
  await server.discovered;
  for (let i = 0; i < TURNS; i++) {
    const res = await fetch(`${server.url}/api/v1/echo/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: `turn ${i}: a question of typical length about something`, thread_id: 'long', persist: true }),
    });
    if (!res.ok) throw new Error(`turn ${i} answered ${res.status}`);
    await res.arrayBuffer();
  }
  const messages = (await server.ctx.services.get('agents').threads.allMessages('echo', 'long')).reduce(
    (n, m) => n + Buffer.byteLength(JSON.stringify(m)),
    0,
  );
  const stats = await server.ctx.store.stats();
  // Where the bytes are: the thread's message rows, its checkpoints, and the rest of the database
  // (an empty workspace's tables and indexes, one page each, and the thread's record).
  const pages = (names: string) =>
    (
      (server.ctx.store as SqliteStore).statement(`SELECT SUM(pgsize) AS b FROM dbstat WHERE name IN (${names})`).get() as {
        b: number | null;
      }
    ).b ?? 0;
  const parts = {
    messageRows: pages("'log_items', 'log_keys', 'log_shapes', 'sqlite_autoindex_log_keys_1', 'sqlite_autoindex_log_shapes_1'"),
    checkpoints: pages("'cp_steps', 'cp_steps_id', 'cp_blobs', 'cp_messages', 'cp_chains'"),
  };
  await server.close();
  const file = path.join(root, '.hangar', 'hangar.db');
  const onDisk =
    (await stat(file)).size +
    (await stat(`${file}-wal`).then(
      (s) => s.size,
      () => 0,
    ));
  const stored = Math.max(stats.bytes, onDisk);
  return { stored, messages, ...parts, rest: stored - parts.messageRows - parts.checkpoints };
}

const normal = await appendsPerSecond('normal');
const full = await appendsPerSecond('full');
report({
  name: 'appends per second, 16 concurrent writers on one thread, durability full vs normal',
  value: round(full, 0),
  unit: 'appends/s',
  baseline: { label: 'durability normal', value: round(normal, 0) },
  detail: `full ${round(full, 0)} appends/s vs normal ${round(normal, 0)} appends/s (16 connections chatting, ${SECONDS} s each)`,
});

const disk = await diskPerMessageBytes();
report({
  name: `disk: a ${TURNS.toLocaleString('en')}-turn chat thread vs the bytes of its messages`,
  value: round(disk.stored / 1024, 0),
  unit: 'KiB',
  baseline: { label: 'its messages as JSON', value: round(disk.messages / 1024, 0) },
  target: { on: 'ratio', op: '<=', limit: 3 },
  detail:
    `${round(disk.stored / 1024, 0)} KiB stored vs ${round(disk.messages / 1024, 0)} KiB of messages: ` +
    `their rows ${round(disk.messageRows / 1024, 0)} KiB, checkpoints ${round(disk.checkpoints / 1024, 0)} KiB, ` +
    `the rest of the database (every subsystem's empty tables, the thread's record) ${round(disk.rest / 1024, 0)} KiB`,
});

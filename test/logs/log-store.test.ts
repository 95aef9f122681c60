/**
 * The invocation log lives in the workspace's database (the store issue, #25): a call is a row of
 * its `invocations` table, written behind the response, and a workspace whose log was the older
 * JSON Lines file gets it imported on the first start — once, counted, the file kept aside.
 */
import { existsSync, readdirSync, renameSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { agentSource, makeWorkspace, startTestServer } from '../support/server.js';

const files = { 'agents/echo.ts': agentSource(`{ run: async (input) => 'echo: ' + input.query }`) };
const settings = { logs: { enabled: true } };

const record = (id: string, name: string, startedAt: string, over: Record<string, unknown> = {}) => ({
  id,
  resource: 'agent',
  name,
  operation: 'invoke',
  principal: 'local',
  started_at: startedAt,
  duration_ms: 12.5,
  status: 'ok',
  http_status: 200,
  input: { query: `asked ${id}` },
  output: { response: `answered ${id}` },
  truncated: false,
  error: null,
  task_id: null,
  ...over,
});

describe('the invocation log in the store', () => {
  it("a call is a row of the database's invocations table, and no JSON Lines file is written", async () => {
    const server = await startTestServer({ files, settings });
    try {
      expect((await server.request('/api/v1/echo/invoke', { method: 'POST', json: { query: 'hello' } })).status).toBe(200);
      const { body } = await server.request('/api/v1/logs?resource=agent&name=echo');
      expect(body.total).toBe(1);
      expect(body.logs[0].input).toEqual({ query: 'hello' });
      await server.close();
      const db = new DatabaseSync(path.join(server.root, '.hangar', 'hangar.db'), { readOnly: true });
      const rows = db.prepare('SELECT name, status, http_status, value FROM invocations').all();
      db.close();
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ name: 'echo', status: 'ok', http_status: 200 });
      expect(JSON.parse(rows[0]!.value as string).id).toBe(body.logs[0].id);
      expect(existsSync(path.join(server.root, '.hangar', 'logs', 'invocations.jsonl'))).toBe(false);
    } finally {
      await server.stop();
    }
  });

  it("imports an older workspace's invocations.jsonl once: counted, the file kept aside, and putting it back adds nothing", async () => {
    const lines = [
      record('0190a000-0000-7000-8000-000000000001', 'echo', '2026-03-01T10:00:00.000Z'),
      record('0190a000-0000-7000-8000-000000000002', 'search', '2026-03-01T10:00:02.000Z', {
        status: 'error',
        http_status: 500,
        output: null,
        error: 'the index is gone',
      }),
      record('0190a000-0000-7000-8000-000000000003', 'echo', '2026-03-01T10:00:01.000Z'),
    ].map((r) => JSON.stringify(r));
    // The old log's one failure mode: a last line cut by a crash mid-append.
    const text = `${lines.join('\n')}\n{"id":"0190a000-0000-7000-8000-0000000`;
    const root = await makeWorkspace(files);
    const logsDir = path.join(root, '.hangar', 'logs');
    await mkdir(logsDir, { recursive: true });
    await writeFile(path.join(logsDir, 'invocations.jsonl'), text);

    const first = await startTestServer({ root, settings });
    let kept: string;
    try {
      const { body } = await first.request('/api/v1/logs?limit=10');
      expect(body.total).toBe(3);
      expect(body.logs.map((r: { id: string }) => r.id.slice(-1))).toEqual(['2', '3', '1']);
      expect((await first.request('/api/v1/logs?status=error')).body.logs[0].error).toBe('the index is gone');
      expect((await first.request('/api/v1/logs/0190a000-0000-7000-8000-000000000003')).body.output).toEqual({
        response: 'answered 0190a000-0000-7000-8000-000000000003',
      });
      expect(first.logs.join('\n')).toMatch(/imported 3 invocation record\(s\) from invocations\.jsonl \(1 unreadable line\(s\) skipped\)/);
      const left = readdirSync(logsDir);
      expect(left).not.toContain('invocations.jsonl');
      kept = left.find((f) => f.startsWith('invocations.jsonl.imported-'))!;
      expect(kept).toBeDefined();
    } finally {
      await first.close();
    }

    renameSync(path.join(logsDir, kept), path.join(logsDir, 'invocations.jsonl'));
    const second = await startTestServer({ root, settings });
    try {
      expect((await second.request('/api/v1/logs?limit=10')).body.total).toBe(3);
    } finally {
      await second.stop();
    }
  });

  it('a restart keeps every record written before the stop, even those of the last batch', async () => {
    const server = await startTestServer({ files, settings });
    const root = server.root;
    await Promise.all(
      Array.from({ length: 8 }, (_, i) => server.request('/api/v1/echo/invoke', { method: 'POST', json: { query: `q${i}` } })),
    );
    await server.close();
    const again = await startTestServer({ root, settings });
    try {
      const { body } = await again.request('/api/v1/logs?name=echo&limit=100');
      expect(body.logs.map((r: { input: { query: string } }) => r.input.query).sort()).toEqual(
        Array.from({ length: 8 }, (_, i) => `q${i}`),
      );
    } finally {
      await again.stop();
    }
  });
});

import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HangarNotebook } from '../../core/notebook/api.js';
import { startNotebookServer } from '../../core/notebook/server.js';

describe('programmatic notebook API', () => {
  it('has the spec defaults and runs added cells locally, keeping outputs', async () => {
    const nb = new HangarNotebook();
    expect(nb.name).toBe('untitled');
    expect(nb.server).toBeUndefined();
    nb.addCell('const base = 40');
    const answer = nb.addCell('base + 2', { name: 'answer' });
    const result = await nb.run();
    expect(result.ok).toBe(true);
    expect(answer.outputs[0]).toMatchObject({ output_type: 'execute_result', data: { 'text/plain': '42' } });
    expect(answer.execution_count).toBeGreaterThan(0);
  });

  it('connects to a server, runs there, and refuses an unreachable one', async () => {
    const root = await mkdtemp(join(tmpdir(), 'nb-api-'));
    const server = await startNotebookServer({ root, port: 0 });
    try {
      const nb = new HangarNotebook({ name: 'remote' });
      await expect(nb.connect('http://127.0.0.1:9')).rejects.toThrow(/cannot reach/);
      await nb.connect(server.url);
      expect(nb.server).toBe(server.url);
      nb.addCell('"ran remotely"');
      expect((await nb.run()).cells[0].outputs[0]).toMatchObject({ data: { 'text/plain': 'ran remotely' } });
    } finally {
      await server.close();
    }
  });

  it('schedules runs with a cron expression', async () => {
    const nb = new HangarNotebook();
    nb.addCell('1');
    const results: boolean[] = [];
    const job = nb.schedule('* * * * * *', (r) => results.push(!(r instanceof Error) && r.ok));
    expect(job.next()).toBeInstanceOf(Date);
    // Fires at the next second boundary; allow a loaded machine a few seconds for the run.
    const deadline = Date.now() + 20_000;
    while (results.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    job.stop();
    expect(results.length).toBeGreaterThanOrEqual(1);
    expect(results.every(Boolean)).toBe(true);
    expect(() => nb.schedule('not a cron')).toThrow();
  });

  it('saves and loads files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nb-api-'));
    const nb = new HangarNotebook({ name: 'saved' });
    nb.addCell('const x = 1', { name: 'x' });
    const file = await nb.save(join(dir, 'saved.nb.ts'));
    expect(await readFile(file, 'utf8')).toContain('name="x"');
    const loaded = await HangarNotebook.load(file);
    expect(loaded.name).toBe('saved');
    expect(loaded.cells.map((c) => c.source)).toEqual(['const x = 1']);
  });
});

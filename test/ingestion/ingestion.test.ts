import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

const repo = path.resolve(import.meta.dirname, '..', '..');

/** Five resources; the ids listed in `flaky.json` fail to read — an interrupted run, on demand. */
const flaky = `import { readFileSync } from 'node:fs';
import path from 'node:path';
import { defineIngestor } from 'hangar';
export default defineIngestor({
  collection: 'flaky-docs',
  discover: () => ['r1', 'r2', 'r3', 'r4', 'r5'].map((id) => ({ id })),
  read: (resource, { workspace }) => {
    const failOn: string[] = JSON.parse(readFileSync(path.join(workspace, 'flaky.json'), 'utf8')).failOn;
    if (failOn.includes(resource.id)) throw new Error('source went away mid-run');
    return [{ id: resource.id, content: 'content of ' + resource.id }];
  },
});`;

const guide = `# Guide

Intro text.

## Install

Run the installer.

## Configure

Edit the config file.
`;

/** Every record the store holds in a collection, read from the database file as another reader would. */
function storedRecords(root: string, collection: string): Record<string, any> {
  const db = new DatabaseSync(path.join(root, '.hangar', 'hangar.db'), { readOnly: true });
  try {
    const rows = db.prepare('SELECT id, value FROM records WHERE collection = ?').all(collection) as Array<{ id: string; value: string }>;
    return Object.fromEntries(rows.map((row) => [row.id, JSON.parse(row.value)]));
  } finally {
    db.close();
  }
}

describe('ingestion', () => {
  let server: TestServer;
  const run = (name: string, json: unknown = {}) => server.request(`/api/v1/ingestion/${name}/run`, { method: 'POST', json });

  beforeAll(async () => {
    server = await startTestServer({
      files: {
        'ingestors/docs-folder.ts': readFileSync(path.join(repo, 'ingestors', 'docs-folder.ts'), 'utf8'),
        'ingestors/flaky.ts': flaky,
        'ingestors/broken.ts': 'export default 42;',
        'flaky.json': JSON.stringify({ failOn: ['r3'] }),
        'docs/guide.md': guide,
        'docs/notes.txt': 'First paragraph.\n\nSecond paragraph.',
        'docs/people.csv': 'name,role\nAda,"engineer, lead"\nGrace,admiral\n',
        'docs/image.png': 'not text',
      },
    });
  });
  afterAll(() => server?.stop());

  it('lists ingestors, broken drop-ins with their error', async () => {
    const { status, body } = await server.request('/api/v1/ingestors');
    expect(status).toBe(200);
    const byName = Object.fromEntries(body.ingestors.map((i: any) => [i.name, i]));
    expect(byName['docs-folder']).toMatchObject({ status: 'loaded', collection: 'docs', version: '1.0.0' });
    expect(byName.flaky).toMatchObject({ status: 'loaded', collection: 'flaky-docs' });
    expect(byName.broken).toMatchObject({ status: 'error', error: expect.stringContaining('invalid ingestor definition') });
  });

  it('shows info with the discovered resources, and health', async () => {
    const info = await server.request('/api/v1/ingestion/docs-folder');
    expect(info.status).toBe(200);
    expect(info.body.resources.map((r: any) => r.id)).toEqual(['docs/guide.md', 'docs/notes.txt', 'docs/people.csv']);
    expect(info.body).toMatchObject({ collection: 'docs', options: { paths: ['docs', 'agents/docs-agent/docs'] } });
    const health = await server.request('/api/v1/ingestion/docs-folder/health');
    expect(health.status).toBe(200);
    expect(health.body.ok).toBe(true);
    for (const path of ['/api/v1/ingestion/nope', '/api/v1/ingestion/nope/health']) expect((await server.request(path)).status).toBe(404);
    expect((await run('nope')).status).toBe(404);
    for (const path of ['/api/v1/ingestion/nope/run/async', '/api/v1/ingestion/nope/run/batch']) {
      const res = await server.request(path, { method: 'POST', json: { runs: [{}] } });
      expect(res.status, path).toBe(404);
      expect(res.body.detail).toBe('ingestor nope not found');
    }
  });

  it('ingests Markdown sections, text and CSV rows into the docs collection under stable ids', async () => {
    const { status, body } = await run('docs-folder');
    expect(status).toBe(200);
    // guide: intro + 2 sections; notes: 1 chunk; people: 2 rows
    expect(body).toMatchObject({
      status: 'completed',
      collection: 'docs',
      resources: 3,
      documents: { created: 6, updated: 0, unchanged: 0, deleted: 0 },
    });
    const records = storedRecords(server.root, 'docs');
    expect(Object.keys(records).sort()).toEqual([
      'docs-folder:docs/guide.md#configure',
      'docs-folder:docs/guide.md#guide',
      'docs-folder:docs/guide.md#install',
      'docs-folder:docs/notes.txt#0',
      'docs-folder:docs/people.csv#row-1',
      'docs-folder:docs/people.csv#row-2',
    ]);
    expect(records['docs-folder:docs/guide.md#install']).toMatchObject({
      title: 'Install',
      content: 'Run the installer.',
      resource: 'docs/guide.md',
    });
    expect(records['docs-folder:docs/people.csv#row-1'].content).toBe('name: Ada\nrole: engineer, lead');
  });

  it('re-running updates instead of duplicating: unchanged, updated and removed sections', async () => {
    const again = await run('docs-folder');
    expect(again.body.documents).toEqual({ created: 0, updated: 0, unchanged: 6, deleted: 0 });

    await server.write('docs/guide.md', guide.replace('Run the installer.', 'Run the new installer.').replace(/## Configure[\s\S]*$/, ''));
    const edited = await run('docs-folder', { resources: ['docs/guide.md'] });
    expect(edited.body).toMatchObject({ resources: 1, documents: { created: 0, updated: 1, unchanged: 1, deleted: 1 } });
    const records = storedRecords(server.root, 'docs');
    expect(Object.keys(records)).toHaveLength(5);
    expect(records['docs-folder:docs/guide.md#install'].content).toBe('Run the new installer.');
    expect((await server.request('/api/v1/ingestion/docs-folder')).body.documents).toBe(5);
  });

  it('an interrupted run can be re-run without duplicates', async () => {
    const first = await run('flaky');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      status: 'partial',
      documents: { created: 4 },
      failures: [{ resource: 'r3', error: 'source went away mid-run' }],
    });

    await server.write('flaky.json', JSON.stringify({ failOn: [] }));
    const second = await run('flaky');
    expect(second.body).toMatchObject({
      status: 'completed',
      documents: { created: 1, unchanged: 4, updated: 0, deleted: 0 },
      failures: [],
    });
    expect(Object.keys(storedRecords(server.root, 'flaky-docs')).sort()).toEqual([
      'flaky:r1',
      'flaky:r2',
      'flaky:r3',
      'flaky:r4',
      'flaky:r5',
    ]);
  });

  it('prunes documents of resources that disappeared only when asked', async () => {
    await server.write('docs/notes.txt', '');
    const { rm } = await import('node:fs/promises');
    await rm(path.join(server.root, 'docs', 'notes.txt'));
    const kept = await run('docs-folder');
    expect(kept.body.documents.deleted).toBe(0);
    const pruned = await run('docs-folder', { prune: true });
    expect(pruned.body.documents.deleted).toBe(1);
    expect(storedRecords(server.root, 'docs')['docs-folder:docs/notes.txt#0']).toBeUndefined();
  });

  it('checks run bodies and options: 422 naming the field, 404 for an unknown resource', async () => {
    const badOptions = await run('docs-folder', { options: { paths: [5] } });
    expect(badOptions.status).toBe(422);
    expect(badOptions.body.detail).toContain('body.options.paths.0');
    const badBody = await run('docs-folder', { prune: 'yes' });
    expect(badBody.status).toBe(422);
    expect(badBody.body.detail).toContain('body.prune');
    const outside = await run('docs-folder', { options: { paths: ['../..'] } });
    expect(outside.status).toBe(503);
    expect(outside.body.detail).toContain('outside the workspace');
    const unknown = await run('docs-folder', { resources: ['docs/missing.md'] });
    expect(unknown.status).toBe(404);
  });

  it('runs in the background with /run/async', async () => {
    const submitted = await server.request('/api/v1/ingestion/flaky/run/async', { method: 'POST', json: {} });
    expect(submitted.status).toBe(202);
    const task = await eventually(async () => {
      const { body } = await server.request(`/api/v1/tasks/${submitted.body.id}`);
      return body.status === 'completed' ? body : undefined;
    });
    expect(task.result).toMatchObject({ status: 'completed', documents: { unchanged: 5 } });
    const bad = await server.request('/api/v1/ingestion/docs-folder/run/async', {
      method: 'POST',
      json: { options: { extensions: ['exe'] } },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toContain('body.options.extensions');
  });

  it('runs a batch of runs as a task on the board, whose result reports each run', async () => {
    const submitted = await server.request('/api/v1/ingestion/docs-folder/run/batch', {
      method: 'POST',
      json: { runs: [{ options: { extensions: ['csv'] } }, { resources: ['docs/nope.md'] }, { options: { extensions: ['md'] } }] },
    });
    expect(submitted.status).toBe(202);
    expect(submitted.body).toMatchObject({ kind: 'ingestion.batch', target: 'docs-folder' });
    expect(submitted.headers.get('location')).toBe(`/api/v1/tasks/${submitted.body.id}`);
    const task = await eventually(async () => {
      const { body } = await server.request(submitted.headers.get('location')!);
      return body.status === 'completed' ? body : undefined;
    });
    expect(task.progress.percent).toBe(100);
    const body = task.result;
    expect(body).toMatchObject({ total: 3, succeeded: 2, failed: 1 });
    expect(body.results).toHaveLength(3);
    expect(body.results[0]).toMatchObject({ index: 0, ok: true, result: { resources: 1, documents: { unchanged: 2 } } });
    expect(body.results[1]).toMatchObject({ index: 1, ok: false, status: 404 });
    expect(body.results[2]).toMatchObject({ index: 2, ok: true, result: { resources: 1 } });
    const info = await server.request('/api/v1/ingestion/docs-folder');
    expect(info.body.last_run.resources).toBe(1);

    // A run whose options fail the ingestor's model is refused before any task exists, naming it.
    const bad = await server.request('/api/v1/ingestion/docs-folder/run/batch', {
      method: 'POST',
      json: { runs: [{}, { options: { extensions: ['exe'] } }] },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toContain('body.runs.1.options.extensions');
  });

  it('documents its routes in the OpenAPI document', async () => {
    const { body } = await server.request('/openapi.json');
    expect(body.paths['/api/v1/ingestion/{name}/run'].post.requestBody).toBeDefined();
    expect(Object.keys(body.paths)).toEqual(
      expect.arrayContaining(['/api/v1/ingestors', '/api/v1/ingestion/{name}/run/async', '/api/v1/ingestion/{name}/run/batch']),
    );
  });

  it('reports an unhealthy source with 503', async () => {
    const { rm } = await import('node:fs/promises');
    await rm(path.join(server.root, 'docs'), { recursive: true });
    const health = await server.request('/api/v1/ingestion/docs-folder/health');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ ok: false, detail: expect.stringContaining('none of the folders') });
  });
});

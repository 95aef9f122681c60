/**
 * One model for every `…/batch` route (spec document 1: "The async and batch variants of a resource
 * require the task subsystem"; issue #21): plugin, ingestion, pipeline and endpoint batches each
 * submit a task on the board and answer 202 with the task and `Location: /api/v1/tasks/{id}`; the
 * task's result holds the per-item results with `total`, `succeeded` and `failed`. Without the task
 * subsystem every one of them answers 501.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

const files = {
  'plugins/double/index.ts': `import { definePlugin, z } from 'hangar';
export default definePlugin({
  card: { task: 'doubling' },
  input: z.object({ x: z.number() }),
  load: () => 2,
  predict: (factor, input) => ({ y: input.x * factor }),
});`,
  'ingestors/pages.ts': `import { defineIngestor } from 'hangar';
export default defineIngestor({
  collection: 'pages',
  discover: () => [{ id: 'a' }, { id: 'b' }],
  read: (resource) => [{ id: resource.id, content: 'page ' + resource.id }],
});`,
  'endpoints/sum.ts': `import { defineEndpoint, z } from 'hangar';
export default defineEndpoint({
  request: z.object({ a: z.number(), b: z.number() }),
  handler: (input) => ({ sum: input.a + input.b }),
});`,
  'pipelines/add-one.json': JSON.stringify({ name: 'add-one', steps: [{ name: 'add', endpoint: 'sum', input: { a: '$.input.a', b: 1 } }] }),
};

/** Each batch route with a body of three items, one of which fails where the resource allows it. */
const BATCHES = [
  { path: '/api/v1/plugins/double/predict/batch', kind: 'plugin.predict', body: { inputs: [{ x: 1 }, { x: 'two' }, { x: 3 }] }, failed: 1 },
  {
    path: '/api/v1/ingestion/pages/run/batch',
    kind: 'ingestion.batch',
    body: { runs: [{}, { resources: ['nope'] }, { resources: ['a'] }] },
    failed: 1,
  },
  { path: '/api/v1/pipelines/add-one/run/batch', kind: 'pipeline.batch', body: { inputs: [{ a: 1 }, { a: 'x' }, { a: 3 }] }, failed: 1 },
  {
    path: '/api/v1/endpoints/sum/batch',
    kind: 'endpoint.batch',
    body: {
      inputs: [
        { a: 1, b: 1 },
        { a: 2, b: 2 },
        { a: 3, b: 3 },
      ],
    },
    failed: 0,
  },
];

describe('every …/batch route is a task on the board', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files });
    await eventually(async () => (await server.request('/api/v1/plugins/double/health')).status === 200, 15_000);
  });
  afterAll(() => server?.stop());

  it.each(BATCHES)('$path answers 202 with the task and its Location; the result holds each item', async ({ path, kind, body, failed }) => {
    const submitted = await server.request(path, { method: 'POST', json: body });
    expect(submitted.status).toBe(202);
    expect(submitted.body).toMatchObject({ id: expect.any(String), kind });
    expect(submitted.headers.get('location')).toBe(`/api/v1/tasks/${submitted.body.id}`);
    const task = await eventually(async () => {
      const res = await server.request(submitted.headers.get('location')!);
      return ['completed', 'failed'].includes(res.body.status) ? res.body : undefined;
    });
    expect(task.status).toBe('completed');
    expect(task.result).toMatchObject({ total: 3, succeeded: 3 - failed, failed });
    expect(task.result.results).toHaveLength(3);
  });
});

describe('without the task subsystem', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { tasks: { enabled: false } } });
  });
  afterAll(() => server?.stop());

  it.each(BATCHES)('$path answers 501 {detail}', async ({ path, body }) => {
    const res = await server.request(path, { method: 'POST', json: body });
    expect(res.status).toBe(501);
    expect(typeof res.body.detail).toBe('string');
  });
});

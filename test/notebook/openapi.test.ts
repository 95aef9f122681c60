import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';

/** Issue #21: the core notebook session routes are listed in /openapi.json like every other API. */
describe('notebook routes in /openapi.json', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ settings: { watch: false } });
  });
  afterAll(() => server.stop());

  it('lists every session route with its method', async () => {
    const { paths } = (await server.request('/openapi.json')).body as { paths: Record<string, Record<string, { tags?: string[] }>> };
    const listed = Object.entries(paths)
      .filter(([path]) => path.startsWith('/api/notebooks') && !path.includes('/ws'))
      .flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
    expect(listed).toEqual(
      expect.arrayContaining([
        'GET /api/notebooks',
        'POST /api/notebooks',
        'POST /api/notebooks/run',
        'GET /api/notebooks/{nb}',
        'DELETE /api/notebooks/{nb}/session',
        'POST /api/notebooks/{nb}/save',
        'GET /api/notebooks/{nb}/cells',
        'POST /api/notebooks/{nb}/cells',
        'GET /api/notebooks/{nb}/cells/{cell}',
        'PATCH /api/notebooks/{nb}/cells/{cell}',
        'DELETE /api/notebooks/{nb}/cells/{cell}',
        'GET /api/notebooks/{nb}/cells/{cell}/outputs.html',
        'PUT /api/notebooks/{nb}/order',
        'POST /api/notebooks/{nb}/cells/{cell}/run',
        'POST /api/notebooks/{nb}/run',
        'POST /api/notebooks/{nb}/run-stale',
        'POST /api/notebooks/{nb}/interrupt',
        'POST /api/notebooks/{nb}/restart',
        'GET /api/notebooks/{nb}/dependencies',
        'PUT /api/notebooks/{nb}/settings',
      ]),
    );
    expect(paths['/api/notebooks']!.post!.tags).toEqual(['notebooks']);
    // What is listed answers: creating through the documented route works.
    const created = await server.request('/api/notebooks', { method: 'POST', json: { name: 'documented', format: 'nb.ts' } });
    expect(created.status).toBe(201);
  });
});

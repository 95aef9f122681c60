import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Issue #21: the OpenAPI document describes object-typed query fields as the server reads them —
 * URL-encoded JSON text, i.e. `content: application/json` on the parameter — so a client generated
 * from it sends `?where=%7B…%7D` instead of form-exploded keys the server would drop.
 */
const files = {
  'endpoints/search.ts': `import { defineEndpoint, z } from 'hangar';
export default defineEndpoint({
  path: '/find',
  methods: ['GET'],
  request: z.object({ q: z.string(), tags: z.array(z.string()).default([]), where: z.object({ k: z.number() }).optional() }),
  handler: async (input) => ({ got: input }),
});`,
};

type Parameter = { name: string; in: string; schema?: { type?: string }; content?: Record<string, { schema: { type?: string } }> };

describe('object-typed query fields in /openapi.json', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false } });
  });
  afterAll(() => server.stop());

  it('are JSON content parameters, and the server reads what a client following them sends', async () => {
    const doc = (await server.request('/openapi.json')).body;
    const params: Parameter[] = doc.paths['/api/v1/endpoints/search/find'].get.parameters;
    const where = params.find((p) => p.name === 'where')!;
    expect(where.schema).toBeUndefined();
    expect(where.content?.['application/json']?.schema).toMatchObject({ type: 'object', properties: { k: { type: 'number' } } });
    expect(params.find((p) => p.name === 'tags')!.schema).toMatchObject({ type: 'array' });
    expect(params.find((p) => p.name === 'q')!.schema).toMatchObject({ type: 'string' });

    // Serialise each parameter the way the document says (JSON content vs plain/exploded schema).
    const values: Record<string, unknown> = { q: 'rain', tags: ['a', 'b'], where: { k: 7 } };
    const query = params
      .flatMap((p) => {
        const value = values[p.name];
        if (p.content) return [`${p.name}=${encodeURIComponent(JSON.stringify(value))}`];
        return (Array.isArray(value) ? value : [value]).map((v) => `${p.name}=${encodeURIComponent(String(v))}`);
      })
      .join('&');
    const res = await server.request(`/api/v1/endpoints/search/find?${query}`);
    expect(res.status).toBe(200);
    expect(res.body.aggregated).toEqual({ got: { q: 'rain', tags: ['a', 'b'], where: { k: 7 } } });
  });

  it('no query parameter anywhere in the document describes an object as a form-exploded schema', async () => {
    const doc = (await server.request('/openapi.json')).body;
    const offenders: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, { parameters?: Parameter[] }>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        for (const p of operation.parameters ?? [])
          if (p.in === 'query' && p.schema?.type === 'object') offenders.push(`${method} ${path} ?${p.name}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});

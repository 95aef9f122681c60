import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { notebookWith } from './helpers.js';

let server: TestServer;
let nb = '';

const SALES = `const sales = Array.from({ length: 60 }, (_, i) => ({
  region: ['north', 'south', 'west'][i % 3],
  amount: 10 + (i % 7) * 5,
  returned: i % 4 === 0 ? 'yes' : 'no',
  units: 1 + (i % 5),
  day: new Date(Date.UTC(2024, 0, 1 + (i % 10))).toISOString(),
}));`;

beforeAll(async () => {
  server = await startTestServer();
  nb = await notebookWith(server, 'patterns', [SALES]);
}, 60_000);

afterAll(async () => {
  await server.stop();
});

const body = {
  name: 'Revenue by region',
  description: 'Sum of revenue per sales region',
  tags: ['sales', 'aggregation'],
  cells: [
    { source: '## Revenue by region', cell_type: 'markdown' },
    {
      source:
        'const revenue_{{data}} = {{data}}.reduce((totals, r) => ({ ...totals, [r.region]: (totals[r.region] ?? 0) + r.amount }), {});\nrevenue_{{data}}',
      cell_type: 'code',
    },
  ],
  problem_type: 'reporting',
  data_type: 'tabular',
};

describe('patterns', () => {
  it('ships starter patterns in the workspace store', async () => {
    const res = await server.request('/api/patterns');
    expect(res.status).toBe(200);
    const names = res.body.patterns.map((p: { name: string }) => p.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'Data overview',
        'Group and aggregate',
        'Train/test split',
        'Correlation matrix',
        'Daily time series',
        'Random forest baseline',
      ]),
    );
    expect(res.body.patterns.every((p: { starter: boolean }) => p.starter)).toBe(true);
  });

  it('creates a pattern from the spec body, reads it back, and refuses a duplicate name clearly', async () => {
    const created = await server.request('/api/patterns', { method: 'POST', json: body });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      id: 'revenue-by-region',
      name: 'Revenue by region',
      tags: ['sales', 'aggregation'],
      problem_type: 'reporting',
      data_type: 'tabular',
      params: ['data'],
      starter: false,
    });
    expect((await server.request('/api/patterns/revenue-by-region')).body.cells).toHaveLength(2);
    const again = await server.request('/api/patterns', { method: 'POST', json: { ...body, name: 'revenue BY region' } });
    expect(again.status).toBe(409);
    expect(again.body.detail).toBe(
      'a pattern named "Revenue by region" already exists (id revenue-by-region); pick another name or delete it first',
    );
    const invalid = await server.request('/api/patterns', { method: 'POST', json: { name: 'x', cells: [] } });
    expect(invalid.status).toBe(422);
    expect(invalid.body.detail).toMatch(/body\.cells/);
  });

  it('searches by text, tags and types, best match first', async () => {
    const search = (json: unknown) => server.request('/api/patterns/search', { method: 'POST', json });
    const byText = await search({ query: 'revenue region' });
    expect(byText.body.results[0].id).toBe('revenue-by-region');
    const aggregation = await search({ query: '', tags: ['aggregation'] });
    expect(aggregation.body.results.map((r: { id: string }) => r.id).sort()).toEqual([
      'daily-time-series',
      'group-and-aggregate',
      'revenue-by-region',
    ]);
    const typed = await search({ query: 'split', problem_type: 'classification' });
    expect(typed.body.results[0].id).toBe('train-test-split');
    expect(typed.body.results.every((r: { problem_type: string }) => r.problem_type === 'classification')).toBe(true);
    expect((await search({ query: 'time series' })).body.results[0].id).toBe('daily-time-series');
    expect((await search({ query: 'zzzz-nothing' })).body.results).toEqual([]);
  });

  it('applies a pattern into a notebook at a position, filling its placeholders, and the cells run', async () => {
    const applied = await server.request('/api/patterns/revenue-by-region/apply', {
      method: 'POST',
      json: { notebook: nb, position: 0, params: { data: 'sales' }, run: true },
    });
    expect(applied.status, applied.text).toBe(200);
    expect(applied.body.cells.map((c: { cell_type: string }) => c.cell_type)).toEqual(['markdown', 'code']);
    const cells = (await server.request(`/api/notebooks/${nb}/cells`)).body.cells;
    // Inserted at the top, before the data cell, yet it runs: order in the notebook is not execution order.
    expect(cells[0].source).toBe('## Revenue by region');
    expect(cells[1].source).toContain('revenue_sales');
    expect(cells[1].state).toBe('success');
    expect(cells[1].outputs[0].data['text/plain']).toContain('north');
  });

  it('answers 404 for an unknown pattern or notebook and 422 for a bad search body', async () => {
    expect((await server.request('/api/patterns/nope/apply', { method: 'POST', json: { notebook: nb } })).status).toBe(404);
    const ghost = await server.request('/api/patterns/train-test-split/apply', {
      method: 'POST',
      json: { notebook: 'ghost.nb.ts', params: { data: 'sales' } },
    });
    expect(ghost.status).toBe(404);
    expect(ghost.body.detail).toBe('notebook ghost.nb.ts not found');
    const bad = await server.request('/api/patterns/search', { method: 'POST', json: { tags: 'sales' } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toMatch(/body\.tags/);
  });

  it('refuses to apply without every placeholder value', async () => {
    const res = await server.request('/api/patterns/revenue-by-region/apply', { method: 'POST', json: { notebook: nb } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/needs params: data/);
  });

  it('ships starter patterns that run on real data', async () => {
    const params: Record<string, Record<string, string>> = {
      'data-overview': { data: 'sales' },
      'group-and-aggregate': { data: 'sales', by: 'region', value: 'amount' },
      'train-test-split': { data: 'sales' },
      'correlation-matrix': { data: 'sales' },
      'daily-time-series': { data: 'sales', date: 'day', value: 'amount' },
      'random-forest-baseline': { data: 'sales', target: 'returned' },
    };
    for (const [id, values] of Object.entries(params)) {
      const res = await server.request(`/api/patterns/${id}/apply`, { method: 'POST', json: { notebook: nb, params: values, run: true } });
      expect(res.status, res.text).toBe(200);
      for (const cell of res.body.cells.filter((c: { cell_type: string }) => c.cell_type === 'code')) {
        const now = (await server.request(`/api/notebooks/${nb}/cells/${cell.id}`)).body;
        expect(now.state, `${id}: ${JSON.stringify(now.outputs)}`).toBe('success');
      }
    }
  }, 60_000);

  it('deletes a pattern, and a deleted starter is not re-seeded', async () => {
    expect((await server.request('/api/patterns/revenue-by-region', { method: 'DELETE' })).status).toBe(204);
    expect((await server.request('/api/patterns/revenue-by-region')).status).toBe(404);
    expect((await server.request('/api/patterns/revenue-by-region', { method: 'DELETE' })).status).toBe(404);
    expect((await server.request('/api/patterns/data-overview', { method: 'DELETE' })).status).toBe(204);
  });
});

describe('patterns persist in the workspace store', () => {
  it('keeps created and deleted patterns across a restart', async () => {
    const { makeWorkspace } = await import('../support/server.js');
    const root = await makeWorkspace();
    const first = await startTestServer({ root });
    await first.request('/api/patterns', { method: 'POST', json: { ...body, name: 'Kept' } });
    await first.request('/api/patterns/data-overview', { method: 'DELETE' });
    await first.stop();
    const second = await startTestServer({ root });
    try {
      const ids = (await second.request('/api/patterns')).body.patterns.map((p: { id: string }) => p.id);
      expect(ids).toContain('kept');
      expect(ids).not.toContain('data-overview');
    } finally {
      await second.stop();
    }
  }, 30_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { MESSY_CELL, notebookWith, runCell } from './helpers.js';

let server: TestServer;
let nb = '';

beforeAll(async () => {
  server = await startTestServer();
  nb = await notebookWith(server, 'prep', [MESSY_CELL, "import * as aq from 'arquero';\nconst table = aq.from(messy);", 'const count = 5;', 'const words = ["a", "b"];']);
}, 60_000);

afterAll(async () => {
  await server.stop();
});

const prep = (variable: string, query = '') => server.request(`/api/smartprep/${variable}${query}`);

describe('GET /api/smartprep/{var_name}', () => {
  it('answers rows, columns, total_issues and suggestions for an array of records', async () => {
    const res = await prep('messy', '?target=churned');
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ variable: 'messy', rows: 205, columns: 11, target: 'churned' });
    expect(res.body.total_issues).toBe(res.body.suggestions.length);
    for (const s of res.body.suggestions) {
      expect(Object.keys(s)).toEqual(expect.arrayContaining(['type', 'severity', 'column', 'title', 'reason', 'code']));
      expect(['high', 'medium', 'low']).toContain(s.severity);
    }
    const found = res.body.suggestions.map((s: { type: string; column: string | null }) => `${s.type}:${s.column}`);
    expect(found).toEqual(expect.arrayContaining([
      'duplicate_rows:null', 'missing_values:age', 'outliers:age', 'skewed:income', 'numeric_as_string:price_text',
      'date_as_string:signup', 'near_constant_column:country', 'constant_column:source', 'mixed_types:score',
      'high_cardinality:id', 'class_imbalance:churned', 'target_leakage:refund_issued',
    ]));
    // Clean columns get no suggestion.
    expect(found.filter((f: string) => f.endsWith(':city'))).toEqual([]);
    const dup = res.body.suggestions.find((s: { type: string }) => s.type === 'duplicate_rows');
    expect(dup.title).toBe('5 duplicate rows');
    // Severities come sorted, most serious first.
    const rank = { high: 0, medium: 1, low: 2 } as Record<string, number>;
    const ranks = res.body.suggestions.map((s: { severity: string }) => rank[s.severity]);
    expect(ranks).toEqual([...ranks].sort());
  });

  it('reads arquero tables the same way', async () => {
    const res = await prep('table', '?target=churned');
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ rows: 205, columns: 11 });
    const records = await prep('messy', '?target=churned');
    const kinds = (b: { suggestions: Array<{ type: string; column: string }> }) => b.suggestions.map((s) => `${s.type}:${s.column}`).sort();
    expect(kinds(res.body)).toEqual(kinds(records.body));
  });

  it('does not look for class imbalance or leakage without a target', async () => {
    const res = await prep('messy');
    const types = res.body.suggestions.map((s: { type: string }) => s.type);
    expect(types).not.toContain('class_imbalance');
    expect(types).not.toContain('target_leakage');
    expect(res.body.target).toBeNull();
  });

  it('generates code that fixes each issue when run in the kernel', async () => {
    const res = await prep('messy', '?target=churned');
    for (const suggestion of res.body.suggestions) {
      const cell = await runCell(server, nb, suggestion.code);
      expect(cell.state, `${suggestion.type}:${suggestion.column}\n${suggestion.code}\n${JSON.stringify(cell.outputs)}`).toBe('success');
      // The fixed table keeps the target unless the fix is about the target itself.
      const after = await prep(suggestion.fixed_as, '?target=churned');
      expect(after.status, after.text).toBe(200);
      const still = after.body.suggestions.filter((s: { type: string; column: string | null }) => s.type === suggestion.type && s.column === suggestion.column);
      expect(still, `${suggestion.type}:${suggestion.column} is still reported after its fix`).toEqual([]);
    }
  }, 120_000);

  it('answers 404 naming an unknown variable', async () => {
    const res = await prep('nope');
    expect(res.status).toBe(404);
    expect(res.body.detail).toMatch(/variable "nope" is not defined/);
    expect(res.body.detail).toContain('messy');
  });

  it('answers 422 saying what is expected for a value that is not tabular', async () => {
    for (const name of ['count', 'words']) {
      const res = await prep(name);
      expect(res.status, res.text).toBe(422);
      expect(res.body.detail).toMatch(/expected an array of records .* or an arquero table/);
    }
    expect((await prep('count')).body.detail).toContain('count is a number');
  });

  it('answers 422 listing the columns for an unknown target', async () => {
    const res = await prep('messy', '?target=nope');
    expect(res.status).toBe(422);
    expect(res.body.detail).toBe('target column "nope" is not a column of messy; its columns are: id, age, income, city, price_text, signup, country, source, score, refund_issued, churned');
  });

  it('answers 404 for a variable of a notebook that is named but not running', async () => {
    await server.request('/api/notebooks', { method: 'POST', json: { name: 'idle' } });
    const res = await prep('messy', '?notebook=idle.nb.ts');
    expect(res.status).toBe(404);
    expect(res.body.detail).toMatch(/variable "messy" is not defined in notebook idle\.nb\.ts/);
  });
});

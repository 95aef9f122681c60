import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { MESSY_CELL, notebookWith, runCell } from './helpers.js';

let server: TestServer;
let nb = '';

beforeAll(async () => {
  server = await startTestServer();
  nb = await notebookWith(server, 'prep', [
    MESSY_CELL,
    "import * as aq from 'arquero';\nconst table = aq.from(messy);",
    'const count = 5;',
    'const words = ["a", "b"];',
  ]);
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
    expect(found).toEqual(
      expect.arrayContaining([
        'duplicate_rows:null',
        'missing_values:age',
        'outliers:age',
        'skewed:income',
        'numeric_as_string:price_text',
        'date_as_string:signup',
        'near_constant_column:country',
        'constant_column:source',
        'mixed_types:score',
        'high_cardinality:id',
        'class_imbalance:churned',
        'target_leakage:refund_issued',
      ]),
    );
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
      const still = after.body.suggestions.filter(
        (s: { type: string; column: string | null }) => s.type === suggestion.type && s.column === suggestion.column,
      );
      expect(still, `${suggestion.type}:${suggestion.column} is still reported after its fix`).toEqual([]);
    }
  }, 120_000);

  it('fixes the other kinds too: categorical and date gaps, mostly-missing columns, stray types, many categories, a numeric leak', async () => {
    await runCell(
      server,
      nb,
      `const shop = Array.from({ length: 300 }, (_, i) => ({
  city: i % 10 === 4 ? null : ['Oslo', 'Bergen', 'Oslo', 'Bodo'][i % 4],
  joined: i % 20 === 6 ? null : new Date(Date.UTC(2024, i % 12, 1 + (i % 27))),
  notes: i % 10 < 7 ? null : i % 2 ? 'called back' : 'emailed',
  active: i % 20 === 1 ? 'yes' : i % 3 === 0,
  zip: 'Z-' + ((i * 7) % 80),
  code: i % 20 === 2 ? 7 : 'A' + (i % 9),
  size: 40 + ((i * 37) % 60),
  price: 1000 + ((i * 37) % 60) * 5 + ((i * 13) % 50) * 20,
  price_with_tax: (1000 + ((i * 37) % 60) * 5 + ((i * 13) % 50) * 20) * 1.25,
}));`,
    );
    const res = await prep('shop', '?target=price');
    expect(res.status, res.text).toBe(200);
    const byKey = new Map(res.body.suggestions.map((s: { type: string; column: string }) => [`${s.type}:${s.column}`, s]));
    const expected = [
      'missing_values:city',
      'missing_values:joined',
      'missing_values:notes',
      'mixed_types:active',
      'mixed_types:code',
      'high_cardinality:zip',
      'target_leakage:price_with_tax',
    ];
    expect([...byKey.keys()], [...byKey.keys()].join(' ')).toEqual(expect.arrayContaining(expected));
    expect(byKey.has('target_leakage:size')).toBe(false);
    expect((byKey.get('missing_values:notes') as { code: string }).code).toContain('_aq.not("notes")');
    expect((byKey.get('high_cardinality:zip') as { title: string }).title).toBe('zip has 80 categories');
    for (const key of expected) {
      const suggestion = byKey.get(key) as { type: string; column: string; code: string; fixed_as: string };
      const cell = await runCell(server, nb, suggestion.code);
      expect(cell.state, `${key}\n${suggestion.code}\n${JSON.stringify(cell.outputs)}`).toBe('success');
      const after = await prep(suggestion.fixed_as, '?target=price');
      const still = after.body.suggestions.filter(
        (s: { type: string; column: string }) => s.type === suggestion.type && s.column === suggestion.column,
      );
      expect(still, `${key} is still reported after its fix`).toEqual([]);
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
    expect(res.body.detail).toBe(
      'target column "nope" is not a column of messy; its columns are: id, age, income, city, price_text, signup, country, source, score, refund_issued, churned',
    );
  });

  it('answers 404 for a variable of a notebook that is named but not running', async () => {
    await server.request('/api/notebooks', { method: 'POST', json: { name: 'idle' } });
    const res = await prep('messy', '?notebook=idle.nb.ts');
    expect(res.status).toBe(404);
    expect(res.body.detail).toMatch(/variable "messy" is not defined in notebook idle\.nb\.ts/);
  });

  it('answers 409 when several running notebooks define the name, and ?notebook= picks one', async () => {
    await notebookWith(server, 'other', ['const messy = [{ a: 1 }, { a: 2 }, { a: 2 }];']);
    try {
      const both = await prep('messy');
      expect(both.status).toBe(409);
      expect(both.body.detail).toMatch(/defined in several notebooks \(.*other\.nb\.ts.*\); say which with \?notebook=/);
      expect(both.body.detail).toContain('prep.nb.ts');
      const picked = await prep('messy', '?notebook=other.nb.ts');
      expect(picked.body).toMatchObject({ rows: 3, columns: 1 });
      expect((await prep('messy', `?notebook=${nb}`)).body.rows).toBe(205);
    } finally {
      await server.request('/api/notebooks/other.nb.ts/session', { method: 'DELETE' });
    }
  });
});

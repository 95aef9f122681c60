/**
 * The snippet library: small, self-contained cells a data person inserts and edits. Unlike
 * patterns they have no placeholders and are not stored per workspace; each snippet's names start
 * with `_` except the one it defines for later cells, so inserting several never clashes.
 */
export interface Snippet {
  id: string;
  title: string;
  description: string;
  tags: string[];
  source: string;
}

export const SNIPPETS: Snippet[] = [
  {
    id: 'load-csv',
    title: 'Load a CSV file',
    description: 'Read a CSV file next to the notebook into an arquero table (types inferred).',
    tags: ['io', 'csv', 'arquero'],
    source:
      "import * as _aq from 'arquero';\nimport { readFileSync as _read } from 'node:fs';\nconst csv_table = _aq.fromCSV(_read(notebookPath('data.csv'), 'utf8'));\ncsv_table",
  },
  {
    id: 'load-json',
    title: 'Load a JSON file',
    description: 'Read an array of records from a JSON file next to the notebook.',
    tags: ['io', 'json'],
    source:
      "import { readFileSync as _read } from 'node:fs';\nconst json_rows = JSON.parse(_read(notebookPath('data.json'), 'utf8'));\njson_rows.length",
  },
  {
    id: 'pivot',
    title: 'Pivot table',
    description: 'Spread the values of one column into columns (a wide table), summing per cell.',
    tags: ['reshape', 'pivot', 'arquero'],
    source:
      "import * as _aq from 'arquero';\n" +
      "const _t = _aq.from([{ year: 2023, city: 'Oslo', sales: 3 }, { year: 2023, city: 'Bergen', sales: 1 }, { year: 2024, city: 'Oslo', sales: 4 }]);\n" +
      "const pivoted = _t.groupby('year').pivot('city', { sales: 'd => op.sum(d.sales)' });\npivoted",
  },
  {
    id: 'describe-numbers',
    title: 'Describe numeric columns',
    description: 'count, mean, std, min, quartiles and max of every numeric column (like pandas describe).',
    tags: ['eda', 'statistics', 'arquero'],
    source:
      "import * as _aq from 'arquero';\n" +
      'const _rows = [{ a: 1, b: 2 }, { a: 3, b: 5 }, { a: 4, b: 9 }];\n' +
      'const _t = _aq.from(_rows);\n' +
      "const described = _t.columnNames().filter((c) => Array.from(_t.array(c)).every((v) => typeof v === 'number')).map((c) => {\n" +
      '  const xs = Float64Array.from(_t.array(c)).sort();\n' +
      '  const q = (p) => { const pos = (xs.length - 1) * p, lo = Math.floor(pos), hi = Math.ceil(pos); return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo); };\n' +
      '  const mean = xs.reduce((s, x) => s + x, 0) / xs.length;\n' +
      '  const std = Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / Math.max(1, xs.length - 1));\n' +
      '  return { column: c, count: xs.length, mean, std, min: xs[0], q25: q(0.25), median: q(0.5), q75: q(0.75), max: xs[xs.length - 1] };\n' +
      '});\ndescribed',
  },
  {
    id: 'value-counts',
    title: 'Value counts',
    description: 'How often each value of a column occurs, most frequent first.',
    tags: ['eda', 'categorical', 'arquero'],
    source:
      "import * as _aq from 'arquero';\n" +
      "const _t = _aq.from([{ city: 'Oslo' }, { city: 'Bergen' }, { city: 'Oslo' }]);\n" +
      "const value_counts = _t.groupby('city').count().orderby(_aq.desc('count'));\nvalue_counts",
  },
  {
    id: 'bar-chart',
    title: 'Bar chart',
    description: 'A bar chart of values by category with the chart helper.',
    tags: ['plot', 'chart', 'visualisation'],
    source:
      "chart({\n  mark: 'bar',\n  data: { values: [{ category: 'a', value: 3 }, { category: 'b', value: 5 }] },\n" +
      "  encoding: { x: { field: 'category', type: 'nominal' }, y: { field: 'value', type: 'quantitative' } },\n})",
  },
  {
    id: 'timer',
    title: 'Time a block of code',
    description: 'Measure how long some code takes with performance.now().',
    tags: ['performance', 'timing'],
    source:
      'const _start = performance.now();\nlet _sum = 0;\nfor (let i = 0; i < 1e6; i++) _sum += i;\nconst elapsed_ms = performance.now() - _start;\nelapsed_ms',
  },
  {
    id: 'train-test-split',
    title: 'Train/test split',
    description: 'Split an array of rows 80/20 after a seeded shuffle.',
    tags: ['modeling', 'validation', 'split'],
    source:
      'let _seed = 1;\nconst _random = () => ((_seed = (_seed * 1103515245 + 12345) % 2147483648) / 2147483648);\n' +
      'const _rows = Array.from({ length: 100 }, (_, i) => ({ x: i, y: 2 * i }));\n' +
      'for (let i = _rows.length - 1; i > 0; i--) { const j = Math.floor(_random() * (i + 1)); [_rows[i], _rows[j]] = [_rows[j], _rows[i]]; }\n' +
      'const split = { train: _rows.slice(0, 80), test: _rows.slice(80) };\n({ train: split.train.length, test: split.test.length })',
  },
  {
    id: 'markdown-table',
    title: 'Table as Markdown',
    description: 'Render an arquero table as a Markdown table (for reports).',
    tags: ['report', 'markdown', 'arquero'],
    source:
      "import * as _aq from 'arquero';\nconst markdown_table = _aq.from([{ a: 1, b: 'x' }, { a: 2, b: 'y' }]).toMarkdown();\nmd(markdown_table)",
  },
];

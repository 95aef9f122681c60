/**
 * The starter patterns shipped with Hangar. Each cell uses arquero (and mljs for models), takes
 * its inputs from `{{placeholders}}`, and names what it defines after `{{data}}`, so the same
 * pattern can be applied to several data sets in one notebook.
 */
import type { PatternCreateBody } from './schemas.js';

const code = (source: string) => ({ cell_type: 'code' as const, source });
const md = (source: string) => ({ cell_type: 'markdown' as const, source });

export const STARTER_PATTERNS: PatternCreateBody[] = [
  {
    name: 'Data overview',
    description: 'One row per column: type, missing values, distinct values, min, max and an example. The first look at any new data set.',
    tags: ['eda', 'profiling', 'missing-values'],
    problem_type: 'exploration',
    data_type: 'tabular',
    cells: [
      md('## Overview of `{{data}}`'),
      code(
        "import * as _aq from 'arquero';\n" +
          'const _t = _aq.from({{data}});\n' +
          'const {{data}}_overview = _t.columnNames().map((column) => {\n' +
          '  const values = Array.from(_t.array(column));\n' +
          "  const present = values.filter((v) => v != null && !(typeof v === 'number' && Number.isNaN(v)) && v !== '');\n" +
          "  const numbers = present.filter((v) => typeof v === 'number');\n" +
          '  return {\n' +
          '    column,\n' +
          "    type: numbers.length === present.length ? 'number' : typeof present[0],\n" +
          '    missing: values.length - present.length,\n' +
          '    distinct: new Set(present).size,\n' +
          '    min: numbers.length ? Math.min(...numbers) : null,\n' +
          '    max: numbers.length ? Math.max(...numbers) : null,\n' +
          '    example: present[0] ?? null,\n' +
          '  };\n' +
          '});\n' +
          '{{data}}_overview',
      ),
    ],
  },
  {
    name: 'Group and aggregate',
    description: 'Count rows and average a value per group (SQL GROUP BY), largest groups first.',
    tags: ['eda', 'aggregation', 'groupby'],
    problem_type: 'exploration',
    data_type: 'tabular',
    cells: [
      code(
        "import * as _aq from 'arquero';\n" +
          'const {{data}}_by_{{by}} = _aq\n' +
          '  .from({{data}})\n' +
          "  .groupby('{{by}}')\n" +
          "  .rollup({ count: 'd => op.count()', mean_{{value}}: 'd => op.mean(d[\"{{value}}\"])', total_{{value}}: 'd => op.sum(d[\"{{value}}\"])' })\n" +
          "  .orderby(_aq.desc('count'));\n" +
          '{{data}}_by_{{by}}',
      ),
    ],
  },
  {
    name: 'Train/test split',
    description:
      'Shuffle the rows with a fixed seed and split them 80/20 into train and test sets, so a model is judged on rows it never saw.',
    tags: ['modeling', 'validation', 'split'],
    problem_type: 'classification',
    data_type: 'tabular',
    cells: [
      code(
        "import * as _aq from 'arquero';\n" +
          '// A seeded shuffle: the same split on every run, so results can be compared.\n' +
          'let _seed = 42;\n' +
          'const _random = () => ((_seed = (_seed * 1103515245 + 12345) % 2147483648) / 2147483648);\n' +
          'const _rows = _aq.from({{data}}).objects();\n' +
          'for (let i = _rows.length - 1; i > 0; i--) { const j = Math.floor(_random() * (i + 1)); [_rows[i], _rows[j]] = [_rows[j], _rows[i]]; }\n' +
          'const _cut = Math.round(_rows.length * 0.8);\n' +
          'const {{data}}_split = { train: _rows.slice(0, _cut), test: _rows.slice(_cut) };\n' +
          '({ train: {{data}}_split.train.length, test: {{data}}_split.test.length })',
      ),
    ],
  },
  {
    name: 'Correlation matrix',
    description: 'Pearson correlation between every pair of numeric columns, to spot redundant features and candidate predictors.',
    tags: ['eda', 'correlation', 'features'],
    problem_type: 'exploration',
    data_type: 'tabular',
    cells: [
      code(
        "import * as _aq from 'arquero';\n" +
          'const _t = _aq.from({{data}});\n' +
          "const _numeric = _t.columnNames().filter((c) => Array.from(_t.array(c)).every((v) => v == null || typeof v === 'number'));\n" +
          'const _pearson = (a, b) => {\n' +
          '  const rows = a.map((x, i) => [x, b[i]]).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));\n' +
          '  const mx = rows.reduce((s, [x]) => s + x, 0) / rows.length, my = rows.reduce((s, [, y]) => s + y, 0) / rows.length;\n' +
          '  let sxy = 0, sxx = 0, syy = 0;\n' +
          '  for (const [x, y] of rows) { sxy += (x - mx) * (y - my); sxx += (x - mx) ** 2; syy += (y - my) ** 2; }\n' +
          '  return sxx && syy ? sxy / Math.sqrt(sxx * syy) : 0;\n' +
          '};\n' +
          'const {{data}}_correlations = _numeric.map((a) => ({ column: a, ...Object.fromEntries(_numeric.map((b) => [b, Number(_pearson(Array.from(_t.array(a)), Array.from(_t.array(b))).toFixed(3))])) }));\n' +
          '{{data}}_correlations',
      ),
    ],
  },
  {
    name: 'Daily time series',
    description:
      'Resample events to one row per day (count and sum of a value), the usual first step before plotting or forecasting a time series.',
    tags: ['time-series', 'resample', 'aggregation'],
    problem_type: 'forecasting',
    data_type: 'time-series',
    cells: [
      code(
        "import * as _aq from 'arquero';\n" +
          'const {{data}}_daily = _aq\n' +
          '  .from({{data}})\n' +
          "  .derive({ day: _aq.escape((d) => new Date(d['{{date}}']).toISOString().slice(0, 10)) })\n" +
          "  .groupby('day')\n" +
          "  .rollup({ events: 'd => op.count()', total: 'd => op.sum(d[\"{{value}}\"])' })\n" +
          "  .orderby('day');\n" +
          '{{data}}_daily',
      ),
    ],
  },
  {
    name: 'Random forest baseline',
    description:
      'Train a random forest classifier on the numeric columns with a held-out 20% and report its accuracy: a quick baseline before feature work.',
    tags: ['modeling', 'baseline', 'random-forest'],
    problem_type: 'classification',
    data_type: 'tabular',
    cells: [
      code(
        "import { RandomForestClassifier as _Forest } from 'ml-random-forest';\n" +
          "import * as _aq from 'arquero';\n" +
          "const _rows = _aq.from({{data}}).objects().filter((r) => r['{{target}}'] != null);\n" +
          "const _features = Object.keys(_rows[0]).filter((k) => k !== '{{target}}' && _rows.every((r) => typeof r[k] === 'number'));\n" +
          "const _classes = [...new Set(_rows.map((r) => r['{{target}}']))];\n" +
          'const _cut = Math.round(_rows.length * 0.8);\n' +
          'const _X = _rows.map((r) => _features.map((f) => r[f]));\n' +
          "const _y = _rows.map((r) => _classes.indexOf(r['{{target}}']));\n" +
          'const _model = new _Forest({ nEstimators: 25, seed: 42 });\n' +
          '_model.train(_X.slice(0, _cut), _y.slice(0, _cut));\n' +
          'const _predicted = _model.predict(_X.slice(_cut));\n' +
          'const {{data}}_baseline = { model: _model, features: _features, classes: _classes, accuracy: _predicted.filter((p, i) => p === _y[_cut + i]).length / _predicted.length };\n' +
          '({ features: _features, accuracy: {{data}}_baseline.accuracy })',
      ),
    ],
  },
];

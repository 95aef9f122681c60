/**
 * Notebook data-intelligence benchmarks (issue 9), against a real server and a real kernel:
 * 1. GET /api/smartprep on 100,000 rows × 20 columns (every kind of issue present): target ≤ 2 s.
 * 2. GET /api/algorithm-match with a target on the same data: within its documented budget
 *    (5 s of scoring, plus reading the frame), target ≤ 6 s.
 * 3. The training code algorithm match generates for its Random Forest, run on 4,000 rows: target
 *    ≤ 5 s ("finishes in seconds", #23; ml-random-forest took ~40 s).
 * Baseline, measured in the same kernel: one cell making a single pass over every value
 * (counting missing ones), the least any column analysis must do.
 */
import { rm } from 'node:fs/promises';
import { startServer } from '../core/app/server.js';
import { Logger } from '../core/kernel/log.js';
import { notebookIntelSubsystem } from '../core/notebook/intel/subsystem.js';
import { notebookSubsystem } from '../core/notebook/subsystem.js';
import { median, report, round, workspace } from './lib/measure.js';

const DATA = `
const big = (() => {
  let seed = 3;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const cities = Array.from({ length: 40 }, (_, i) => 'city-' + i);
  const rows = new Array(100000);
  for (let i = 0; i < rows.length; i++) {
    const x = rand();
    rows[i] = {
      id: 'id-' + i,
      n1: x * 100, n2: rand() < 0.05 ? null : rand() * 50, n3: Math.exp(rand() * 6), n4: rand() < 0.001 ? 1e6 : rand(),
      n5: Math.round(rand() * 10), n6: x * 2 + rand(), n7: rand() - 0.5,
      c1: cities[i % 40], c2: ['a', 'b', 'c'][i % 3], c3: rand() < 0.97 ? 'same' : 'other', c4: 'sku-' + (i % 1000),
      c5: i % 2 ? 'yes' : 'no', c6: rand() < 0.1 ? '' : 'v' + (i % 7),
      s1: String(Math.round(x * 1000)), s2: (x * 1e4).toFixed(2),
      date: '2024-' + String(1 + (i % 12)).padStart(2, '0') + '-15',
      flag: rand() < 0.5, constant: 'k',
      label: x < 0.1 ? 'rare' : 'common',
    };
  }
  return rows;
})();
`;

const BASELINE = `const _counts = {};
for (const row of big) for (const k in row) { const v = row[k]; if (v == null || v === '') _counts[k] = (_counts[k] ?? 0) + 1; }
const missing_counts = _counts;`;

async function main() {
  const root = await workspace({});
  const server = await startServer({ root, port: 0, watch: false, window: false, logLevel: 'silent' } as never, {
    subsystems: [notebookSubsystem, notebookIntelSubsystem],
    logger: new Logger('silent'),
  });
  await server.discovered;
  const call = async (path: string, init?: RequestInit & { json?: unknown }) => {
    const res = await fetch(server.url + path, {
      ...init,
      headers: { 'content-type': 'application/json' },
      body: init?.json === undefined ? undefined : JSON.stringify(init.json),
    });
    const body = await res.json();
    if (!res.ok) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(body)}`);
    return body;
  };
  try {
    await call('/api/notebooks', { method: 'POST', json: { name: 'bench', cells: [{ source: DATA }, { source: BASELINE }] } });
    await call('/api/notebooks/bench.nb.ts/run', { method: 'POST' });
    const columns = (await call('/api/smartprep/big')).columns;

    const baseline: number[] = [];
    for (let i = 0; i < 5; i++) {
      await call('/api/notebooks/bench.nb.ts/tools/benchmark', {
        method: 'POST',
        json: { cell: (await call('/api/notebooks/bench.nb.ts/cells')).cells[1].id, runs: 1 },
      }).then((r) => baseline.push(r.median_ms));
    }
    const prep: number[] = [];
    let issues = 0;
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      issues = (await call('/api/smartprep/big?target=label')).total_issues;
      prep.push(performance.now() - started);
    }
    const p = median(prep);
    const b = median(baseline);
    report({
      name: `smartprep 100,000 rows × ${columns} columns (${issues} issues)`,
      value: p,
      unit: 'ms',
      baseline: { label: 'one-pass missing count', value: b },
      target: { on: 'value', op: '<=', limit: 2000, unit: 'ms' },
      detail: `${round(p)} ms median vs one-pass missing count ${round(b)} ms`,
    });

    const match: number[] = [];
    let summary = '';
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const body = await call('/api/algorithm-match/big?target=label');
      match.push(performance.now() - started);
      summary = `${body.task_type}, prep ${body.data_characteristics.prep_ms} ms, ${body.recommendations.length} scored, best ${body.recommendations[0].name} ${round(body.recommendations[0].score, 3)}, not scored: ${body.data_characteristics.not_scored.join(', ') || 'none'}`;
    }
    const m = median(match);
    report({
      name: `algorithm-match 100,000 rows × ${columns} columns (5 s scoring budget)`,
      value: m,
      unit: 'ms',
      baseline: { label: 'one-pass missing count', value: b },
      target: { on: 'value', op: '<=', limit: 6000, unit: 'ms' },
      detail: `${round(m)} ms median vs one-pass ${round(b)} ms (${summary})`,
    });

    // The training code algorithm match hands the user (#23: it took ~40 s on 4,000 rows with
    // ml-random-forest): the Random Forest's cell, run on 4,000 rows of the same data.
    const sample = await call('/api/notebooks/bench.nb.ts/cells', {
      method: 'POST',
      json: { source: 'const rows4k = big.slice(0, 4000)' },
    });
    await call(`/api/notebooks/bench.nb.ts/cells/${sample.id}/run`, { method: 'POST' });
    const forest = (await call('/api/algorithm-match/rows4k?target=label')).recommendations.find(
      (r: { name: string }) => r.name === 'Random Forest',
    );
    if (!forest) throw new Error('algorithm match did not score the Random Forest on 4,000 rows');
    const training = await call('/api/notebooks/bench.nb.ts/cells', { method: 'POST', json: { source: forest.code } });
    const trained = await call('/api/notebooks/bench.nb.ts/tools/benchmark', { method: 'POST', json: { cell: training.id, runs: 3 } });
    report({
      name: `algorithm-match training code: 20-tree forest, 4,000 rows × ${columns} columns`,
      value: trained.median_ms,
      unit: 'ms',
      baseline: { label: 'one-pass missing count', value: b },
      target: { on: 'value', op: '<=', limit: 5000, unit: 'ms' },
      detail: `${round(trained.median_ms)} ms median of 3 runs of the generated cell vs one-pass ${round(b)} ms`,
    });
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
}

await main();

// Notebook engine benchmarks (issue 8), bundled and run by bench/run.mjs
// (`npm run bench -- notebook`). Measures:
//   1. analysis + ordering of a generated 1,000-cell notebook (budget 200 ms)
//   2. engine overhead per re-run cell over a chain of 100 dependents, against running the same
//      code directly in one worker (budget 1 ms per cell beyond the user code)
//   3. kernel start (budget 150 ms) and interrupt-to-ready of an infinite loop (budget 1 s)
// Figures are medians; each line ends with the ratio to its budget (< 1.00 is within budget), and
// each is recorded for the runner's summary with its budget as the target.
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { analyzeNotebook } from '../core/notebook/analysis/index.ts';
import { NotebookRuntime } from '../core/notebook/runtime.ts';
import { Notebook } from '../core/notebook/schemas.ts';
import { NotebookSession } from '../core/notebook/session.ts';
import { record } from './lib/figures.mjs';
import { median, repo } from './lib/measure.ts';

const fmt = (ms) => `${ms.toFixed(ms < 10 ? 3 : 1)} ms`;
/** This benchmark's own line format, kept; the figure is recorded with its budget as its target. */
const line = (label, value, budget, baseline = null) => {
  const figure = record({ name: label, value, unit: 'ms', baseline, target: { on: 'value', op: '<=', limit: budget, unit: 'ms' } });
  console.log(
    `${label.padEnd(58)} ${fmt(value).padStart(12)}   budget ${fmt(budget).padStart(10)}   ratio ${(value / budget).toFixed(2)}${figure.pass ? '' : '   MISS'}`,
  );
};

// ---- 1. analysis + ordering --------------------------------------------------------------------
function generate(n, run, tsEvery) {
  // Each cell reads one or two earlier cells' names (a realistic, branching DAG); every
  // `tsEvery`-th cell carries type annotations so it goes through esbuild's TypeScript path.
  return Array.from({ length: n }, (_, i) => {
    const reads = i === 0 ? '1' : `v${i - 1}${i > 7 ? ` + v${i - 7}` : ''}`;
    const ts = tsEvery && i % tsEvery === 0;
    const source = ts
      ? `// run ${run}\nconst v${i}: number = ${reads};\nfunction f${i}(x: number): number { const local = x * 2; return local + v${i}; }`
      : `// run ${run}\nconst v${i} = ${reads};\nfunction f${i}(x) { const local = x * 2; return local + v${i}; }`;
    return { id: `c${String(i).padStart(7, '0')}`, cell_type: 'code', source };
  });
}

async function timeAnalysis(tsEvery, runs = 7) {
  const times = [];
  for (let run = 0; run < runs; run++) {
    const cells = generate(1000, `${tsEvery}-${run}`, tsEvery); // unique sources: no cache hits
    const started = performance.now();
    const result = await analyzeNotebook(cells);
    times.push(performance.now() - started);
    if (result.order.length !== 1000) throw new Error(`expected 1000 ordered cells, got ${result.order.length}`);
  }
  return median(times);
}

console.log(
  `notebook engine benchmarks (medians); load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} on ${os.cpus().length} cores\n`,
);
await timeAnalysis(5, 2); // warm up esbuild's service and the JIT
line('analysis+order, 1,000 cells, 1 in 5 TypeScript (cold)', await timeAnalysis(5), 200);
line('analysis+order, 1,000 cells, plain JavaScript (cold)', await timeAnalysis(0), 200);
line('analysis+order, 1,000 cells, all TypeScript (cold)', await timeAnalysis(1), 200);
{
  // After an edit only the edited cell is parsed again (cache by source).
  const cells = generate(1000, 'warm', 5);
  await analyzeNotebook(cells);
  const times = [];
  for (let i = 0; i < 7; i++) {
    cells[500] = { ...cells[500], source: `${cells[500].source}\n// edit ${i}` };
    const started = performance.now();
    await analyzeNotebook(cells);
    times.push(performance.now() - started);
  }
  line('analysis+order after editing one cell of 1,000', median(times), 200);
}

// ---- 2. engine overhead per re-run cell --------------------------------------------------------
const CHAIN = 100;
const chainCells = (first) =>
  Array.from({ length: CHAIN + 1 }, (_, i) => ({
    id: `k${String(i).padStart(7, '0')}`,
    source: i === 0 ? `const k0 = ${first}` : `const k${i} = k${i - 1} + 1`,
  }));

const session = new NotebookSession(Notebook.parse({ name: 'bench', cells: chainCells(1) }));
await session.runAll();
const engine = [];
for (let i = 0; i < 15; i++) {
  await session.updateCell('k0000000', { source: `const k0 = ${i + 2}` });
  const started = performance.now();
  await session.runCell('k0000000');
  engine.push(performance.now() - started);
  const last = session.cell(`k${String(CHAIN).padStart(7, '0')}`).outputs;
  if (session.state(`k${String(CHAIN).padStart(7, '0')}`) !== 'success' || last.length !== 0) throw new Error('chain did not run');
}
await session.close();

// Baseline: the same cell code, run directly in one worker thread, one message per cell.
const baselineWorker = new Worker(
  `const { parentPort } = require('node:worker_threads');
   const vm = require('node:vm');
   parentPort.on('message', (code) => { vm.runInThisContext(code); parentPort.postMessage(0); });`,
  { eval: true },
);
const send = (code) =>
  new Promise((resolve) => {
    baselineWorker.once('message', resolve);
    baselineWorker.postMessage(code);
  });
const baseline = [];
for (let i = 0; i < 15; i++) {
  const codes = Array.from({ length: CHAIN + 1 }, (_, j) => (j === 0 ? `var k0 = ${i + 2}` : `var k${j} = k${j - 1} + 1`));
  const started = performance.now();
  for (const code of codes) await send(code);
  baseline.push(performance.now() - started);
}
await baselineWorker.terminate();
const perCellEngine = median(engine) / (CHAIN + 1);
const perCellBaseline = median(baseline) / (CHAIN + 1);
console.log('');
console.log(`${`re-run chain of ${CHAIN} dependents: engine, per cell`.padEnd(58)} ${fmt(perCellEngine).padStart(12)}`);
console.log(`${'same code directly in one worker, per cell (baseline)'.padEnd(58)} ${fmt(perCellBaseline).padStart(12)}`);
line('engine overhead per cell (engine - baseline)', Math.max(0, perCellEngine - perCellBaseline), 1, {
  label: 'the same code run directly in one worker, per cell',
  value: perCellBaseline,
});
console.log(`${'engine / baseline'.padEnd(58)} ${(perCellEngine / perCellBaseline).toFixed(2).padStart(10)}x`);

// ---- 3. kernel start, interrupt-to-ready --------------------------------------------------------
const starts = [];
for (let i = 0; i < 10; i++) {
  const kernel = new NotebookRuntime({ baseDir: repo });
  const started = performance.now();
  await kernel.start();
  starts.push(performance.now() - started);
  await kernel.close();
}
console.log('');
line('kernel start (worker boot to first answer)', median(starts), 150);

const interrupts = [];
for (let i = 0; i < 5; i++) {
  const s = new NotebookSession(Notebook.parse({ name: 'loop', cells: [{ id: 'loop0001', source: 'while (true) {}' }] }));
  const running = s.runCell('loop0001');
  while (s.state('loop0001') !== 'running') await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 50));
  const started = performance.now();
  await s.interrupt();
  interrupts.push(performance.now() - started);
  await running;
  await s.close();
}
line('interrupt of an infinite loop to ready kernel', median(interrupts), 1000);

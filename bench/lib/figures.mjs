// How a benchmark reports a figure: one human line on stdout and, when bench/run.mjs started it,
// one JSON line appended to the file named by BENCH_FIGURES_FILE. The runner reads those lines
// back, so PASS/MISS, the summary table, the results JSON and the README table all come from the
// same record, and the verdict is computed here from the target rather than written by hand.
//
// Plain JavaScript so the benchmarks that run unbundled (bench/endpoints.mjs) can import it too.
import { appendFileSync } from 'node:fs';

// Not HANGAR_*: the CLI reads every HANGAR_* variable as a setting and refuses unknown ones, and
// the benchmarks pass their environment on to the servers they start.
export const FIGURES_ENV = 'BENCH_FIGURES_FILE';
/** Set by `npm run bench -- --profile NAME`: benchmarks add `--cpu-prof` to the servers they start. */
export const PROFILE_ENV = 'BENCH_PROFILE_DIR';

/** Node flags that make a server process write a .cpuprofile on exit, when profiling was asked for. */
export function profileArgs() {
  const dir = process.env[PROFILE_ENV];
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
}

const OPS = {
  '<=': { sign: '≤', test: (a, b) => a <= b },
  '<': { sign: '<', test: (a, b) => a < b },
  '>=': { sign: '≥', test: (a, b) => a >= b },
  '>': { sign: '>', test: (a, b) => a > b },
  '=': { sign: '=', test: (a, b) => a === b },
};

const round = (x, digits) => Math.round(x * 10 ** digits) / 10 ** digits;
/** Enough digits to read a ratio or a small figure, no more. */
export const show = (x) =>
  x == null
    ? '–'
    : !Number.isFinite(x)
      ? String(x)
      : Math.abs(x) >= 100
        ? String(Math.round(x))
        : String(round(x, Math.abs(x) >= 1 ? 2 : 3));

/** "≤ 1000 ms", "≥ 0.4×": the target as the summary and the README print it. */
export function targetText(target) {
  if (!target) return 'none (context)';
  const op = OPS[target.op];
  if (!op) throw new Error(`unknown target operator ${JSON.stringify(target.op)}`);
  const unit = target.on === 'ratio' || target.unit === '×' ? '×' : target.unit ? ` ${target.unit}` : '';
  return `${op.sign} ${target.limit}${unit}`;
}

/**
 * Check and normalise a figure: the ratio is value / baseline unless given, and `pass` is the
 * target's test on the value or the ratio, and-ed with every extra condition (`also`). A figure
 * without a target is context: recorded, printed, never a MISS.
 */
export function evaluate(input) {
  const { name, value, unit, baseline = null, target = null, also = [], detail = null } = input;
  if (typeof name !== 'string' || !name) throw new Error('a figure needs a name');
  if (typeof value !== 'number' || Number.isNaN(value)) throw new Error(`figure "${name}": value must be a number, got ${value}`);
  if (typeof unit !== 'string') throw new Error(`figure "${name}": unit must be a string`);
  if (baseline !== null && (typeof baseline.value !== 'number' || typeof baseline.label !== 'string')) {
    throw new Error(`figure "${name}": baseline must be { label, value }`);
  }
  const ratio = input.ratio ?? (baseline && baseline.value !== 0 ? value / baseline.value : null);
  let pass = null;
  if (target) {
    if (target.on !== 'value' && target.on !== 'ratio') throw new Error(`figure "${name}": target.on must be "value" or "ratio"`);
    if (!OPS[target.op]) throw new Error(`figure "${name}": unknown target operator ${JSON.stringify(target.op)}`);
    const subject = target.on === 'ratio' ? ratio : value;
    if (subject === null) throw new Error(`figure "${name}": a ratio target needs a baseline or a ratio`);
    pass = OPS[target.op].test(subject, target.limit) && also.every((c) => c.pass);
  }
  return {
    name,
    value,
    unit,
    baseline,
    ratio,
    target: target ? { ...target, text: targetText(target) } : null,
    also: also.map((c) => ({ label: c.label, pass: Boolean(c.pass) })),
    pass,
    detail,
  };
}

/** Append the figure to the runner's file, if a runner is listening. */
export function record(input) {
  const figure = evaluate(input);
  const file = process.env[FIGURES_ENV];
  if (file) appendFileSync(file, `${JSON.stringify(figure)}\n`);
  return figure;
}

/**
 * Print `name: detail | ratio r | target t | PASS` and record the figure.
 *
 * @example
 * report({
 *   name: 'POST /invoke (no-op agent) throughput', value: 9748, unit: 'req/s',
 *   baseline: { label: 'bare node:http, same JSON', value: 37811 },
 *   target: { on: 'ratio', op: '>=', limit: 0.4 },
 *   detail: '9748 req/s vs bare node:http 37811 req/s',
 * });
 */
export function report(input) {
  const figure = record(input);
  const verdict = figure.pass === null ? 'context' : figure.pass ? 'PASS' : 'MISS';
  const detail =
    figure.detail ??
    `${show(figure.value)} ${figure.unit}${figure.baseline ? ` vs ${figure.baseline.label} ${show(figure.baseline.value)} ${figure.unit}` : ''}`;
  const failed = figure.also
    .filter((c) => !c.pass)
    .map((c) => ` (failed: ${c.label})`)
    .join('');
  console.log(`${figure.name}: ${detail} | ratio ${show(figure.ratio)} | target ${targetText(figure.target)} | ${verdict}${failed}`);
  return figure;
}

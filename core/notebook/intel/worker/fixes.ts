/**
 * The code of each smart-preprocessing suggestion: a cell that fixes one issue with arquero (the
 * notebook's data-frame library) and defines the fixed table under a new name.
 *
 * Why a new name: in a reactive notebook a name has exactly one defining cell, so a fix cannot
 * reassign the user's variable; it defines `<variable>_<fix>` instead. Helper names start with `_`,
 * which keeps them private to the cell, so several fix cells can live in one notebook without
 * "defined twice" errors. Values the fix needs (median, fences, kept categories) are computed by
 * the cell from the data, not pasted in, so the cell stays right when the data changes.
 */

/** `col` as a JS expression on row `d`: `d.age`, or `d["unit price"]` for other names. */
const field = (col: string) => (/^[A-Za-z_$][\w$]*$/.test(col) ? `d.${col}` : `d[${JSON.stringify(col)}]`);
const key = (col: string) => JSON.stringify(col);

/** A JS identifier derived from the variable, the column and what the fix does. */
export function fixName(variable: string, column: string | null, what: string): string {
  const part = (s: string) => s.replace(/[^A-Za-z0-9_$]+/g, '_').replace(/^_+|_+$/g, '');
  return [variable, column ? part(column) : '', what].filter(Boolean).join('_');
}

const header = (variable: string, comment: string) => `// ${comment}\nimport * as _aq from 'arquero';\nconst _t = _aq.from(${variable});\n`;

const MISSING_FN =
  "const _missing = (v) => v == null || (typeof v === 'number' && Number.isNaN(v)) || (typeof v === 'string' && v.trim() === '');\n";

const TO_NUMBER_FN =
  "const _toNumber = (v) => { const x = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v.replace(/,/g, '')) : Number.NaN; return Number.isFinite(x) ? x : null; };\n";

export function imputeMedian(variable: string, col: string, out: string): string {
  return (
    header(variable, `fill the missing values of ${col} with its median (robust to outliers, unlike the mean)`) +
    MISSING_FN +
    `const _sorted = Float64Array.from(_t.array(${key(col)}).filter((v) => typeof v === 'number' && Number.isFinite(v))).sort();\n` +
    `const _median = _sorted.length % 2 ? _sorted[(_sorted.length - 1) / 2] : (_sorted[_sorted.length / 2 - 1] + _sorted[_sorted.length / 2]) / 2;\n` +
    `const ${out} = _t.derive({ ${key(col)}: _aq.escape((d) => (_missing(${field(col)}) ? _median : ${field(col)})) });\n` +
    `${out}`
  );
}

export function imputeMode(variable: string, col: string, out: string): string {
  return (
    header(variable, `fill the missing values of ${col} with its most frequent value`) +
    MISSING_FN +
    `const _counts = new Map();\n` +
    `for (const v of _t.array(${key(col)})) if (!_missing(v)) _counts.set(v, (_counts.get(v) ?? 0) + 1);\n` +
    `const _mode = [..._counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;\n` +
    `const ${out} = _t.derive({ ${key(col)}: _aq.escape((d) => (_missing(${field(col)}) ? _mode : ${field(col)})) });\n` +
    `${out}`
  );
}

export function dropMissingRows(variable: string, col: string, out: string): string {
  return (
    header(variable, `drop the rows where ${col} is missing (a date cannot be guessed safely)`) +
    MISSING_FN +
    `const ${out} = _t.filter(_aq.escape((d) => !_missing(${field(col)})));\n` +
    `${out}`
  );
}

export function dropColumns(variable: string, cols: string[], out: string, why: string): string {
  return header(variable, why) + `const ${out} = _t.select(_aq.not(${cols.map(key).join(', ')}));\n${out}`;
}

export function dedupe(variable: string, out: string): string {
  return header(variable, 'keep the first of each group of identical rows') + `const ${out} = _t.dedupe();\n${out}`;
}

export type Coercion = 'number' | 'string' | 'boolean' | 'date';

export function coerce(variable: string, col: string, to: Coercion, out: string): string {
  const convert: Record<Coercion, string> = {
    number: `_toNumber(${field(col)})`,
    string: `${field(col)} == null ? null : String(${field(col)})`,
    boolean: `${field(col)} == null ? null : ${field(col)} === true || ${field(col)} === 1 || /^(true|yes|1)$/i.test(String(${field(col)}))`,
    date: `(() => { const v = ${field(col)}; if (v == null || v === '') return null; const t = v instanceof Date ? v : new Date(v); return Number.isNaN(t.getTime()) ? null : t; })()`,
  };
  const what: Record<Coercion, string> = {
    number: 'parse the values of COL as numbers ("1,200" → 1200); what does not parse becomes null',
    string: 'store every value of COL as text',
    boolean: 'store every value of COL as a boolean (true/yes/1 → true)',
    date: 'parse the values of COL as dates; what does not parse becomes null',
  };
  return (
    header(variable, what[to].replace('COL', col)) +
    (to === 'number' ? TO_NUMBER_FN : '') +
    `const ${out} = _t.derive({ ${key(col)}: _aq.escape((d) => ${convert[to]}) });\n` +
    `${out}`
  );
}

export function clipOutliers(variable: string, col: string, out: string): string {
  return (
    header(variable, `clip ${col} to the Tukey fences (1.5 × IQR beyond the quartiles): keeps the rows, tames the extremes`) +
    `const _sorted = Float64Array.from(_t.array(${key(col)}).filter((v) => typeof v === 'number' && Number.isFinite(v))).sort();\n` +
    `const _q = (p) => { const pos = (_sorted.length - 1) * p, lo = Math.floor(pos), hi = Math.ceil(pos); return _sorted[lo] + (_sorted[hi] - _sorted[lo]) * (pos - lo); };\n` +
    `const _iqr = _q(0.75) - _q(0.25);\n` +
    `const _low = _q(0.25) - 1.5 * _iqr;\n` +
    `const _high = _q(0.75) + 1.5 * _iqr;\n` +
    `const ${out} = _t.derive({ ${key(col)}: _aq.escape((d) => (typeof ${field(col)} === 'number' && Number.isFinite(${field(col)}) ? Math.min(_high, Math.max(_low, ${field(col)})) : ${field(col)})) });\n` +
    `${out}`
  );
}

export function logTransform(variable: string, col: string, out: string): string {
  return (
    header(variable, `log-transform ${col}: sign(x)·log(1 + |x|) pulls in the long tail and keeps zeros and signs`) +
    `const ${out} = _t.derive({ ${key(col)}: _aq.escape((d) => (typeof ${field(col)} === 'number' ? Math.sign(${field(col)}) * Math.log1p(Math.abs(${field(col)})) : ${field(col)})) });\n` +
    `${out}`
  );
}

export function groupRare(variable: string, col: string, keep: number, out: string): string {
  return (
    header(variable, `keep the ${keep} most frequent values of ${col} and group the rest as "Other" (fewer levels to encode)`) +
    `const _counts = new Map();\n` +
    `for (const v of _t.array(${key(col)})) if (v != null) _counts.set(v, (_counts.get(v) ?? 0) + 1);\n` +
    `const _keep = new Set([..._counts].sort((a, b) => b[1] - a[1]).slice(0, ${keep}).map(([v]) => v));\n` +
    `const ${out} = _t.derive({ ${key(col)}: _aq.escape((d) => (${field(col)} == null || _keep.has(${field(col)}) ? ${field(col)} : 'Other')) });\n` +
    `${out}`
  );
}

export function oversample(variable: string, target: string, out: string): string {
  return (
    header(
      variable,
      `random oversampling: repeat rows of the smaller classes of ${target} until every class is as large as the largest (do this on the training split only)`,
    ) +
    `const _classes = [...new Set(_t.array(${key(target)}))];\n` +
    `const _parts = _classes.map((c) => _t.filter(_aq.escape((d) => ${field(target)} === c)));\n` +
    `const _largest = Math.max(..._parts.map((p) => p.numRows()));\n` +
    `const ${out} = _parts\n` +
    `  .map((p) => (p.numRows() < _largest ? p.concat(p.sample(_largest - p.numRows(), { replace: true })) : p))\n` +
    `  .reduce((a, b) => a.concat(b));\n` +
    `${out}`
  );
}

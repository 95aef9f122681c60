/**
 * Tabular values as the analysis functions see them, inside the kernel's thread: an array of plain
 * records or an arquero table, read column by column. Anything else is not tabular, and the
 * answer says what is expected (the routes turn it into a 422).
 */

export type FrameKind = 'records' | 'arquero';

export interface Frame {
  kind: FrameKind;
  rows: number;
  columns: string[];
  /** The values of one column, in row order (missing keys read as undefined). */
  column(name: string): unknown[];
}

/** Thrown inside the worker; the server side maps `status` onto the HTTP answer. */
export class AnalysisError extends Error {
  constructor(
    readonly status: 404 | 422,
    message: string,
  ) {
    super(message);
    this.name = 'AnalysisError';
  }
}

interface ArqueroLike {
  numRows(): number;
  columnNames(): string[];
  array(name: string): ArrayLike<unknown>;
}

const isArquero = (value: unknown): value is ArqueroLike =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as ArqueroLike).numRows === 'function' &&
  typeof (value as ArqueroLike).columnNames === 'function' &&
  typeof (value as ArqueroLike).array === 'function';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);

export const EXPECTED = 'an array of records (objects with the same keys, e.g. [{ age: 31, city: "Oslo" }]) or an arquero table';

export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value))
    return value.length === 0 ? 'an empty array' : `an array of ${describeValue(value.find((v) => v !== undefined))}s`;
  if (value instanceof Date) return 'a Date';
  if (typeof value === 'object') return `an object (${value.constructor?.name ?? 'Object'})`;
  return `a ${typeof value}`;
}

/** Read `value` as a frame, or throw a 422 saying what was expected and what was found. */
export function toFrame(value: unknown, variable: string): Frame {
  if (isArquero(value)) {
    const table = value;
    const cache = new Map<string, unknown[]>();
    return {
      kind: 'arquero',
      rows: table.numRows(),
      columns: table.columnNames(),
      column(name) {
        let values = cache.get(name);
        if (!values) cache.set(name, (values = Array.from(table.array(name))));
        return values;
      },
    };
  }
  if (Array.isArray(value) && value.length > 0 && value.every(isRecord)) {
    const rows = value as Array<Record<string, unknown>>;
    // Columns in first-seen order over every row: records of a real data set may omit keys.
    const seen = new Set<string>();
    for (const row of rows) for (const key in row) seen.add(key);
    const columns = [...seen];
    let table: Map<string, unknown[]> | undefined;
    // One pass over the rows fills every column; done lazily, once, on the first column read.
    const build = () => {
      const arrays = columns.map(() => new Array<unknown>(rows.length));
      for (let r = 0; r < rows.length; r++) {
        const row = rows[r];
        for (let c = 0; c < columns.length; c++) arrays[c][r] = row[columns[c]];
      }
      return new Map(columns.map((name, c) => [name, arrays[c]]));
    };
    return {
      kind: 'records',
      rows: rows.length,
      columns,
      column(name) {
        table ??= build();
        return table.get(name) ?? new Array(rows.length).fill(undefined);
      },
    };
  }
  throw new AnalysisError(422, `${variable} is ${describeValue(value)}; expected ${EXPECTED}`);
}

/** Check the target column exists; a 422 lists the columns there are. */
export function checkTarget(frame: Frame, target: string | undefined, variable: string): void {
  if (target !== undefined && !frame.columns.includes(target)) {
    throw new AnalysisError(422, `target column "${target}" is not a column of ${variable}; its columns are: ${frame.columns.join(', ')}`);
  }
}

export const isMissing = (v: unknown): boolean =>
  v === null || v === undefined || (typeof v === 'number' && Number.isNaN(v)) || (typeof v === 'string' && v.trim() === '');

const NUMERIC_STRING = /^\s*[-+]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?([eE][-+]?\d+)?\s*$/;
/** ISO dates and datetimes, and the common d/m/y or m/d/y forms. */
const DATE_STRING = /^\s*(\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?|\d{1,2}\/\d{1,2}\/\d{4})\s*$/;

export const isNumericString = (s: string): boolean => /\d/.test(s) && NUMERIC_STRING.test(s);
export const isDateString = (s: string): boolean => DATE_STRING.test(s) && !Number.isNaN(Date.parse(s));

export type ValueKind = 'number' | 'string' | 'boolean' | 'date' | 'object';

export function kindOf(v: unknown): ValueKind {
  if (typeof v === 'number' || typeof v === 'bigint') return 'number';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'boolean';
  if (v instanceof Date) return 'date';
  return 'object';
}

/** What one pass over a column tells about it. */
export interface ColumnProfile {
  name: string;
  missing: number;
  present: number;
  kinds: Partial<Record<ValueKind, number>>;
  /** The kind most present values have. */
  kind: ValueKind | 'empty';
  distinct: number;
  /**
   * Count of each distinct value, only kept while there are at most `DISTINCT_LIMIT`. Keys are the
   * values themselves for numbers, text and booleans (a Map keeps 1 and "1" apart), and a
   * `valueKey` string for dates and objects.
   */
  counts: Map<unknown, number>;
  numericStrings: number;
  dateStrings: number;
  /** Finite numbers of the column (numbers only, not numeric strings). */
  numbers: Float64Array;
}

/** Past this many distinct values a column's value counts stop being tracked (memory bound). */
export const DISTINCT_LIMIT = 5000;

/** The key a value is counted under in `ColumnProfile.counts`. */
export function valueKey(v: unknown): unknown {
  if (v instanceof Date) return `\u0000date:${v.getTime()}`;
  if (typeof v === 'object' && v !== null) return `\u0000json:${JSON.stringify(v)}`;
  return v;
}

/** 0 = ordinary text, 1 = a number written as text, 2 = a date written as text. */
const textClass = (s: string): 0 | 1 | 2 => (isNumericString(s) ? 1 : isDateString(s) ? 2 : 0);

export function profileColumn(name: string, values: unknown[]): ColumnProfile {
  const kinds: Partial<Record<ValueKind, number>> = {};
  // Value counting is the hot loop of smart preprocessing (rows × columns): raw values as Map
  // keys avoid building a string per value, and text is classified once per distinct value.
  let counts = new Map<unknown, number>();
  let overflow: Set<unknown> | undefined;
  const textClasses = new Map<string, 0 | 1 | 2>();
  let missing = 0;
  let numericStrings = 0;
  let dateStrings = 0;
  const numbers = new Float64Array(values.length);
  let n = 0;
  for (const v of values) {
    if (isMissing(v)) {
      missing++;
      continue;
    }
    const kind = kindOf(v);
    kinds[kind] = (kinds[kind] ?? 0) + 1;
    if (kind === 'number') {
      const num = Number(v);
      if (Number.isFinite(num)) numbers[n++] = num;
    } else if (kind === 'string') {
      const s = v as string;
      let cls = textClasses.get(s);
      if (cls === undefined) {
        cls = textClass(s);
        if (textClasses.size < DISTINCT_LIMIT) textClasses.set(s, cls);
      }
      if (cls === 1) numericStrings++;
      else if (cls === 2) dateStrings++;
    }
    const key = kind === 'date' || kind === 'object' ? valueKey(v) : v;
    if (!overflow) {
      counts.set(key, (counts.get(key) ?? 0) + 1);
      if (counts.size > DISTINCT_LIMIT) {
        overflow = new Set(counts.keys());
        counts = new Map();
      }
    } else overflow.add(key);
  }
  const present = values.length - missing;
  let kind: ColumnProfile['kind'] = 'empty';
  let best = 0;
  for (const [k, c] of Object.entries(kinds) as Array<[ValueKind, number]>) {
    if (c > best) {
      best = c;
      kind = k;
    }
  }
  return {
    name,
    missing,
    present,
    kinds,
    kind,
    distinct: overflow ? overflow.size : counts.size,
    counts,
    numericStrings,
    dateStrings,
    numbers: numbers.subarray(0, n),
  };
}

/** Quantile by linear interpolation on a sorted array (numpy's default, so numbers match pandas). */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

export function mean(xs: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i];
  return xs.length ? s / xs.length : Number.NaN;
}

/** Sample skewness (Fisher-Pearson, as pandas' `skew` without the bias correction). */
export function skewness(xs: Float64Array): number {
  const m = mean(xs);
  let m2 = 0;
  let m3 = 0;
  for (const x of xs) {
    const d = x - m;
    m2 += d * d;
    m3 += d * d * d;
  }
  m2 /= xs.length;
  m3 /= xs.length;
  return m2 === 0 ? 0 : m3 / m2 ** 1.5;
}

export function pearson(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const ma = mean(a);
  const mb = mean(b);
  let sab = 0;
  let saa = 0;
  let sbb = 0;
  for (let i = 0; i < a.length; i++) {
    const da = a[i] - ma;
    const db = b[i] - mb;
    sab += da * db;
    saa += da * da;
    sbb += db * db;
  }
  return saa === 0 || sbb === 0 ? 0 : sab / Math.sqrt(saa * sbb);
}

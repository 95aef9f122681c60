/**
 * Smart preprocessing, run inside the notebook's kernel thread on the value itself: one pass per
 * column builds a profile, then each check reads the profiles. Only the answer (counts, titles,
 * code) leaves the thread.
 *
 * Thresholds are the ones data scientists meet in pandas-profiling / ydata and scikit-learn's
 * defaults; each is named below with why it is where it is.
 */
import * as fix from './fixes.js';
import {
  type ColumnProfile,
  checkTarget,
  type Frame,
  isMissing,
  pearson,
  profileColumn,
  quantile,
  skewness,
  toFrame,
  valueKey,
} from './frame.js';

export type Severity = 'high' | 'medium' | 'low';

export type SuggestionType =
  | 'missing_values'
  | 'duplicate_rows'
  | 'constant_column'
  | 'near_constant_column'
  | 'mixed_types'
  | 'numeric_as_string'
  | 'date_as_string'
  | 'outliers'
  | 'skewed'
  | 'high_cardinality'
  | 'class_imbalance'
  | 'target_leakage';

export interface Suggestion {
  type: SuggestionType;
  severity: Severity;
  /** The column concerned, or null for whole-table issues (duplicate rows). */
  column: string | null;
  title: string;
  reason: string;
  /** A cell that fixes the issue; it defines `fixed_as`. */
  code: string;
  fixed_as: string;
}

export interface ColumnSummary {
  name: string;
  type: string;
  missing: number;
  distinct: number;
}

export interface SmartPrepResult {
  variable: string;
  kind: Frame['kind'];
  rows: number;
  columns: number;
  target: string | null;
  total_issues: number;
  suggestions: Suggestion[];
  column_summary: ColumnSummary[];
}

/** A category covering at least this share of the rows makes a column near-constant (caret's nearZeroVar uses 95/5). */
const NEAR_CONSTANT_SHARE = 0.95;
/** Below this share of the most common type a column is "mixed" (a few stray values are still worth fixing). */
const PURE_TYPE_SHARE = 0.999;
/** Share of string values that must parse for a column to be "numbers (or dates) stored as text". */
const PARSABLE_SHARE = 0.9;
/** |skewness| above 1 is "highly skewed" (Bulmer's rule of thumb). */
const SKEW_LIMIT = 1;
/** Distinct text values past which one-hot encoding stops being reasonable. */
const HIGH_CARDINALITY = 50;
/** Categories kept when grouping rare ones. */
const KEEP_CATEGORIES = 20;
/** Minority/majority class ratio under which a classifier will mostly ignore the minority. */
const IMBALANCE_RATIO = 0.2;
/** |correlation| with the target at or above this is more likely a leak than a signal. */
const LEAKAGE_CORRELATION = 0.95;
/** Share of rows whose target a single category value determines, for a leak by category. */
const LEAKAGE_PURITY = 0.99;
/** Targets with at most this many distinct values are treated as classes. */
export const MAX_CLASSES = 20;

const pct = (n: number, of: number) => `${((100 * n) / of).toFixed(1)}%`;

function severityOfShare(share: number, high: number, medium: number): Severity {
  return share >= high ? 'high' : share >= medium ? 'medium' : 'low';
}

export function isClassTarget(profile: ColumnProfile): boolean {
  if (profile.kind === 'string' || profile.kind === 'boolean')
    return profile.distinct <= MAX_CLASSES || profile.distinct <= profile.present * 0.05;
  if (profile.kind === 'number') return profile.distinct <= Math.min(MAX_CLASSES, 10) && profile.numbers.every(Number.isInteger);
  return false;
}

export function smartprep(value: unknown, args: { variable: string; target?: string }): SmartPrepResult {
  const { variable, target } = args;
  const frame = toFrame(value, variable);
  checkTarget(frame, target, variable);
  const profiles = new Map(frame.columns.map((c) => [c, profileColumn(c, frame.column(c))]));
  const suggestions: Suggestion[] = [];
  const used = new Set<string>();
  // Two fixes of one column may pick the same name; every name must be unique, since a notebook
  // refuses a name defined by two cells.
  const add = (s: Omit<Suggestion, 'fixed_as'>, fixedAs: string) => {
    let name = fixedAs;
    for (let i = 2; used.has(name); i++) name = `${fixedAs}_${i}`;
    used.add(name);
    const code = name === fixedAs ? s.code : s.code.split(fixedAs).join(name);
    suggestions.push({ ...s, code, fixed_as: name });
  };
  const n = frame.rows;

  // Whole table: duplicate rows.
  const duplicates = countDuplicates(frame);
  if (duplicates > 0) {
    const out = fix.fixName(variable, null, 'deduped');
    add(
      {
        type: 'duplicate_rows',
        severity: severityOfShare(duplicates / n, 0.1, 0.01),
        column: null,
        title: `${duplicates} duplicate rows`,
        reason: `${duplicates} of ${n} rows (${pct(duplicates, n)}) repeat an earlier row exactly; they over-weight those observations and can leak between train and test splits.`,
        code: fix.dedupe(variable, out),
      },
      out,
    );
  }

  for (const p of profiles.values()) {
    const col = p.name;
    const isTarget = col === target;

    if (p.present === 0 || p.distinct <= 1) {
      if (!isTarget) {
        const out = fix.fixName(variable, col, 'dropped');
        add(
          {
            type: 'constant_column',
            severity: 'medium',
            column: col,
            title: p.present === 0 ? `${col} is always missing` : `${col} has a single value`,
            reason:
              p.present === 0
                ? `Every value of ${col} is missing; it carries no information.`
                : `Every present value of ${col} is the same; a model cannot learn anything from it.`,
            code: fix.dropColumns(variable, [col], out, `drop ${col}: it has no variation`),
          },
          out,
        );
      }
      continue;
    }

    if (p.missing > 0) {
      const share = p.missing / n;
      const out = fix.fixName(variable, col, share > 0.5 && !isTarget ? 'dropped' : 'imputed');
      const code =
        share > 0.5 && !isTarget
          ? fix.dropColumns(variable, [col], out, `drop ${col}: more than half of it is missing, imputing would invent most of it`)
          : p.kind === 'number'
            ? fix.imputeMedian(variable, col, out)
            : p.kind === 'date' || isTarget
              ? fix.dropMissingRows(variable, col, out)
              : fix.imputeMode(variable, col, out);
      add(
        {
          type: 'missing_values',
          severity: severityOfShare(share, 0.3, 0.05),
          column: col,
          title: `${p.missing} missing values in ${col}`,
          reason: `${p.missing} of ${n} values (${pct(p.missing, n)}) of ${col} are null, undefined, NaN or empty text; most learners cannot take them.`,
          code,
        },
        out,
      );
    }

    const kinds = Object.entries(p.kinds) as Array<[string, number]>;
    const topShare = (p.kinds[p.kind as keyof typeof p.kinds] ?? 0) / p.present;
    const stringsParse = p.kind === 'string' && (p.numericStrings + p.dateStrings) / p.present >= PARSABLE_SHARE;
    if (kinds.length > 1 && topShare < PURE_TYPE_SHARE && !stringsParse) {
      const to: fix.Coercion = p.kind === 'object' || p.kind === 'empty' ? 'string' : p.kind;
      const out = fix.fixName(variable, col, `as_${to}`);
      add(
        {
          type: 'mixed_types',
          severity: topShare < 0.9 ? 'high' : 'medium',
          column: col,
          title: `${col} mixes ${kinds.map(([k]) => k).join(' and ')} values`,
          reason: `${col} holds ${kinds.map(([k, c]) => `${c} ${k}`).join(', ')} values; most are ${p.kind}, so the others are probably entry errors or a missing-value marker.`,
          code: fix.coerce(variable, col, to, out),
        },
        out,
      );
    } else if (stringsParse && p.numericStrings >= p.dateStrings) {
      const out = fix.fixName(variable, col, 'as_number');
      add(
        {
          type: 'numeric_as_string',
          severity: 'medium',
          column: col,
          title: `${col} holds numbers stored as text`,
          reason: `${p.numericStrings} of ${p.present} values of ${col} are text that reads as a number ("${sampleOf(p)}"); as text they sort, compare and aggregate wrongly.`,
          code: fix.coerce(variable, col, 'number', out),
        },
        out,
      );
    } else if (stringsParse) {
      const out = fix.fixName(variable, col, 'as_date');
      add(
        {
          type: 'date_as_string',
          severity: 'medium',
          column: col,
          title: `${col} holds dates stored as text`,
          reason: `${p.dateStrings} of ${p.present} values of ${col} are text that reads as a date ("${sampleOf(p)}"); parsed, they can be compared, binned and split into parts.`,
          code: fix.coerce(variable, col, 'date', out),
        },
        out,
      );
    }

    if (!isTarget && p.distinct > 1 && p.counts.size > 0) {
      const top = Math.max(...p.counts.values());
      if (top / n >= NEAR_CONSTANT_SHARE) {
        const out = fix.fixName(variable, col, 'dropped');
        add(
          {
            type: 'near_constant_column',
            severity: 'low',
            column: col,
            title: `${col} is nearly constant`,
            reason: `One value of ${col} covers ${pct(top, n)} of the rows; the column has almost no variance and can destabilise models (and cross-validation folds may see only one value).`,
            code: fix.dropColumns(variable, [col], out, `drop ${col}: it is nearly constant`),
          },
          out,
        );
      }
    }

    if (p.kind === 'number' && p.numbers.length >= 8 && p.distinct > 2) {
      const sorted = Float64Array.from(p.numbers).sort();
      const q1 = quantile(sorted, 0.25);
      const q3 = quantile(sorted, 0.75);
      const iqr = q3 - q1;
      if (iqr > 0 && !isTarget) {
        const low = q1 - 1.5 * iqr;
        const high = q3 + 1.5 * iqr;
        let outside = 0;
        for (const x of sorted) if (x < low || x > high) outside++;
        if (outside > 0) {
          const out = fix.fixName(variable, col, 'clipped');
          add(
            {
              type: 'outliers',
              severity: severityOfShare(outside / p.numbers.length, 0.05, 0.01),
              column: col,
              title: `${outside} outliers in ${col}`,
              reason: `${outside} values of ${col} (${pct(outside, p.numbers.length)}) lie beyond the Tukey fences [${round(low)}, ${round(high)}] (quartiles ${round(q1)} and ${round(q3)}); they dominate squared-error losses and distance-based models.`,
              code: fix.clipOutliers(variable, col, out),
            },
            out,
          );
        }
      }
      const skew = skewness(p.numbers);
      if (Math.abs(skew) > SKEW_LIMIT && p.distinct > 10) {
        const out = fix.fixName(variable, col, 'log');
        add(
          {
            type: 'skewed',
            severity: Math.abs(skew) > 2 ? 'medium' : 'low',
            column: col,
            title: `${col} is ${skew > 0 ? 'right' : 'left'}-skewed`,
            reason: `The skewness of ${col} is ${skew.toFixed(2)} (|skew| > ${SKEW_LIMIT}); linear models and distance-based methods work better on a more symmetric scale.`,
            code: fix.logTransform(variable, col, out),
          },
          out,
        );
      }
    }

    if (!isTarget && p.kind === 'string' && !stringsParse && p.distinct > HIGH_CARDINALITY) {
      const identifier = p.distinct >= 0.9 * p.present;
      const out = fix.fixName(variable, col, identifier ? 'dropped' : 'grouped');
      add(
        {
          type: 'high_cardinality',
          severity: identifier ? 'medium' : 'low',
          column: col,
          title: identifier ? `${col} looks like an identifier` : `${col} has ${p.distinct} categories`,
          reason: identifier
            ? `${p.distinct} distinct values in ${p.present} rows: nearly every row has its own value, so the column identifies rows rather than describing them and only lets a model memorise.`
            : `${p.distinct} distinct text values: one-hot encoding would add ${p.distinct} sparse features, and rare categories cannot be learnt from a handful of rows.`,
          code: identifier
            ? fix.dropColumns(variable, [col], out, `drop ${col}: an identifier is not a feature`)
            : fix.groupRare(variable, col, KEEP_CATEGORIES, out),
        },
        out,
      );
    }
  }

  if (target !== undefined) {
    const tp = profiles.get(target)!;
    const classTarget = isClassTarget(tp);
    if (classTarget && tp.counts.size >= 2) {
      const sizes = [...tp.counts.entries()].sort((a, b) => b[1] - a[1]);
      const [majority, minority] = [sizes[0], sizes[sizes.length - 1]];
      const ratio = minority[1] / majority[1];
      if (ratio < IMBALANCE_RATIO) {
        const out = fix.fixName(variable, null, 'balanced');
        add(
          {
            type: 'class_imbalance',
            severity: ratio < 0.05 ? 'high' : 'medium',
            column: target,
            title: `${target} is imbalanced`,
            reason: `The smallest class (${label(minority[0])}: ${minority[1]} rows) is ${(ratio * 100).toFixed(1)}% the size of the largest (${label(majority[0])}: ${majority[1]} rows); accuracy will look good while the small class is missed. Judge models by balanced accuracy or F1, and rebalance the training data.`,
            code: fix.oversample(variable, target, out),
          },
          out,
        );
      }
    }
    for (const leak of findLeaks(frame, profiles, target, classTarget)) {
      const out = fix.fixName(variable, leak.column, 'dropped');
      add(
        {
          type: 'target_leakage',
          severity: 'high',
          column: leak.column,
          title: `${leak.column} may leak the target`,
          reason: `${leak.why} A feature this predictive is usually recorded after the outcome (or derived from it) and will not be available when predicting.`,
          code: fix.dropColumns(variable, [leak.column], out, `drop ${leak.column}: it leaks ${target}`),
        },
        out,
      );
    }
  }

  const order: Record<Severity, number> = { high: 0, medium: 1, low: 2 };
  suggestions.sort((a, b) => order[a.severity] - order[b.severity]);
  return {
    variable,
    kind: frame.kind,
    rows: n,
    columns: frame.columns.length,
    target: target ?? null,
    total_issues: suggestions.length,
    suggestions,
    column_summary: [...profiles.values()].map((p) => ({ name: p.name, type: p.kind, missing: p.missing, distinct: p.distinct })),
  };
}

const round = (x: number) => Number(x.toPrecision(4));
const label = (key: unknown) => JSON.stringify(typeof key === 'string' ? key.replace(/^\u0000(date|json):/, '') : key);

function sampleOf(p: ColumnProfile): string {
  for (const k of p.counts.keys()) if (typeof k === 'string') return k.slice(0, 40);
  return '';
}

/**
 * Rows identical to an earlier row, compared on every column (missing values compare equal).
 * Each column's values are first replaced by small integer ids, then rows are bucketed by a
 * 53-bit hash of their ids and compared id by id only within a bucket: no per-row key string.
 */
function countDuplicates(frame: Frame): number {
  const n = frame.rows;
  const idColumns = frame.columns.map((c) => {
    const values = frame.column(c);
    const idOf = new Map<unknown, number>();
    const ids = new Int32Array(n);
    for (let r = 0; r < n; r++) {
      const v = values[r];
      const key = isMissing(v) ? undefined : valueKey(v);
      let id = idOf.get(key);
      if (id === undefined) idOf.set(key, (id = idOf.size));
      ids[r] = id;
    }
    return ids;
  });
  const same = (a: number, b: number) => idColumns.every((ids) => ids[a] === ids[b]);
  const buckets = new Map<number, number[]>();
  let duplicates = 0;
  for (let r = 0; r < n; r++) {
    // FNV-1a and djb2 over the ids, combined into one exact double key.
    let h1 = 2166136261;
    let h2 = 5381;
    for (const ids of idColumns) {
      h1 = Math.imul(h1 ^ ids[r], 16777619);
      h2 = (Math.imul(h2, 33) + ids[r]) | 0;
    }
    const key = (h1 >>> 0) * 2097152 + ((h2 >>> 0) & 0x1fffff);
    const bucket = buckets.get(key);
    if (!bucket) buckets.set(key, [r]);
    else if (bucket.some((q) => same(q, r))) duplicates++;
    else bucket.push(r);
  }
  return duplicates;
}

function findLeaks(
  frame: Frame,
  profiles: Map<string, ColumnProfile>,
  target: string,
  classTarget: boolean,
): Array<{ column: string; why: string }> {
  const leaks: Array<{ column: string; why: string }> = [];
  const y = frame.column(target);
  const tp = profiles.get(target)!;
  // A numeric view of the target: itself when numeric, 0/1 when it has two classes.
  let yNum: Array<number | null> | undefined;
  if (tp.kind === 'number' && !classTarget) yNum = y.map((v) => (typeof v === 'number' && Number.isFinite(v) ? v : null));
  else if (classTarget && tp.counts.size === 2) {
    const first = [...tp.counts.keys()][0];
    yNum = y.map((v) => (isMissing(v) ? null : valueKey(v) === first ? 1 : 0));
  } else if (tp.kind === 'number') yNum = y.map((v) => (typeof v === 'number' && Number.isFinite(v) ? v : null));
  for (const p of profiles.values()) {
    if (p.name === target || p.present === 0 || p.distinct <= 1) continue;
    const x = frame.column(p.name);
    if (p.kind === 'number' && yNum) {
      const a: number[] = [];
      const b: number[] = [];
      for (let i = 0; i < x.length; i++) {
        const xv = x[i];
        const yv = yNum[i];
        if (typeof xv === 'number' && Number.isFinite(xv) && yv !== null) {
          a.push(xv);
          b.push(yv);
        }
      }
      const r = pearson(a, b);
      if (a.length >= 10 && Math.abs(r) >= LEAKAGE_CORRELATION) {
        leaks.push({ column: p.name, why: `Its correlation with ${target} is ${r.toFixed(3)}.` });
      }
      continue;
    }
    // A category that (almost) always comes with one target value; identifiers excluded, they
    // trivially "determine" everything and are reported as high-cardinality instead.
    if (classTarget && (p.kind === 'string' || p.kind === 'boolean') && p.distinct < 0.5 * p.present) {
      const byValue = new Map<unknown, Map<unknown, number>>();
      let rows = 0;
      for (let i = 0; i < x.length; i++) {
        if (isMissing(x[i]) || isMissing(y[i])) continue;
        rows++;
        let m = byValue.get(x[i]);
        if (!m) byValue.set(x[i], (m = new Map()));
        m.set(y[i], (m.get(y[i]) ?? 0) + 1);
      }
      let pure = 0;
      for (const m of byValue.values()) pure += Math.max(...m.values());
      const baseline = Math.max(...tp.counts.values()) / tp.present;
      if (rows >= 10 && pure / rows >= LEAKAGE_PURITY && baseline < LEAKAGE_PURITY) {
        leaks.push({
          column: p.name,
          why: `Knowing ${p.name} gives ${target} right for ${pct(pure, rows)} of the rows (always guessing the largest class: ${pct(baseline * rows, rows)}).`,
        });
      }
    }
  }
  return leaks;
}

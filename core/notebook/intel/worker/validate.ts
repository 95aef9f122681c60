/**
 * The data validator tool, inside the kernel thread: rules on the columns of a data frame (type,
 * range, uniqueness, nulls, allowed values, pattern) checked row by row. Each rule reports how many
 * rows break it and the first few of them (row index and value), so a million-row frame answers
 * with a small message.
 */
import { AnalysisError, isMissing, kindOf, toFrame } from './frame.js';

export interface Rule {
  column: string;
  type?: 'number' | 'integer' | 'string' | 'boolean' | 'date';
  min?: number;
  max?: number;
  unique?: boolean;
  not_null?: boolean;
  in?: Array<string | number | boolean>;
  pattern?: string;
}

export interface Violation {
  column: string;
  rule: string;
  count: number;
  /** First rows breaking the rule (0-based row index and the value found). */
  examples: Array<{ row: number; value: unknown }>;
  message: string;
}

export interface ValidationResult {
  variable: string;
  rows: number;
  rules: number;
  valid: boolean;
  violations: Violation[];
}

const EXAMPLES = 10;

const cloneable = (v: unknown) => (v instanceof Date ? v.toISOString() : typeof v === 'object' && v !== null ? JSON.stringify(v) : v);

export function validateFrame(value: unknown, args: { variable: string; rules: Rule[] }): ValidationResult {
  const frame = toFrame(value, args.variable);
  const violations: Violation[] = [];
  for (const rule of args.rules) {
    if (!frame.columns.includes(rule.column)) {
      throw new AnalysisError(
        422,
        `rule on "${rule.column}": not a column of ${args.variable}; its columns are: ${frame.columns.join(', ')}`,
      );
    }
    const values = frame.column(rule.column);
    const checks: Array<{ rule: string; message: string; breaks: (v: unknown) => boolean }> = [];
    if (rule.not_null) checks.push({ rule: 'not_null', message: 'is missing', breaks: isMissing });
    if (rule.type) {
      const type = rule.type;
      checks.push({
        rule: 'type',
        message: `is not of type ${type}`,
        breaks: (v) => !isMissing(v) && (type === 'integer' ? !(typeof v === 'number' && Number.isInteger(v)) : kindOf(v) !== type),
      });
    }
    if (rule.min !== undefined) {
      const min = rule.min;
      checks.push({ rule: 'min', message: `is below ${min}`, breaks: (v) => typeof v === 'number' && v < min });
    }
    if (rule.max !== undefined) {
      const max = rule.max;
      checks.push({ rule: 'max', message: `is above ${max}`, breaks: (v) => typeof v === 'number' && v > max });
    }
    if (rule.in) {
      const allowed = new Set<unknown>(rule.in);
      checks.push({
        rule: 'in',
        message: `is not one of ${rule.in.map((x) => JSON.stringify(x)).join(', ')}`,
        breaks: (v) => !isMissing(v) && !allowed.has(v),
      });
    }
    if (rule.pattern) {
      let re: RegExp;
      try {
        re = new RegExp(rule.pattern);
      } catch (err) {
        throw new AnalysisError(422, `rule on "${rule.column}": invalid pattern: ${(err as Error).message}`);
      }
      checks.push({ rule: 'pattern', message: `does not match /${rule.pattern}/`, breaks: (v) => !isMissing(v) && !re.test(String(v)) });
    }
    if (rule.unique) {
      const seen = new Set<unknown>();
      checks.push({
        rule: 'unique',
        message: 'repeats an earlier value',
        breaks: (v) => {
          if (isMissing(v)) return false;
          const k = v instanceof Date ? v.getTime() : v;
          if (seen.has(k)) return true;
          seen.add(k);
          return false;
        },
      });
    }
    for (const check of checks) {
      let count = 0;
      const examples: Violation['examples'] = [];
      for (let r = 0; r < values.length; r++) {
        if (!check.breaks(values[r])) continue;
        count++;
        if (examples.length < EXAMPLES) examples.push({ row: r, value: cloneable(values[r]) ?? null });
      }
      if (count > 0)
        violations.push({
          column: rule.column,
          rule: check.rule,
          count,
          examples,
          message: `${count} value${count === 1 ? '' : 's'} of ${rule.column} ${check.message}`,
        });
    }
  }
  return { variable: args.variable, rows: frame.rows, rules: args.rules.length, valid: violations.length === 0, violations };
}

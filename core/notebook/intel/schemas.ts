/**
 * Request bodies and query strings of the data-intelligence routes (spec 3, Part A: smart
 * preprocessing, algorithm match, patterns, the 13 tools, scheduling), and the two responses the
 * spec defines; routes.ts describes the other answers in words.
 */
import { z } from 'zod';

export const AnalysisQuery = z.object({
  /** Target column. */
  target: z.string().min(1).optional(),
  /** Notebook id (path inside notebooks/); optional when one running notebook defines the variable. */
  notebook: z.string().min(1).optional(),
});

export const AlgorithmMatchQuery = AnalysisQuery.extend({
  /** Time budget for cross-validation, ms (default 5000). */
  budget_ms: z.coerce.number().int().min(100).max(60_000).optional(),
});

export const PatternCell = z.object({
  source: z.string(),
  cell_type: z.enum(['code', 'markdown', 'raw']).default('code'),
});

/** The spec's pattern create body. */
export const PatternCreateBody = z.object({
  name: z.string().trim().min(1).max(200),
  description: z.string().default(''),
  tags: z.array(z.string().trim().min(1)).default([]),
  cells: z.array(PatternCell).min(1),
  problem_type: z.string().default('general'),
  data_type: z.string().default('tabular'),
});
export type PatternCreateBody = z.infer<typeof PatternCreateBody>;

export const PatternSearchBody = z.object({
  query: z.string().default(''),
  tags: z.array(z.string()).default([]),
  problem_type: z.string().optional(),
  data_type: z.string().optional(),
  limit: z.number().int().min(1).max(100).default(20),
});

export const PatternApplyBody = z.object({
  /** Notebook id the cells go into. */
  notebook: z.string().min(1),
  /** Insert position (0 = before the first cell); appended when absent. */
  position: z.number().int().min(0).optional(),
  /** Values for `{{placeholder}}`s in the pattern's cells. */
  params: z.record(z.string(), z.string()).default({}),
  /** Run the inserted cells after inserting them. */
  run: z.boolean().default(false),
});

export const BenchmarkBody = z.object({
  cell: z.string().min(1),
  runs: z.number().int().min(1).max(1000).default(5),
});

export const ValidationRule = z.object({
  column: z.string().min(1),
  type: z.enum(['number', 'integer', 'string', 'boolean', 'date']).optional(),
  min: z.number().optional(),
  max: z.number().optional(),
  unique: z.boolean().optional(),
  not_null: z.boolean().optional(),
  in: z.array(z.union([z.string(), z.number(), z.boolean()])).optional(),
  pattern: z.string().optional(),
});

export const ValidateBody = z.object({
  variable: z.string().min(1),
  rules: z.array(ValidationRule).min(1),
});

export const InstallBody = z.object({
  /** An npm package spec: `name`, `name@version`, `@scope/name`, or a path to a local package folder. */
  package: z
    .string()
    .min(1)
    .max(300)
    .refine((s) => !s.startsWith('-'), 'a package spec cannot start with "-"'),
});

export const ConvertBody = z.object({
  notebook: z.string().min(1),
  /** Write the converted file next to the original (409 when it exists). */
  save: z.boolean().default(false),
});

export const DiffBody = z.object({ a: z.string().min(1), b: z.string().min(1) });

export const SearchQuery = z.object({
  q: z.string().min(1),
  /** Where to look; default everywhere. */
  in: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});

export const SnippetQuery = z.object({ q: z.string().default(''), tag: z.string().optional() });

export const SnippetInsertBody = z.object({
  notebook: z.string().min(1),
  position: z.number().int().min(0).optional(),
});

export const ScheduleCreateBody = z.object({
  cron: z.string().min(1),
  /** IANA time zone the cron expression is read in (default: the server's). */
  timezone: z.string().min(1).optional(),
  name: z.string().default(''),
  /** Per-cell time limit of scheduled runs, ms (0 = none). */
  cell_timeout_ms: z.number().int().min(0).default(0),
});

/** `?run=true` runs the whole notebook before profiling. */
export const ProfileQuery = z.object({ run: z.enum(['true', 'false']).optional() });

export const HistoryQuery = z.object({ cell: z.string().optional() });

export const ScheduleRunsQuery = z.object({ limit: z.coerce.number().int().min(1).max(1000).default(50) });

// ---- responses ------------------------------------------------------------------------------

const Severity = z.enum(['high', 'medium', 'low']);

export const SmartPrepResponse = z.object({
  variable: z.string(),
  rows: z.number().int(),
  columns: z.number().int(),
  total_issues: z.number().int(),
  suggestions: z.array(
    z.object({
      type: z.string(),
      severity: Severity,
      column: z.string().nullable(),
      title: z.string(),
      reason: z.string(),
      code: z.string().describe('a cell that fixes the issue with arquero and defines `fixed_as`'),
      fixed_as: z.string(),
    }),
  ),
});

export const AlgorithmMatchResponse = z.object({
  variable: z.string(),
  task_type: z.enum(['classification', 'regression', 'clustering']),
  data_characteristics: z.object({ n_samples: z.number().int(), n_features: z.number().int() }).catchall(z.unknown()),
  recommendations: z.array(
    z.object({
      name: z.string(),
      score: z.number().describe('mean cross-validated accuracy (classification), R² (regression) or silhouette (clustering)'),
      speed: z.enum(['fast', 'medium', 'slow']),
      interpretability: z.enum(['high', 'medium', 'low']),
      reasons: z.array(z.string()),
      code: z.string(),
    }),
  ),
});

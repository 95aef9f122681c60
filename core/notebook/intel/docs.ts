/**
 * OpenAPI descriptions of the data-intelligence routes, the 13 tools and schedules (the spec leaves
 * the tool routes "not shown"; these are ours). Response schemas are given for the two responses
 * the spec defines; the others are described in words.
 */
import { z } from 'zod';
import type { RouteDoc } from '../../http/openapi.js';
import {
  AlgorithmMatchQuery, AnalysisQuery, BenchmarkBody, ConvertBody, DiffBody, InstallBody, PatternApplyBody, PatternCreateBody,
  PatternSearchBody, ScheduleCreateBody, SearchQuery, SnippetInsertBody, SnippetQuery, ValidateBody,
} from './schemas.js';

const Severity = z.enum(['high', 'medium', 'low']);

export const SmartPrepResponse = z.object({
  variable: z.string(),
  rows: z.number().int(),
  columns: z.number().int(),
  total_issues: z.number().int(),
  suggestions: z.array(z.object({
    type: z.string(),
    severity: Severity,
    column: z.string().nullable(),
    title: z.string(),
    reason: z.string(),
    code: z.string().describe('a cell that fixes the issue with arquero and defines `fixed_as`'),
    fixed_as: z.string(),
  })),
});

export const AlgorithmMatchResponse = z.object({
  variable: z.string(),
  task_type: z.enum(['classification', 'regression', 'clustering']),
  data_characteristics: z.object({ n_samples: z.number().int(), n_features: z.number().int() }).catchall(z.unknown()),
  recommendations: z.array(z.object({
    name: z.string(),
    score: z.number().describe('mean cross-validated accuracy (classification), R² (regression) or silhouette (clustering)'),
    speed: z.enum(['fast', 'medium', 'slow']),
    interpretability: z.enum(['high', 'medium', 'low']),
    reasons: z.array(z.string()),
    code: z.string(),
  })),
});

const TAGS = ['notebook data intelligence'];
const TOOL_TAGS = ['notebook tools'];
const SCHEDULE_TAGS = ['notebook schedules'];
const errors = {
  '404': { description: 'variable (or notebook) not found; the detail names it' },
  '422': { description: 'not tabular (the detail says what is expected), or unknown target (the detail lists the columns)' },
};

export const INTEL_DOCS: RouteDoc[] = [
  {
    method: 'get', path: '/api/smartprep/{var_name}', tags: TAGS, query: AnalysisQuery,
    summary: 'Smart preprocessing suggestions for a data frame in a running notebook',
    description: 'Computed inside the notebook kernel: missing values, duplicates, constant and near-constant columns, mixed types, numbers or dates stored as text, outliers, skew, high cardinality, and (with a target) class imbalance and target leakage. Each suggestion carries a runnable arquero cell that fixes it.',
    responses: { '200': { description: 'the smart preprocessing response', schema: SmartPrepResponse }, '409': { description: 'the variable is defined in several running notebooks: pass ?notebook=' }, ...errors },
  },
  {
    method: 'get', path: '/api/algorithm-match/{var_name}', tags: TAGS, query: AlgorithmMatchQuery,
    summary: 'Algorithms for a data frame, scored by cross-validation on a sample of it',
    description: 'task_type from the target (none → clustering). Candidates are scored with k-fold cross-validation on up to 2,000 sampled rows inside the kernel, within budget_ms (default 5,000 ms). Each recommendation has code that trains the model.',
    responses: { '200': { description: 'the algorithm match response', schema: AlgorithmMatchResponse }, ...errors },
  },
  { method: 'get', path: '/api/patterns', tags: TAGS, summary: 'List saved analysis patterns (starter patterns included)' },
  { method: 'post', path: '/api/patterns', tags: TAGS, body: PatternCreateBody, summary: 'Save a pattern', responses: { '201': { description: 'created' }, '409': { description: 'a pattern with that name exists' }, '422': { description: 'invalid body' } } },
  { method: 'post', path: '/api/patterns/search', tags: TAGS, body: PatternSearchBody, summary: 'Search patterns by text, tags, problem_type and data_type, best match first' },
  { method: 'get', path: '/api/patterns/{pattern_id}', tags: TAGS, summary: 'Read a pattern' },
  { method: 'delete', path: '/api/patterns/{pattern_id}', tags: TAGS, summary: 'Delete a pattern', responses: { '204': { description: 'deleted' }, '404': { description: 'no such pattern' } } },
  { method: 'post', path: '/api/patterns/{pattern_id}/apply', tags: TAGS, body: PatternApplyBody, summary: "Insert a pattern's cells into a notebook at a position ({{placeholders}} filled from params)" },
  { method: 'get', path: '/api/notebooks/{nb}/tools/profile', tags: TOOL_TAGS, summary: 'Profiler: time and heap change per cell over the runs of this session (?run=true runs all first)' },
  { method: 'post', path: '/api/notebooks/{nb}/tools/benchmark', tags: TOOL_TAGS, body: BenchmarkBody, summary: 'Benchmark: run one cell N times; min, median, max and mean in ms' },
  { method: 'post', path: '/api/notebooks/{nb}/tools/validate', tags: TOOL_TAGS, body: ValidateBody, summary: 'Data validator: type, range, uniqueness, null, allowed-value and pattern rules on a data frame; violations listed' },
  { method: 'get', path: '/api/notebooks/{nb}/tools/analyze', tags: TOOL_TAGS, summary: 'Code analyzer: undefined and unused names, cyclomatic complexity and lint findings per cell' },
  { method: 'get', path: '/api/notebooks/{nb}/tools/history', tags: TOOL_TAGS, summary: 'Execution history: every run of every cell with duration and outcome (?cell= filters)' },
  { method: 'get', path: '/api/notebooks/{nb}/tools/lineage/{variable}', tags: TOOL_TAGS, summary: 'Lineage: the cell that defines a variable and every cell upstream and downstream of it' },
  { method: 'get', path: '/api/notebooks/{nb}/tools/dependencies', tags: TOOL_TAGS, summary: 'Cell dependencies: the reactive graph as nodes and edges' },
  { method: 'get', path: '/api/tools/environment', tags: TOOL_TAGS, summary: 'Environment: Node version, machine, memory and installed packages' },
  { method: 'post', path: '/api/tools/packages', tags: TOOL_TAGS, body: InstallBody, summary: 'Package installer: npm install into the notebooks folder (importable from cells); npm errors returned verbatim', responses: { '201': { description: 'installed' }, '422': { description: "npm failed; the detail is npm's output" } } },
  { method: 'post', path: '/api/tools/convert', tags: TOOL_TAGS, body: ConvertBody, summary: 'Notebook converter: .nb.ts ↔ .ipynb' },
  { method: 'post', path: '/api/tools/diff', tags: TOOL_TAGS, body: DiffBody, summary: 'Diff two notebooks cell by cell' },
  { method: 'get', path: '/api/tools/snippets', tags: TOOL_TAGS, query: SnippetQuery, summary: 'Snippets: search the snippet library' },
  { method: 'post', path: '/api/tools/snippets/{snippet_id}/insert', tags: TOOL_TAGS, body: SnippetInsertBody, summary: 'Insert a snippet as a new cell' },
  { method: 'get', path: '/api/tools/search', tags: TOOL_TAGS, query: SearchQuery, summary: 'Search across notebooks: cell names, sources and outputs' },
  { method: 'get', path: '/api/notebooks/{nb}/schedules', tags: SCHEDULE_TAGS, summary: "A notebook's schedules" },
  { method: 'post', path: '/api/notebooks/{nb}/schedules', tags: SCHEDULE_TAGS, body: ScheduleCreateBody, summary: 'Run a notebook on a cron schedule (croner syntax, in an IANA time zone)', responses: { '201': { description: 'created, with next_run_at' }, '404': { description: 'no such notebook' }, '422': { description: "invalid cron or timezone; the detail is the parser's reason" } } },
  { method: 'get', path: '/api/schedules', tags: SCHEDULE_TAGS, summary: 'Every schedule, with next_run_at' },
  { method: 'get', path: '/api/schedules/{schedule_id}', tags: SCHEDULE_TAGS, summary: 'Read a schedule' },
  { method: 'get', path: '/api/schedules/{schedule_id}/runs', tags: SCHEDULE_TAGS, summary: 'Run history (newest first): status, duration, error and outputs' },
  { method: 'post', path: '/api/schedules/{schedule_id}/pause', tags: SCHEDULE_TAGS, summary: 'Pause a schedule' },
  { method: 'post', path: '/api/schedules/{schedule_id}/resume', tags: SCHEDULE_TAGS, summary: 'Resume a paused schedule' },
  { method: 'delete', path: '/api/schedules/{schedule_id}', tags: SCHEDULE_TAGS, summary: 'Delete a schedule and its history', responses: { '204': { description: 'deleted' } } },
];

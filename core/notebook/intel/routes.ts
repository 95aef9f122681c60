/**
 * Data-intelligence routes (spec 3, Part A): smart preprocessing, algorithm match, patterns, the
 * 13 tools (the spec leaves their routes "not shown"; these are ours) and schedules. Routes parse,
 * call a service, shape the answer. Response schemas are given for the two responses the spec
 * defines; the others are described in words.
 */
import { type AnyRoute, defineRoute } from '../../http/route.js';
import { withNotebookErrors } from '../routes.js';
import {
  AlgorithmMatchQuery,
  AlgorithmMatchResponse,
  AnalysisQuery,
  BenchmarkBody,
  ConvertBody,
  DiffBody,
  HistoryQuery,
  InstallBody,
  PatternApplyBody,
  PatternCreateBody,
  PatternSearchBody,
  ProfileQuery,
  ScheduleCreateBody,
  ScheduleRunsQuery,
  SearchQuery,
  SmartPrepResponse,
  SnippetInsertBody,
  SnippetQuery,
  ValidateBody,
} from './schemas.js';
import type { NotebookIntel } from './service.js';

const TAGS = ['notebook data intelligence'];
const TOOL_TAGS = ['notebook tools'];
const SCHEDULE_TAGS = ['notebook schedules'];
const analysisErrors = {
  404: 'variable (or notebook) not found; the detail names it',
  422: 'not tabular (the detail says what is expected), or unknown target (the detail lists the columns)',
};

export function intelRoutes({ intelligence, patterns, tools, schedules }: NotebookIntel): AnyRoute[] {
  return withNotebookErrors([
    defineRoute({
      method: 'GET',
      url: '/api/smartprep/:var_name',
      summary: 'Smart preprocessing suggestions for a data frame in a running notebook',
      description:
        'Computed inside the notebook kernel: missing values, duplicates, constant and near-constant columns, mixed types, numbers or dates stored as text, outliers, skew, high cardinality, and (with a target) class imbalance and target leakage. Each suggestion carries a runnable arquero cell that fixes it.',
      tags: TAGS,
      schema: {
        querystring: AnalysisQuery,
        response: {
          200: { description: 'the smart preprocessing response', schema: SmartPrepResponse },
          409: 'the variable is defined in several running notebooks: pass ?notebook=',
          ...analysisErrors,
        },
      },
      handler: ({ params, query }) => intelligence.smartprep({ variable: params.var_name, ...query }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/algorithm-match/:var_name',
      summary: 'Algorithms for a data frame, scored by cross-validation on a sample of it',
      description:
        'task_type from the target (none → clustering). Candidates are scored with k-fold cross-validation on up to 2,000 sampled rows inside the kernel, within budget_ms (default 5,000 ms). Each recommendation has code that trains the model.',
      tags: TAGS,
      schema: {
        querystring: AlgorithmMatchQuery,
        response: { 200: { description: 'the algorithm match response', schema: AlgorithmMatchResponse }, ...analysisErrors },
      },
      handler: ({ params, query }) => intelligence.algorithmMatch({ variable: params.var_name, ...query }),
    }),

    // ---- patterns ------------------------------------------------------------------------------

    defineRoute({
      method: 'GET',
      url: '/api/patterns',
      summary: 'List saved analysis patterns (starter patterns included)',
      tags: TAGS,
      handler: async () => ({ patterns: await patterns.list() }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/patterns',
      summary: 'Save a pattern',
      tags: TAGS,
      schema: { body: PatternCreateBody, response: { 201: 'created', 409: 'a pattern with that name exists', 422: 'invalid body' } },
      handler: ({ body, reply }) => {
        reply.code(201);
        return patterns.create(body);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/patterns/search',
      summary: 'Search patterns by text, tags, problem_type and data_type, best match first',
      tags: TAGS,
      schema: { body: PatternSearchBody },
      handler: async ({ body }) => ({ results: await patterns.search(body) }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/patterns/:pattern_id',
      summary: 'Read a pattern',
      tags: TAGS,
      handler: ({ params }) => patterns.get(params.pattern_id),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/patterns/:pattern_id',
      summary: 'Delete a pattern',
      tags: TAGS,
      schema: { response: { 204: 'deleted', 404: 'no such pattern' } },
      handler: async ({ params, reply }) => {
        await patterns.delete(params.pattern_id);
        return reply.code(204).send();
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/patterns/:pattern_id/apply',
      summary: "Insert a pattern's cells into a notebook at a position ({{placeholders}} filled from params)",
      tags: TAGS,
      schema: { body: PatternApplyBody },
      handler: ({ params, body }) => patterns.apply(params.pattern_id, body),
    }),

    // ---- the 13 tools --------------------------------------------------------------------------

    defineRoute({
      method: 'GET',
      url: '/api/notebooks/:nb/tools/profile',
      summary: 'Profiler: time and heap change per cell over the runs of this session (?run=true runs all first)',
      tags: TOOL_TAGS,
      schema: { querystring: ProfileQuery },
      handler: ({ params, query }) => tools.profile(params.nb, { run: query.run === 'true' }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/:nb/tools/benchmark',
      summary: 'Benchmark: run one cell N times; min, median, max and mean in ms',
      tags: TOOL_TAGS,
      schema: { body: BenchmarkBody },
      handler: ({ params, body }) => tools.benchmark(params.nb, body),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/:nb/tools/validate',
      summary: 'Data validator: type, range, uniqueness, null, allowed-value and pattern rules on a data frame; violations listed',
      tags: TOOL_TAGS,
      schema: { body: ValidateBody },
      handler: ({ params, body }) => tools.validate(params.nb, body),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/notebooks/:nb/tools/analyze',
      summary: 'Code analyzer: undefined and unused names, cyclomatic complexity and lint findings per cell',
      tags: TOOL_TAGS,
      handler: ({ params }) => tools.analyzeCode(params.nb),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/notebooks/:nb/tools/history',
      summary: 'Execution history: every run of every cell with duration and outcome (?cell= filters)',
      tags: TOOL_TAGS,
      schema: { querystring: HistoryQuery },
      handler: ({ params, query }) => tools.history(params.nb, query.cell),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/notebooks/:nb/tools/lineage/:variable',
      summary: 'Lineage: the cell that defines a variable and every cell upstream and downstream of it',
      tags: TOOL_TAGS,
      handler: ({ params }) => tools.lineage(params.nb, params.variable),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/notebooks/:nb/tools/dependencies',
      summary: 'Cell dependencies: the reactive graph as nodes and edges',
      tags: TOOL_TAGS,
      handler: ({ params }) => tools.dependencies(params.nb),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/tools/environment',
      summary: 'Environment: Node version, machine, memory and installed packages',
      tags: TOOL_TAGS,
      handler: () => tools.environment(),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/tools/packages',
      summary: 'Package installer: npm install into the notebooks folder (importable from cells); npm errors returned verbatim',
      tags: TOOL_TAGS,
      schema: { body: InstallBody, response: { 201: 'installed', 422: "npm failed; the detail is npm's output" } },
      handler: ({ body, reply }) => {
        reply.code(201);
        return tools.install(body.package);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/tools/convert',
      summary: 'Notebook converter: .nb.ts ↔ .ipynb',
      tags: TOOL_TAGS,
      schema: { body: ConvertBody },
      handler: ({ body }) => tools.convert(body),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/tools/diff',
      summary: 'Diff two notebooks cell by cell',
      tags: TOOL_TAGS,
      schema: { body: DiffBody },
      handler: ({ body }) => tools.diff(body.a, body.b),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/tools/snippets',
      summary: 'Snippets: search the snippet library',
      tags: TOOL_TAGS,
      schema: { querystring: SnippetQuery },
      handler: ({ query }) => ({ snippets: tools.snippets(query) }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/tools/snippets/:snippet_id/insert',
      summary: 'Insert a snippet as a new cell',
      tags: TOOL_TAGS,
      schema: { body: SnippetInsertBody },
      handler: ({ params, body, reply }) => {
        reply.code(201);
        return tools.insertSnippet(params.snippet_id, body);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/tools/search',
      summary: 'Search across notebooks: cell names, sources and outputs',
      tags: TOOL_TAGS,
      schema: { querystring: SearchQuery },
      handler: ({ query }) => tools.search(query),
    }),

    // ---- schedules -----------------------------------------------------------------------------

    defineRoute({
      method: 'GET',
      url: '/api/notebooks/:nb/schedules',
      summary: "A notebook's schedules",
      tags: SCHEDULE_TAGS,
      handler: async ({ params }) => ({ schedules: await schedules.list(params.nb) }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/notebooks/:nb/schedules',
      summary: 'Run a notebook on a cron schedule (croner syntax, in an IANA time zone)',
      tags: SCHEDULE_TAGS,
      schema: {
        body: ScheduleCreateBody,
        response: {
          201: 'created, with next_run_at',
          404: 'no such notebook',
          422: "invalid cron or timezone; the detail is the parser's reason",
        },
      },
      handler: ({ params, body, reply }) => {
        reply.code(201);
        return schedules.create(params.nb, body);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/schedules',
      summary: 'Every schedule, with next_run_at',
      tags: SCHEDULE_TAGS,
      handler: async () => ({ schedules: await schedules.list() }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/schedules/:schedule_id',
      summary: 'Read a schedule',
      tags: SCHEDULE_TAGS,
      handler: ({ params }) => schedules.get(params.schedule_id),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/schedules/:schedule_id/runs',
      summary: 'Run history (newest first): status, duration, error and outputs',
      tags: SCHEDULE_TAGS,
      schema: { querystring: ScheduleRunsQuery },
      handler: async ({ params, query }) => ({ runs: await schedules.runs(params.schedule_id, query.limit) }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/schedules/:schedule_id/pause',
      summary: 'Pause a schedule',
      tags: SCHEDULE_TAGS,
      handler: ({ params }) => schedules.setPaused(params.schedule_id, true),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/schedules/:schedule_id/resume',
      summary: 'Resume a paused schedule',
      tags: SCHEDULE_TAGS,
      handler: ({ params }) => schedules.setPaused(params.schedule_id, false),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/schedules/:schedule_id',
      summary: 'Delete a schedule and its history',
      tags: SCHEDULE_TAGS,
      schema: { response: { 204: 'deleted' } },
      handler: async ({ params, reply }) => {
        await schedules.delete(params.schedule_id);
        return reply.code(204).send();
      },
    }),
  ]);
}

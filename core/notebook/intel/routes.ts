/**
 * Data-intelligence routes (spec 3, Part A). Routes parse, call a service, shape the answer.
 *
 * | method | path | what |
 * |---|---|---|
 * | GET | /api/smartprep/{var_name}?target=&notebook= | smart preprocessing response |
 * | GET | /api/algorithm-match/{var_name}?target=&notebook=&budget_ms= | algorithm match response |
 * | GET, POST | /api/patterns | list / create (spec's create body; 409 on a duplicate name) |
 * | GET, DELETE | /api/patterns/{id} | read / delete |
 * | POST | /api/patterns/{id}/apply | insert the cells into `notebook` at `position` |
 * | POST | /api/patterns/search | ranked search by query, tags, problem_type, data_type |
 * | GET | /api/notebooks/{nb}/tools/profile | 1. profiler (`?run=true` runs the notebook first) |
 * | POST | /api/notebooks/{nb}/tools/benchmark | 2. benchmark `{cell, runs}` |
 * | POST | /api/notebooks/{nb}/tools/validate | 3. data validator `{variable, rules}` |
 * | GET | /api/notebooks/{nb}/tools/analyze | 4. code analyzer |
 * | GET | /api/notebooks/{nb}/tools/history | 5. execution history (`?cell=`) |
 * | GET | /api/notebooks/{nb}/tools/lineage/{variable} | 6. lineage |
 * | GET | /api/tools/environment | 7. environment |
 * | POST | /api/tools/packages | 8. package installer `{package}` |
 * | POST | /api/tools/convert | 9. notebook converter `{notebook, save}` |
 * | POST | /api/tools/diff | 10. diff `{a, b}` |
 * | GET | /api/tools/snippets, POST /api/tools/snippets/{id}/insert | 11. snippets |
 * | GET | /api/notebooks/{nb}/tools/dependencies | 12. cell dependencies |
 * | GET | /api/tools/search?q=&in= | 13. search |
 * | GET, POST | /api/notebooks/{nb}/schedules | list / create `{cron, timezone, name}` |
 * | GET | /api/schedules, /api/schedules/{id}, /api/schedules/{id}/runs | list, read, run history |
 * | POST | /api/schedules/{id}/pause, /api/schedules/{id}/resume | pause / resume |
 * | DELETE | /api/schedules/{id} | delete (with its history) |
 */
import type { FastifyInstance } from 'fastify';
import { param, queryOf } from '../../http/request.js';
import { parseInput } from '../../http/validate.js';
import { notebookRoute } from '../routes.js';
import { z } from 'zod';
import type { DataIntelligence } from './prep-and-match.js';
import type { PatternService } from './patterns.js';
import type { ScheduleService } from './scheduler.js';
import {
  AlgorithmMatchQuery, AnalysisQuery, BenchmarkBody, ConvertBody, DiffBody, InstallBody, PatternApplyBody, PatternCreateBody,
  PatternSearchBody, ScheduleCreateBody, SearchQuery, SnippetInsertBody, SnippetQuery, ValidateBody,
} from './schemas.js';
import type { NotebookTools } from './tools.js';

export interface IntelServices {
  intelligence: DataIntelligence;
  patterns: PatternService;
  tools: NotebookTools;
  schedules: ScheduleService;
}

const Flag = z.object({ run: z.enum(['true', 'false']).optional() });
const HistoryQuery = z.object({ cell: z.string().optional() });
const RunsQuery = z.object({ limit: z.coerce.number().int().min(1).max(1000).default(50) });

export function intelRoutes(app: FastifyInstance, services: IntelServices): void {
  const { intelligence, patterns, tools, schedules } = services;

  app.get('/api/smartprep/:var', notebookRoute(async (req) => {
    const query = parseInput(AnalysisQuery, queryOf(req), 'query');
    return intelligence.smartprep({ variable: param(req, 'var'), ...query });
  }));

  app.get('/api/algorithm-match/:var', notebookRoute(async (req) => {
    const query = parseInput(AlgorithmMatchQuery, queryOf(req), 'query');
    return intelligence.algorithmMatch({ variable: param(req, 'var'), ...query });
  }));

  // ---- patterns ----------------------------------------------------------------------------

  app.get('/api/patterns', notebookRoute(async () => ({ patterns: await patterns.list() })));

  app.post('/api/patterns', notebookRoute(async (req, reply) => {
    reply.code(201);
    return patterns.create(parseInput(PatternCreateBody, req.body));
  }));

  // Before /api/patterns/:id so "search" is never taken for an id.
  app.post('/api/patterns/search', notebookRoute(async (req) => {
    return { results: await patterns.search(parseInput(PatternSearchBody, req.body)) };
  }));

  app.get('/api/patterns/:id', notebookRoute(async (req) => patterns.get(param(req, 'id'))));

  app.delete('/api/patterns/:id', notebookRoute(async (req, reply) => {
    await patterns.delete(param(req, 'id'));
    return reply.code(204).send();
  }));

  app.post('/api/patterns/:id/apply', notebookRoute(async (req) => {
    return patterns.apply(param(req, 'id'), parseInput(PatternApplyBody, req.body));
  }));

  // ---- the 13 tools ------------------------------------------------------------------------

  app.get('/api/notebooks/:nb/tools/profile', notebookRoute(async (req) => {
    const { run } = parseInput(Flag, queryOf(req), 'query');
    return tools.profile(param(req, 'nb'), { run: run === 'true' });
  }));

  app.post('/api/notebooks/:nb/tools/benchmark', notebookRoute(async (req) => {
    return tools.benchmark(param(req, 'nb'), parseInput(BenchmarkBody, req.body));
  }));

  app.post('/api/notebooks/:nb/tools/validate', notebookRoute(async (req) => {
    return tools.validate(param(req, 'nb'), parseInput(ValidateBody, req.body));
  }));

  app.get('/api/notebooks/:nb/tools/analyze', notebookRoute(async (req) => tools.analyzeCode(param(req, 'nb'))));

  app.get('/api/notebooks/:nb/tools/history', notebookRoute(async (req) => {
    const { cell } = parseInput(HistoryQuery, queryOf(req), 'query');
    return tools.history(param(req, 'nb'), cell);
  }));

  app.get('/api/notebooks/:nb/tools/lineage/:variable', notebookRoute(async (req) => {
    return tools.lineage(param(req, 'nb'), param(req, 'variable'));
  }));

  app.get('/api/notebooks/:nb/tools/dependencies', notebookRoute(async (req) => tools.dependencies(param(req, 'nb'))));

  app.get('/api/tools/environment', notebookRoute(async () => tools.environment()));

  app.post('/api/tools/packages', notebookRoute(async (req, reply) => {
    reply.code(201);
    return tools.install(parseInput(InstallBody, req.body).package);
  }));

  app.post('/api/tools/convert', notebookRoute(async (req) => tools.convert(parseInput(ConvertBody, req.body))));

  app.post('/api/tools/diff', notebookRoute(async (req) => {
    const { a, b } = parseInput(DiffBody, req.body);
    return tools.diff(a, b);
  }));

  app.get('/api/tools/snippets', notebookRoute(async (req) => ({ snippets: tools.snippets(parseInput(SnippetQuery, queryOf(req), 'query')) })));

  app.post('/api/tools/snippets/:id/insert', notebookRoute(async (req, reply) => {
    reply.code(201);
    return tools.insertSnippet(param(req, 'id'), parseInput(SnippetInsertBody, req.body));
  }));

  app.get('/api/tools/search', notebookRoute(async (req) => tools.search(parseInput(SearchQuery, queryOf(req), 'query'))));

  // ---- schedules ---------------------------------------------------------------------------

  app.get('/api/notebooks/:nb/schedules', notebookRoute(async (req) => ({ schedules: await schedules.list(param(req, 'nb')) })));

  app.post('/api/notebooks/:nb/schedules', notebookRoute(async (req, reply) => {
    reply.code(201);
    return schedules.create(param(req, 'nb'), parseInput(ScheduleCreateBody, req.body));
  }));

  app.get('/api/schedules', notebookRoute(async () => ({ schedules: await schedules.list() })));

  app.get('/api/schedules/:id', notebookRoute(async (req) => schedules.get(param(req, 'id'))));

  app.get('/api/schedules/:id/runs', notebookRoute(async (req) => {
    const { limit } = parseInput(RunsQuery, queryOf(req), 'query');
    return { runs: await schedules.runs(param(req, 'id'), limit) };
  }));

  app.post('/api/schedules/:id/pause', notebookRoute(async (req) => schedules.setPaused(param(req, 'id'), true)));

  app.post('/api/schedules/:id/resume', notebookRoute(async (req) => schedules.setPaused(param(req, 'id'), false)));

  app.delete('/api/schedules/:id', notebookRoute(async (req, reply) => {
    await schedules.delete(param(req, 'id'));
    return reply.code(204).send();
  }));
}

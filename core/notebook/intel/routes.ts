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
import { Router, type NextFunction, type Request, type Response } from 'express';
import { parseInput } from '../../http/validate.js';
import { toServiceError } from '../service.js';
import { z } from 'zod';
import type { DataIntelligence } from './analysis.js';
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

type Handler = (req: Request, res: Response) => Promise<unknown>;

const route = (handler: Handler) =>
  async function intelRoute(req: Request, res: Response, next: NextFunction) {
    try {
      await handler(req, res);
    } catch (err) {
      next(toServiceError(err));
    }
  };

const param = (req: Request, name: string) => String(req.params[name]);

export function intelRoutes(services: IntelServices): Router {
  const router = Router();
  const { intelligence, patterns, tools, schedules } = services;

  router.get('/api/smartprep/:var', route(async (req, res) => {
    const query = parseInput(AnalysisQuery, req.query, 'query');
    res.json(await intelligence.smartprep({ variable: param(req, 'var'), ...query }));
  }));

  router.get('/api/algorithm-match/:var', route(async (req, res) => {
    const query = parseInput(AlgorithmMatchQuery, req.query, 'query');
    res.json(await intelligence.algorithmMatch({ variable: param(req, 'var'), ...query }));
  }));

  // ---- patterns ----------------------------------------------------------------------------

  router.get('/api/patterns', route(async (_req, res) => res.json({ patterns: await patterns.list() })));

  router.post('/api/patterns', route(async (req, res) => {
    res.status(201).json(await patterns.create(parseInput(PatternCreateBody, req.body)));
  }));

  // Before /api/patterns/:id so "search" is never taken for an id.
  router.post('/api/patterns/search', route(async (req, res) => {
    res.json({ results: await patterns.search(parseInput(PatternSearchBody, req.body)) });
  }));

  router.get('/api/patterns/:id', route(async (req, res) => res.json(await patterns.get(param(req, 'id')))));

  router.delete('/api/patterns/:id', route(async (req, res) => {
    await patterns.delete(param(req, 'id'));
    res.status(204).end();
  }));

  router.post('/api/patterns/:id/apply', route(async (req, res) => {
    res.json(await patterns.apply(param(req, 'id'), parseInput(PatternApplyBody, req.body)));
  }));

  // ---- the 13 tools ------------------------------------------------------------------------

  router.get('/api/notebooks/:nb/tools/profile', route(async (req, res) => {
    const { run } = parseInput(Flag, req.query, 'query');
    res.json(await tools.profile(param(req, 'nb'), { run: run === 'true' }));
  }));

  router.post('/api/notebooks/:nb/tools/benchmark', route(async (req, res) => {
    res.json(await tools.benchmark(param(req, 'nb'), parseInput(BenchmarkBody, req.body)));
  }));

  router.post('/api/notebooks/:nb/tools/validate', route(async (req, res) => {
    res.json(await tools.validate(param(req, 'nb'), parseInput(ValidateBody, req.body)));
  }));

  router.get('/api/notebooks/:nb/tools/analyze', route(async (req, res) => res.json(await tools.analyzeCode(param(req, 'nb')))));

  router.get('/api/notebooks/:nb/tools/history', route(async (req, res) => {
    const { cell } = parseInput(HistoryQuery, req.query, 'query');
    res.json(await tools.history(param(req, 'nb'), cell));
  }));

  router.get('/api/notebooks/:nb/tools/lineage/:variable', route(async (req, res) => {
    res.json(await tools.lineage(param(req, 'nb'), param(req, 'variable')));
  }));

  router.get('/api/notebooks/:nb/tools/dependencies', route(async (req, res) => res.json(await tools.dependencies(param(req, 'nb')))));

  router.get('/api/tools/environment', route(async (_req, res) => res.json(await tools.environment())));

  router.post('/api/tools/packages', route(async (req, res) => {
    res.status(201).json(await tools.install(parseInput(InstallBody, req.body).package));
  }));

  router.post('/api/tools/convert', route(async (req, res) => res.json(await tools.convert(parseInput(ConvertBody, req.body)))));

  router.post('/api/tools/diff', route(async (req, res) => {
    const { a, b } = parseInput(DiffBody, req.body);
    res.json(await tools.diff(a, b));
  }));

  router.get('/api/tools/snippets', route(async (req, res) => res.json({ snippets: tools.snippets(parseInput(SnippetQuery, req.query, 'query')) })));

  router.post('/api/tools/snippets/:id/insert', route(async (req, res) => {
    res.status(201).json(await tools.insertSnippet(param(req, 'id'), parseInput(SnippetInsertBody, req.body)));
  }));

  router.get('/api/tools/search', route(async (req, res) => res.json(await tools.search(parseInput(SearchQuery, req.query, 'query')))));

  // ---- schedules ---------------------------------------------------------------------------

  router.get('/api/notebooks/:nb/schedules', route(async (req, res) => res.json({ schedules: await schedules.list(param(req, 'nb')) })));

  router.post('/api/notebooks/:nb/schedules', route(async (req, res) => {
    res.status(201).json(await schedules.create(param(req, 'nb'), parseInput(ScheduleCreateBody, req.body)));
  }));

  router.get('/api/schedules', route(async (_req, res) => res.json({ schedules: await schedules.list() })));

  router.get('/api/schedules/:id', route(async (req, res) => res.json(await schedules.get(param(req, 'id')))));

  router.get('/api/schedules/:id/runs', route(async (req, res) => {
    const { limit } = parseInput(RunsQuery, req.query, 'query');
    res.json({ runs: await schedules.runs(param(req, 'id'), limit) });
  }));

  router.post('/api/schedules/:id/pause', route(async (req, res) => res.json(await schedules.setPaused(param(req, 'id'), true))));

  router.post('/api/schedules/:id/resume', route(async (req, res) => res.json(await schedules.setPaused(param(req, 'id'), false))));

  router.delete('/api/schedules/:id', route(async (req, res) => {
    await schedules.delete(param(req, 'id'));
    res.status(204).end();
  }));

  return router;
}

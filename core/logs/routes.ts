/**
 * Routes of the invocation log. Logic is in `service.ts`.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { RouteDoc } from '../http/openapi.js';
import { param } from '../http/request.js';
import { parseInput } from '../http/validate.js';
import { AnalyzeRequest, Analysis, InvocationRecord, ListLogsQuery, LogPage } from './schemas.js';
import type { InvocationLog } from './service.js';

export function logRoutes(app: FastifyInstance, log: InvocationLog): void {
  app.get('/api/v1/logs', (req) => {
    return log.list(parseInput(ListLogsQuery, req.query, 'query'));
  });

  // Fixed paths before /:id, so "analysis" is never read as an id.
  app.get('/api/v1/logs/analysis', async () => {
    return log.latestAnalysis();
  });

  app.post('/api/v1/logs/analyze', async (req) => {
    return log.analyze(parseInput(AnalyzeRequest, req.body, 'body'));
  });

  app.get('/api/v1/logs/:id', (req) => {
    return log.get(param(req, 'id'));
  });
}

const tags = ['logs'];
const Off = { description: 'Log history is off (setting logs.enabled)' };

export const LOG_DOCS: RouteDoc[] = [
  {
    method: 'get',
    path: '/api/v1/logs',
    summary: 'Invocation logs, newest first: filter by resource, name, operation, principal, status (ok, error or an HTTP code) and time range; page with limit/offset',
    tags,
    query: ListLogsQuery,
    responses: { 200: { description: 'A page of records', schema: LogPage }, 422: { description: 'Bad query parameter (named)' }, 501: Off },
  },
  { method: 'get', path: '/api/v1/logs/{id}', summary: 'One invocation record', tags, responses: { 200: { description: 'The record', schema: InvocationRecord }, 404: { description: 'Unknown id' }, 501: Off } },
  {
    method: 'post',
    path: '/api/v1/logs/analyze',
    summary: 'Analyse a window of calls: counts, error rate, latency p50/p95/p99, slowest calls and top errors per resource; kept as the latest analysis',
    tags,
    body: AnalyzeRequest,
    responses: { 200: { description: 'The analysis', schema: Analysis }, 501: Off },
  },
  { method: 'get', path: '/api/v1/logs/analysis', summary: 'The latest analysis', tags, responses: { 200: { description: 'The analysis', schema: Analysis }, 404: { description: 'No analysis has been computed yet' }, 501: Off } },
];


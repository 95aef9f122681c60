/**
 * Routes of the invocation log. Logic is in `service.ts`.
 */
import { defineRoute } from '../http/route.js';
import { Analysis, AnalyzeRequest, InvocationRecord, ListLogsQuery, LogIdParams, LogPage } from './schemas.js';
import type { InvocationLog } from './service.js';

const tags = ['logs'];
const off = 'Log history is off (setting logs.enabled)';

export function logRoutes(log: InvocationLog) {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v1/logs',
      summary:
        'Invocation logs, newest first: filter by resource, name, operation, principal, status (ok, error or an HTTP code) and time range; page with limit/offset',
      tags,
      schema: {
        querystring: ListLogsQuery,
        response: { 200: { description: 'A page of records', schema: LogPage }, 422: 'Bad query parameter (named)', 501: off },
      },
      handler: ({ query }) => log.list(query),
    }),
    // A static segment, so the router never reads "analysis" as an id.
    defineRoute({
      method: 'GET',
      url: '/api/v1/logs/analysis',
      summary: 'The latest analysis',
      tags,
      schema: { response: { 200: { description: 'The analysis', schema: Analysis }, 404: 'No analysis has been computed yet', 501: off } },
      handler: () => log.latestAnalysis(),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/logs/analyze',
      summary:
        'Analyse a window of calls: counts, error rate, latency p50/p95/p99, slowest calls and top errors per resource; kept as the latest analysis',
      tags,
      schema: { body: AnalyzeRequest, response: { 200: { description: 'The analysis', schema: Analysis }, 501: off } },
      handler: ({ body }) => log.analyze(body),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/logs/:id',
      summary: 'One invocation record',
      tags,
      schema: {
        params: LogIdParams,
        response: { 200: { description: 'The record', schema: InvocationRecord }, 404: 'Unknown id', 501: off },
      },
      handler: ({ params }) => log.get(params.id),
    }),
  ];
}

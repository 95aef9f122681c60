/**
 * OpenAPI descriptions of the notebook session routes (routes.ts), so `/openapi.json` lists the
 * core notebook API beside the data-intelligence routes (intel/docs.ts). Bodies are the same zod
 * schemas the routes validate with; answers are described in words.
 */
import { z } from 'zod';
import type { RouteDoc } from '../http/openapi.js';
import { CreateCellBody, CreateNotebookBody, ReorderBody, RunDocumentBody, SettingsBody, UpdateCellBody } from './schemas.js';

const tags = ['notebooks'];
const NB = '/api/notebooks/{nb}';
const missing = { 404: { description: 'no such notebook (or cell)' } };
const invalid = { 422: { description: 'invalid body, naming the field' } };
/** `?wait=false` answers 202 with the cell states at once; the outputs follow over ws. */
const RunQuery = z.object({ wait: z.enum(['true', 'false']).optional().describe('false: answer 202 at once; outputs follow on ws /api/notebooks/ws') });
const runAnswers = { 200: { description: 'the notebook with its cells, states and outputs after the run' }, 202: { description: 'started (wait=false): cell states' }, ...missing };

export const NOTEBOOK_DOCS: RouteDoc[] = [
  { method: 'get', path: '/api/notebooks', summary: 'List the notebooks in notebooks/', tags },
  { method: 'post', path: '/api/notebooks', summary: 'Create a notebook {name, format}', tags, body: CreateNotebookBody, responses: { 201: { description: 'the opened notebook' }, 409: { description: 'it exists' }, ...invalid } },
  { method: 'post', path: '/api/notebooks/run', summary: 'Run a posted notebook document headlessly (remote `hangar notebook run`)', tags, body: RunDocumentBody, responses: { 200: { description: 'cells with outputs' }, ...invalid } },
  { method: 'get', path: NB, summary: 'Open a notebook (`nb`: its path inside notebooks/, URL-encoded): cells with states', tags, responses: { 200: { description: 'the notebook' }, ...missing } },
  { method: 'delete', path: `${NB}/session`, summary: 'Close the session (stops its kernel)', tags, responses: { 204: { description: 'closed' } } },
  { method: 'post', path: `${NB}/save`, summary: 'Write the notebook file', tags, responses: { 200: { description: '{saved}' }, ...missing } },
  { method: 'get', path: `${NB}/cells`, summary: 'Cells with their states', tags, responses: { 200: { description: '{cells}' }, ...missing } },
  { method: 'post', path: `${NB}/cells`, summary: 'Add a cell', tags, body: CreateCellBody, responses: { 201: { description: 'the cell with its state' }, ...missing, ...invalid } },
  { method: 'get', path: `${NB}/cells/{cell}`, summary: 'One cell with its state and outputs', tags, responses: { 200: { description: 'the cell' }, ...missing } },
  { method: 'patch', path: `${NB}/cells/{cell}`, summary: 'Edit a cell (source, type, name)', tags, body: UpdateCellBody, responses: { 200: { description: 'the cell' }, ...missing, ...invalid } },
  { method: 'delete', path: `${NB}/cells/{cell}`, summary: 'Delete a cell', tags, responses: { 204: { description: 'deleted' }, ...missing } },
  {
    method: 'get',
    path: `${NB}/cells/{cell}/outputs.html`,
    summary: "The cell's outputs rendered as in the HTML export, served sandboxed (CSP)",
    tags,
    responses: { 200: { description: 'HTML', contentType: 'text/html' }, ...missing },
  },
  { method: 'put', path: `${NB}/order`, summary: 'Reorder the cells {order: [ids]}', tags, body: ReorderBody, responses: { 200: { description: '{order}' }, ...missing, ...invalid } },
  { method: 'post', path: `${NB}/cells/{cell}/run`, summary: 'Run a cell and its dependents', tags, query: RunQuery, responses: runAnswers },
  { method: 'post', path: `${NB}/run`, summary: 'Run every cell', tags, query: RunQuery, responses: runAnswers },
  { method: 'post', path: `${NB}/run-stale`, summary: 'Run the stale cells', tags, query: RunQuery, responses: runAnswers },
  { method: 'post', path: `${NB}/interrupt`, summary: 'Interrupt the running cell', tags, responses: { 200: { description: 'kernel generation and cell states' }, ...missing } },
  { method: 'post', path: `${NB}/restart`, summary: 'Restart the kernel', tags, responses: { 200: { description: 'kernel generation and cell states' }, ...missing } },
  { method: 'get', path: `${NB}/dependencies`, summary: 'Reads and writes per cell, edges, execution order, stale set, cycles', tags, responses: { 200: { description: 'the dependency graph' }, ...missing } },
  { method: 'put', path: `${NB}/settings`, summary: 'Notebook settings {cell_timeout_ms}', tags, body: SettingsBody, responses: { 200: { description: '{cell_timeout_ms}' }, ...missing, ...invalid } },
];

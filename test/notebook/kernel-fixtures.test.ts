/**
 * Notebooks in the shapes other TypeScript kernels save run here unchanged (#23): a tslab notebook
 * (`tslab.display`, top-level await, types, the same import in two cells) and a LangGraph.js-style
 * agent built step by step across cells, whose model is a scripted OpenAI-compatible server on
 * loopback. Each runs headless (`hangar notebook run`), then through the API, every cell
 * succeeding with the outputs it should make, and is saved back as .ipynb with the fresh outputs
 * and its own kernelspec.
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile } from 'node:fs/promises';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliIo, notebookCli } from '../../core/app/cli/notebook.js';
import { mountRoutes } from '../../core/http/route.js';
import { validateIpynb } from '../../core/notebook/formats.js';
import { notebookRoutes } from '../../core/notebook/routes.js';
import { Output } from '../../core/notebook/schemas.js';
import { createNotebookApp } from '../../core/notebook/server.js';
import { NotebookService } from '../../core/notebook/service.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';

const fixtures = resolve(import.meta.dirname, '..', 'fixtures', 'notebooks');
let root = '';
let base = '';
let server: http.Server;
let service: NotebookService;
let model: FakeOpenAI;
const savedEnv = { url: process.env.OPENAI_BASE_URL, key: process.env.OPENAI_API_KEY };

beforeAll(async () => {
  // The agent asks for the weather tool, then answers from the tool's result, as a real model would.
  model = await startFakeOpenAI((request) => {
    const tool = request.body.messages.findLast((m) => m.role === 'tool');
    if (!tool) return { tool_calls: [{ id: 'call_1', name: 'get_weather', arguments: { city: 'Oslo' } }] };
    return { content: `It is ${tool.content} in Oslo.` };
  });
  // Read by the notebook as a LangGraph tutorial reads its provider's settings (kernels copy the env when they start).
  process.env.OPENAI_BASE_URL = model.baseUrl;
  process.env.OPENAI_API_KEY = 'sk-fixture';
  root = await mkdtemp(join(tmpdir(), 'nb-kernels-'));
  await mkdir(join(root, 'notebooks'));
  for (const name of ['tslab-display.ipynb', 'langgraph-agent.ipynb']) await copyFile(join(fixtures, name), join(root, 'notebooks', name));
  const built = createNotebookApp({ root });
  service = new NotebookService({ root });
  mountRoutes(built.app, notebookRoutes(service));
  await built.app.ready();
  server = built.server;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await service?.closeAll();
  await new Promise((r) => server?.close(r));
  await model?.close();
  for (const [name, value] of [
    ['OPENAI_BASE_URL', savedEnv.url],
    ['OPENAI_API_KEY', savedEnv.key],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

async function cliRun(file: string) {
  const io = { stdout: '', stderr: '' };
  const sink: CliIo = { out: (t) => (io.stdout += t), err: (t) => (io.stderr += t), color: false };
  return { code: await notebookCli(['run', file], sink), ...io };
}

interface RunCell {
  id: string;
  cell_type: string;
  state: string;
  execution_count: number;
  outputs: Output[];
  stale_outputs: boolean;
}

/** Runs every cell through the API and saves; answers the cells and the file written. */
async function runAndSave(name: string) {
  const nb = `${base}/api/notebooks/${name}`;
  const ran = await fetch(`${nb}/run`, { method: 'POST' });
  expect(ran.status).toBe(200);
  const cells = ((await ran.json()) as { cells: RunCell[] }).cells;
  expect((await fetch(`${nb}/save`, { method: 'POST' })).status).toBe(200);
  const saved = JSON.parse(await readFile(join(root, 'notebooks', name), 'utf8'));
  return { cells, saved };
}

const byId = (cells: RunCell[]) => new Map(cells.map((c) => [c.id, c]));
const data = (cell: RunCell | undefined, mime: string) =>
  (cell?.outputs ?? []).flatMap((o) => ('data' in o && o.data[mime] !== undefined ? [String(o.data[mime])] : []));
const stdout = (cell: RunCell | undefined) => (cell?.outputs ?? []).flatMap((o) => (o.output_type === 'stream' ? [o.text] : [])).join('');

/** Every code cell ran here, and the file saved keeps its kernelspec and the fresh outputs. */
async function expectRoundTrip(name: string, cells: RunCell[], saved: Record<string, unknown> & { cells: unknown[] }) {
  const original = JSON.parse(await readFile(join(fixtures, name), 'utf8'));
  for (const cell of cells.filter((c) => c.cell_type === 'code')) {
    expect({ id: cell.id, state: cell.state, stale: cell.stale_outputs }).toEqual({ id: cell.id, state: 'success', stale: false });
    expect(cell.execution_count).toBeGreaterThan(0);
  }
  expect(validateIpynb(saved)).toEqual([]);
  expect(saved.metadata).toMatchObject({ kernelspec: original.metadata.kernelspec, language_info: original.metadata.language_info });
  const written = saved.cells as Array<{ id: string; source: string[]; outputs?: unknown[]; execution_count?: number }>;
  expect(written.map((c) => [c.id, c.source.join('')])).toEqual(
    original.cells.map((c: { id: string; source: string[] }) => [c.id, c.source.join('')]),
  );
  for (const cell of cells.filter((c) => c.cell_type === 'code')) {
    const file = written.find((c) => c.id === cell.id)!;
    expect(file.execution_count).toBe(cell.execution_count);
    // nbformat splits text into lines; read back, the outputs are the ones the run made.
    expect(Output.array().parse(file.outputs)).toEqual(cell.outputs);
  }
}

describe('a tslab notebook', () => {
  const checksum = createHash('sha256').update('Oslo,Lima,Cairo').digest('hex').slice(0, 12);

  it('runs headless with `hangar notebook run`, every cell ok', async () => {
    const run = await cliRun(join(root, 'notebooks', 'tslab-display.ipynb'));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`checksum ${checksum}`);
    expect(run.stdout).not.toContain('stale');
  });

  it('shows tslab.display output, awaits at the top level, and saves back as a tslab .ipynb', async () => {
    const { cells, saved } = await runAndSave('tslab-display.ipynb');
    const cell = byId(cells);
    expect(data(cell.get('t2data'), 'text/plain')).toEqual(['3']);
    expect(data(cell.get('t3warmest'), 'text/html')).toEqual(['<p>Warmest: <b>Cairo</b></p>']);
    expect(data(cell.get('t3warmest'), 'text/markdown')).toEqual(['**27 °C** in Cairo']);
    expect(data(cell.get('t4images'), 'image/png')[0]).toMatch(/^iVBORw0KGgo/);
    expect(data(cell.get('t4images'), 'image/svg+xml')[0]).toContain('<rect x="24" y="3" width="10" height="27" />');
    expect(stdout(cell.get('t5checksum'))).toBe(`checksum ${checksum}\n`);
    await expectRoundTrip('tslab-display.ipynb', cells, saved);
  });
});

describe('a LangGraph.js-style agent notebook', () => {
  it('runs headless with `hangar notebook run`: the graph calls the model, the tool, then the model again', async () => {
    const before = model.requests.length;
    const run = await cliRun(join(root, 'notebooks', 'langgraph-agent.ipynb'));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('user -> assistant -> tool -> assistant');
    const asked = model.requests.slice(before);
    expect(asked).toHaveLength(2);
    expect(asked[0]!.authorization).toBe('Bearer sk-fixture');
    expect(asked[0]!.body.tools).toMatchObject([{ function: { name: 'get_weather' } }]);
    expect(asked[1]!.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_1', content: '3 °C and sleet' });
  });

  it('answers from the tool result, draws the graph, and saves back with its kernelspec and outputs', async () => {
    const { cells, saved } = await runAndSave('langgraph-agent.ipynb');
    const cell = byId(cells);
    expect(stdout(cell.get('g7invoke'))).toBe('user -> assistant -> tool -> assistant\n');
    // A string result shows as its text (tslab saved it quoted, as Node's inspect does).
    expect(data(cell.get('g7invoke'), 'text/plain')).toEqual(['It is 3 °C and sleet in Oslo.']);
    expect(data(cell.get('g6draw'), 'text/markdown')[0]).toContain('__start__ --> agent');
    await expectRoundTrip('langgraph-agent.ipynb', cells, saved);
  });
});

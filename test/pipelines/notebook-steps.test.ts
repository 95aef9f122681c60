import { copyFile, mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { notebookCli } from '../../core/app/cli/notebook.js';
import { makeWorkspace, startTestServer, type TestServer } from '../support/server.js';

const repo = path.resolve(import.meta.dirname, '..', '..');

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const notebook = (cells: Array<[id: string, name: string, source: string, type?: string]>) =>
  `// @hangar-notebook {"name":"t","created_at":"2026-01-01T00:00:00.000Z","metadata":{}}\n\n` +
  cells.map(([id, name, source, type = 'code']) => `// %% [${type}] id=${id} name="${name}"\n${source}\n`).join('\n');

/** A workspace holding the shipped sales notebook and its data, as `hangar init` would lay it out. */
async function salesWorkspace(): Promise<string> {
  const root = await makeWorkspace();
  await mkdir(path.join(root, 'notebooks', 'data'), { recursive: true });
  await copyFile(path.join(repo, 'notebooks', 'sales.nb.ts'), path.join(root, 'notebooks', 'sales.nb.ts'));
  await copyFile(path.join(repo, 'notebooks', 'data', 'sales.csv'), path.join(root, 'notebooks', 'data', 'sales.csv'));
  return root;
}

/** `hangar notebook export <file> --format pipeline -o <out>`, returning the definition it wrote. */
async function exportPipeline(file: string): Promise<Record<string, any>> {
  const out = path.join(await mkdtemp(path.join(tmpdir(), 'nb-export-')), 'sales.pipeline.json');
  let stderr = '';
  const code = await notebookCli(['export', file, '--format', 'pipeline', '-o', out], { out: () => {}, err: (t) => (stderr += t) });
  expect(stderr).toBe('');
  expect(code).toBe(0);
  return JSON.parse(await readFile(out, 'utf8'));
}

describe('notebook export → pipeline', () => {
  it('exports notebooks/sales.nb.ts, which the API validates, saves and runs end to end', async () => {
    const root = await salesWorkspace();
    const definition = await exportPipeline(path.join(root, 'notebooks', 'sales.nb.ts'));
    server = await startTestServer({ root });

    const report = (await server.request('/api/v1/pipelines/validate', { method: 'POST', json: definition })).body;
    expect(report).toEqual({
      valid: true,
      errors: [],
      // Each cell waits only for the cells it reads from: `load` and `threshold` start together.
      waves: [['load', 'threshold'], ['revenue_by_region', 'monthly_revenue'], ['chart', 'big_months'], ['big_months_table']],
    });
    expect((await server.request('/api/v1/pipelines', { method: 'POST', json: definition })).status).toBe(201);

    const res = await server.request('/api/v1/pipelines/sales/run', { method: 'POST', json: {} });
    expect(res.status).toBe(200);
    const run = res.body;
    expect(run.status).toBe('completed');
    const steps = Object.fromEntries(run.steps.map((s: { name: string }) => [s.name, s]));
    expect(Object.keys(steps)).toEqual([
      'load',
      'revenue_by_region',
      'monthly_revenue',
      'chart',
      'threshold',
      'big_months',
      'big_months_table',
    ]);
    for (const step of run.steps) expect(step).toMatchObject({ kind: 'notebook', target: 'sales.nb.ts', status: 'completed' });

    // Printed output, a table value as rows, a markdown value as text, a chart as its spec.
    expect(steps.load.output).toMatchObject({ notebook: 'sales.nb.ts', cell: 'load0001', name: 'load', value: null });
    expect(steps.load.output.outputs).toEqual([
      { output_type: 'stream', name: 'stdout', text: expect.stringMatching(/^144 rows, columns: /) },
    ]);
    const regions = steps.revenue_by_region.output.value as Array<{ region: string; revenue: number; units: number }>;
    expect(regions).toHaveLength(4);
    expect(regions.map((r) => r.revenue)).toEqual([...regions.map((r) => r.revenue)].sort((a, b) => b - a));
    expect(steps.big_months.output.value).toMatch(/^\*\*\d+\*\* region-months above \$2,500$/);
    expect(steps.chart.output.value).toMatchObject({ mark: 'line', title: 'Revenue by month and region' });
    const big = steps.big_months_table.output.value as Array<{ revenue: number }>;
    expect(big.length).toBeGreaterThan(0);
    expect(big.every((row) => row.revenue > 2500)).toBe(true);
    expect(steps.big_months.output.value).toContain(`**${big.length}**`);
    expect(steps.big_months.depends_on).toEqual(['load', 'monthly_revenue', 'threshold']);

    // Without an `output`, the run returns the value of every final step by name.
    expect(Object.keys(run.output).sort()).toEqual(['big_months_table', 'chart', 'revenue_by_region']);
    expect((await server.request(`/api/v1/pipelines/sales/runs/${run.id}`)).body).toEqual(run);
  });
});

describe('notebook steps', () => {
  const SCALE = notebook([
    ['intro001', 'intro', '// # Scaling', 'markdown'],
    [
      'factor01',
      'factor',
      "if (typeof pipelineInput.factor !== 'number') throw new TypeError('pipelineInput.factor must be a number');\nconst factor: number = pipelineInput.factor;",
    ],
    ['values01', 'values', 'const values = [1, 2, 3].map((n) => n * factor);\nvalues'],
    ['total001', 'total', 'const total = values.reduce((a, b) => a + b, 0);\n({ total })'],
    // A global the kernel keeps for its lifetime: 1 on every run means every run had its own kernel.
    ['counter1', 'counter', 'const runs: number = ((globalThis as any).__runs = ((globalThis as any).__runs ?? 0) + 1);\nruns'],
    ['boom0001', 'boom', 'const boom: number = values.length > 2 ? (() => { throw new Error("too many values"); })() : 0;'],
    ['crash001', 'crash', 'process.exit(3);'],
  ]);
  const AGENT = `import { defineAgent } from 'hangar';
export default defineAgent({ run: async (input) => ({ response: input.query + ' = ' + input.context.total }) });
`;

  async function start() {
    server = await startTestServer({ files: { 'notebooks/scale.nb.ts': SCALE, 'agents/teller.ts': AGENT } });
    return server;
  }

  it('hand the step input to cells as pipelineInput, run the cells a step needs first, and feed other steps', async () => {
    await start();
    const draft = {
      name: 'scale',
      steps: [
        // `total` reads `values`, which reads `factor`: both run first, in this step.
        { name: 'total', notebook: 'scale.nb.ts', cell: 'total', input: { factor: '$.input.factor' } },
        { name: 'counter', notebook: 'scale.nb.ts', cell: 'counter1', input: '$.input' },
        { name: 'tell', agent: 'teller', input: { query: 'total', context: { total: '$.steps.total.output.value.total' } } },
      ],
      output: { total: '$.steps.total.output.value.total', runs: '$.steps.counter.output.value', line: '$.steps.tell.output.response' },
    };
    expect((await server!.request('/api/v1/pipelines', { method: 'POST', json: draft })).status).toBe(201);
    for (const factor of [2, 10]) {
      const run = await server!.request('/api/v1/pipelines/scale/run', { method: 'POST', json: { factor } });
      expect(run.status).toBe(200);
      expect(run.body.output).toEqual({ total: 6 * factor, runs: 1, line: `total = ${6 * factor}` });
      expect(run.body.steps[0]).toMatchObject({
        name: 'total',
        kind: 'notebook',
        cell: 'total',
        input: { factor },
        output: { cell: 'total001', name: 'total' },
      });
    }
  });

  it('shut the kernel of a run down when the run ends', async () => {
    await start();
    await server!.write(
      'notebooks/ticker.nb.ts',
      notebook([
        [
          'ticker01',
          'ticker',
          "import { appendFileSync } from 'node:fs';\nconst ticker = setInterval(() => appendFileSync(notebookPath('ticks.txt'), '.'), 5);\nawait new Promise((r) => setTimeout(r, 40));",
        ],
      ]),
    );
    const draft = { name: 'ticker', steps: [{ name: 'tick', notebook: 'ticker.nb.ts', cell: 'ticker', input: {} }] };
    expect((await server!.request('/api/v1/pipelines', { method: 'POST', json: draft })).status).toBe(201);
    expect((await server!.request('/api/v1/pipelines/ticker/run', { method: 'POST', json: {} })).status).toBe(200);
    const ticks = () => readFile(path.join(server!.root, 'notebooks', 'ticks.txt'), 'utf8').then((t) => t.length);
    const atEnd = await ticks();
    expect(atEnd).toBeGreaterThan(0);
    // A kernel still alive would keep its interval ticking.
    await new Promise((r) => setTimeout(r, 200));
    expect(await ticks()).toBe(atEnd);
  });

  it('fail the run at a failing cell, naming the step and the cell', async () => {
    await start();
    const draft = { name: 'boom', steps: [{ name: 'explode', notebook: 'scale.nb.ts', cell: 'boom', input: { factor: 1 } }] };
    expect((await server!.request('/api/v1/pipelines', { method: 'POST', json: draft })).status).toBe(201);
    const run = await server!.request('/api/v1/pipelines/boom/run', { method: 'POST', json: {} });
    expect(run.status).toBe(502);
    expect(run.body.detail).toBe("pipeline 'boom' failed at step 'explode': cell 'boom' (boom0001) failed: Error: too many values");
    expect(run.body.run.steps[0]).toMatchObject({ status: 'failed', cell: 'boom' });
  });

  it('stop a running cell when another step fails the run', async () => {
    await start();
    await server!.write('notebooks/slow.nb.ts', notebook([['sleep001', 'sleep', 'await new Promise((r) => setTimeout(r, 30_000));']]));
    const draft = {
      name: 'race',
      steps: [
        { name: 'sleep', notebook: 'slow.nb.ts', cell: 'sleep', input: {} },
        { name: 'explode', notebook: 'scale.nb.ts', cell: 'boom', input: { factor: 1 } },
      ],
    };
    expect((await server!.request('/api/v1/pipelines', { method: 'POST', json: draft })).status).toBe(201);
    const started = Date.now();
    const run = await server!.request('/api/v1/pipelines/race/run', { method: 'POST', json: {} });
    expect(run.status).toBe(502);
    expect(run.body.run.failed_step).toBe('explode');
    expect(run.body.run.steps[0]).toMatchObject({ name: 'sleep', status: 'canceled' });
    expect(Date.now() - started).toBeLessThan(15_000); // the sleeping cell was stopped, not awaited
  });

  it('stop a cell that runs past its step timeout_ms (its kernel closed), failing the run; the next run works', async () => {
    await start();
    await server!.write(
      'notebooks/spin.nb.ts',
      notebook([
        ['spin0001', 'spin', 'while (true) {}'],
        ['fine0001', 'fine', 'const fine = 42;\nfine'],
      ]),
    );
    const draft = { name: 'spinner', steps: [{ name: 'spin', notebook: 'spin.nb.ts', cell: 'spin', timeout_ms: 300 }] };
    expect((await server!.request('/api/v1/pipelines', { method: 'POST', json: draft })).status).toBe(201);
    const run = await server!.request('/api/v1/pipelines/spinner/run', { method: 'POST', json: {} });
    expect(run.status).toBe(504);
    expect(run.body.detail).toBe("pipeline 'spinner' failed at step 'spin': timed out after 300 ms");
    expect(run.body.run.steps[0]).toMatchObject({ name: 'spin', status: 'failed', error: 'timed out after 300 ms' });
    // The busy loop was interrupted, not left spinning: another run of the notebook works.
    const other = { name: 'fine', steps: [{ name: 'fine', notebook: 'spin.nb.ts', cell: 'fine', timeout_ms: 30_000 }] };
    expect((await server!.request('/api/v1/pipelines', { method: 'POST', json: other })).status).toBe(201);
    const ok = await server!.request('/api/v1/pipelines/fine/run', { method: 'POST', json: {} });
    expect(ok.status).toBe(200);
    expect(ok.body.steps[0].output).toMatchObject({ value: 42 });
    // timeout_ms is checked like every other field.
    const bad = await server!.request('/api/v1/pipelines', {
      method: 'POST',
      json: { ...draft, steps: [{ ...draft.steps[0], timeout_ms: 0 }] },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toMatch(/timeout_ms/);
  });

  it('fail the step whose cell ends the kernel', async () => {
    await start();
    const draft = { name: 'crash', steps: [{ name: 'exit', notebook: 'scale.nb.ts', cell: 'crash' }] };
    expect((await server!.request('/api/v1/pipelines', { method: 'POST', json: draft })).status).toBe(201);
    const run = await server!.request('/api/v1/pipelines/crash/run', { method: 'POST', json: {} });
    expect(run.status).toBe(502);
    expect(run.body.detail).toMatch(
      /^pipeline 'crash' failed at step 'exit': cell 'crash' \(crash001\) ended the kernel: KernelCrash: the kernel crashed/,
    );
  });

  it('report a failed upstream cell as the reason a step did not run', async () => {
    await start();
    // No `factor` in the input: the `factor` cell, which `values` reads, refuses to run.
    const draft = { name: 'noinput', steps: [{ name: 'values', notebook: 'scale.nb.ts', cell: 'values01' }] };
    expect((await server!.request('/api/v1/pipelines', { method: 'POST', json: draft })).status).toBe(201);
    const run = await server!.request('/api/v1/pipelines/noinput/run', { method: 'POST', json: {} });
    expect(run.status).toBe(502);
    expect(run.body.detail).toMatch(
      /^pipeline 'noinput' failed at step 'values': cell 'values' \(values01\) did not run: cell 'factor' \(factor01\), which it needs, failed: TypeError: pipelineInput.factor must be a number$/,
    );
  });

  it('are validated: unknown notebook, unknown cell, not a code cell, cell missing or misplaced, after', async () => {
    await start();
    const draft = {
      name: 'bad',
      steps: [
        { name: 'a', notebook: 'missing.nb.ts', cell: 'x' },
        { name: 'b', notebook: 'scale.nb.ts', cell: 'nope' },
        { name: 'c', notebook: 'scale.nb.ts', cell: 'intro' },
        { name: 'd', notebook: 'scale.nb.ts' },
        { name: 'e', agent: 'teller', cell: 'total', input: { query: 'q' } },
        { name: 'f', notebook: '../outside.nb.ts', cell: 'x' },
        { name: 'g', notebook: 'scale.nb.ts', cell: 'total', after: ['g', 'zzz'] },
      ],
    };
    const report = (await server!.request('/api/v1/pipelines/validate', { method: 'POST', json: draft })).body;
    expect(report.valid).toBe(false);
    expect(report.errors).toEqual([
      { step: 'a', field: 'notebook', message: "unknown notebook 'missing.nb.ts'" },
      { step: 'b', field: 'cell', message: "unknown cell 'nope' in notebook 'scale.nb.ts'" },
      { step: 'c', field: 'cell', message: "cell 'intro' of notebook 'scale.nb.ts' is a markdown cell; notebook steps run code cells" },
      { step: 'd', field: 'cell', message: 'a notebook step names the cell it runs' },
      { step: 'e', field: 'cell', message: 'cell applies to notebook steps only' },
      { step: 'f', field: 'notebook', message: "unknown notebook '../outside.nb.ts'" },
      { step: 'g', field: 'after.0', message: 'a step cannot wait for itself' },
      { step: 'g', field: 'after.1', message: "no step named 'zzz'" },
    ]);
    const saved = await server!.request('/api/v1/pipelines', { method: 'POST', json: draft });
    expect(saved.status).toBe(422);
    expect(saved.body.detail).toContain("step 'b' cell: unknown cell 'nope' in notebook 'scale.nb.ts'");
  });

  it('report a cycle through `after` on the after field', async () => {
    await start();
    const draft = {
      name: 'loop',
      steps: [
        { name: 'x', notebook: 'scale.nb.ts', cell: 'factor', after: ['y'] },
        { name: 'y', notebook: 'scale.nb.ts', cell: 'values', input: { n: '$.steps.x.output.value' } },
      ],
    };
    const report = (await server!.request('/api/v1/pipelines/validate', { method: 'POST', json: draft })).body;
    expect(report.errors).toEqual([
      { step: 'x', field: 'after', message: 'dependency cycle: x → y → x' },
      { step: 'y', field: 'input', message: 'dependency cycle: x → y → x' },
    ]);
  });

  it('draw `after` edges and notebook cells in the graph', async () => {
    await start();
    const draft = {
      name: 'drawn',
      steps: [
        { name: 'factor', notebook: 'scale.nb.ts', cell: 'factor01', input: '$.input' },
        { name: 'values', notebook: 'scale.nb.ts', cell: 'values01', input: '$.input', after: ['factor'] },
      ],
    };
    expect((await server!.request('/api/v1/pipelines', { method: 'POST', json: draft })).status).toBe(201);
    const graph = (await server!.request('/api/v1/pipelines/drawn/graph')).body;
    expect(graph.waves).toEqual([['factor'], ['values']]);
    expect(graph.edges).toContainEqual({ from: 'factor', to: 'values', label: 'after' });
    expect(graph.nodes[1].label).toBe('values\nnotebook: scale.nb.ts#values01');
  });
});

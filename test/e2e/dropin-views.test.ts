import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/**
 * A view for every drop-in kind, in a real browser against a real server: endpoints (routes,
 * health, try-it, last calls), ML plugins and ingestors (health, last runs), pipelines (graph and
 * runs). The invocation log is on, as the "last calls" tables read it.
 */

const files = (upstream: string) => ({
  // Custom logic, no upstream: always ready; a bad input is the endpoint's own 422.
  'endpoints/add.ts': `import { defineEndpoint, z } from 'hangar';
export default defineEndpoint({
  description: 'Adds two numbers',
  path: '/sum',
  methods: ['POST'],
  request: z.object({ a: z.number(), b: z.number() }),
  handler: (input) => ({ sum: input.a + input.b }),
});
`,
  // One upstream on loopback, which answers 500 for city "nowhere".
  'endpoints/forecast.ts': `import { defineEndpoint, z } from 'hangar';
export default defineEndpoint({
  description: 'Weather from the upstream',
  methods: ['GET'],
  request: z.object({ city: z.string() }),
  upstreams: [{ name: 'met', base_url: '${upstream}', path: '/weather', retries: 0, health_path: '/health' }],
  aggregation: 'FIRST_SUCCESS',
});
`,
  'plugins/doubler.ts': `import { definePlugin, z } from 'hangar';
export default definePlugin({
  description: 'Doubles x',
  card: { task: 'regression' },
  input: z.object({ x: z.number() }),
  load: () => 2,
  predict: (factor, input) => ({ y: input.x * factor }),
});
`,
  'plugins/weightless.ts': `import { definePlugin, z } from 'hangar';
export default definePlugin({
  card: { task: 'test' },
  input: z.object({}),
  load: () => { throw new Error('weights file missing'); },
  predict: () => ({}),
});
`,
  'ingestors/notes.ts': `import { defineIngestor } from 'hangar';
export default defineIngestor({
  description: 'Two notes',
  collection: 'notes',
  discover: () => [{ id: 'a' }, { id: 'b' }],
  read: (resource) => [{ id: resource.id, content: 'note ' + resource.id }],
});
`,
  'pipelines/sums.json': JSON.stringify({
    name: 'sums',
    description: 'Adds, then adds ten',
    steps: [
      { name: 'first', endpoint: 'add', input: { a: '$.input.a', b: '$.input.b' } },
      { name: 'plus_ten', endpoint: 'add', input: { a: '$.steps.first.aggregated.sum', b: 10 } },
    ],
    output: { total: '$.steps.plus_ten.aggregated.sum' },
  }),
});

let upstream: http.Server;
let server: TestServer;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/health') return void res.writeHead(200).end('ok');
    if (url.searchParams.get('city') === 'nowhere')
      return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"no such city"}');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ city: url.searchParams.get('city'), sky: 'clear' }));
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  server = await startTestServer({
    files: files(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`),
    settings: { logs: { enabled: true }, plugins: { threads: 1 } } as never,
  });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await new Promise((resolve) => upstream?.close(resolve));
});

describe('endpoints view', () => {
  it('lists the endpoints with their routes, and is in the navigation', async () => {
    const p = await open('#/status');
    await p.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Endpoints' }).click();
    await p.getByRole('heading', { name: 'Endpoints', level: 1 }).waitFor();
    const add = p.locator('[data-endpoint="add"]');
    await add.waitFor();
    expect(await add.textContent()).toContain('POST /api/v1/endpoints/add/sum');
    expect(await p.locator('[data-endpoint="forecast"]').textContent()).toContain('met');
    // The sidebar's endpoint items lead here too.
    await p.locator('[data-kind="endpoint"]').getByRole('link', { name: 'forecast' }).click();
    await p.getByRole('heading', { name: 'Endpoint · forecast' }).waitFor();
  });

  it('shows routes and health, tries a call and lists it among the last calls', async () => {
    const p = await open('#/endpoints/add');
    // The routes, health and last calls arrive by separate requests: wait for each, not for the first.
    await p.getByTestId('endpoint-routes').getByText('GET /api/v1/endpoints/add/health').waitFor();
    await p.getByTestId('endpoint-health').getByText('ready', { exact: true }).waitFor();
    await p.getByTestId('last-calls').getByText('No calls yet').waitFor();

    const form = p.getByTestId('try-it');
    await form.getByLabel('Body (JSON)').fill('{"a": 2, "b": 3}');
    await form.getByRole('button', { name: 'Send' }).click();
    const answer = p.getByTestId('try-answer');
    await p.locator('[data-testid="try-answer"][data-ok="true"]').waitFor();
    expect(await answer.textContent()).toContain('"sum": 5');
    await p.locator('[data-testid="last-calls"] tr[data-status="ok"]').first().waitFor();
    expect(await p.getByTestId('last-calls').textContent()).toContain('POST /sum');
    // The view's own health and info requests are not calls worth listing.
    expect(await p.getByTestId('last-calls').textContent()).not.toContain('/health');
    await p.screenshot({ path: path.join(OUTPUT, 'endpoint-view.png'), fullPage: true });
  });

  it('shows what went wrong: a body that is not JSON, a refused input, a failing upstream', async () => {
    const p = await open('#/endpoints/add');
    const form = p.getByTestId('try-it');
    await form.getByLabel('Body (JSON)').fill('{"a": 2,');
    await form.getByRole('button', { name: 'Send' }).click();
    await p.locator('[data-testid="try-answer"][data-ok="false"]').waitFor();
    expect(await p.getByTestId('try-answer').textContent()).toContain('not valid JSON');

    await form.getByLabel('Body (JSON)').fill('{"a": "two", "b": 3}');
    await form.getByRole('button', { name: 'Send' }).click();
    await p.getByTestId('try-answer').getByText('HTTP 422').waitFor();
    await p.locator('[data-testid="last-calls"] tr[data-status="error"]').first().waitFor();

    const q = await open('#/endpoints/forecast');
    await q.getByTestId('endpoint-health').getByText('ready', { exact: true }).waitFor();
    const url = q.getByTestId('try-it').getByLabel('URL');
    await url.fill(`${await url.inputValue()}?city=nowhere`);
    await q.getByTestId('try-it').getByRole('button', { name: 'Send' }).click();
    await q.locator('[data-testid="try-answer"][data-ok="false"]').waitFor();
    expect(await q.getByTestId('try-answer').textContent()).toMatch(/HTTP 5\d\d/);
  });
});

describe('plugins and ingestors view', () => {
  it('shows each plugin with its health and last runs, a failed load with its reason', async () => {
    await eventually(async () => (await server.request('/api/v1/plugins/doubler/health')).status === 200);
    expect((await server.request('/api/v1/plugins/doubler/predict', { method: 'POST', json: { input: { x: 4 } } })).body).toMatchObject({
      output: { y: 8 },
    });
    const p = await open('#/plugins');
    await p.getByRole('heading', { name: 'Plugins and ingestors', level: 1 }).waitFor();
    const doubler = p.locator('[data-plugin="doubler"]');
    await doubler.getByTestId('plugin-health').getByText('ready').waitFor();
    await doubler.locator('[data-testid="last-calls"] tr[data-status="ok"]').first().waitFor();
    expect(await doubler.getByTestId('last-calls').textContent()).toContain('predict');

    const weightless = p.locator('[data-plugin="weightless"]');
    await weightless.getByTestId('plugin-health').getByText('failed').waitFor();
    expect(await weightless.textContent()).toContain('weights file missing');
  });

  it('shows an ingestor with its health, runs it and shows the run', async () => {
    const p = await open('#/ingestors/notes');
    await p.getByRole('heading', { name: 'Ingestor · notes' }).waitFor();
    const card = p.locator('[data-ingestor="notes"]');
    await card.getByTestId('ingestor-health').getByText('healthy').waitFor();
    await card.getByText('Not run yet.').waitFor();
    await card.getByRole('button', { name: 'Run now' }).click();
    await card.getByTestId('ingestion-run').waitFor();
    expect(await card.getByTestId('ingestion-run').textContent()).toContain('2 created');
    await card.locator('[data-testid="last-calls"] tr[data-status="ok"]').first().waitFor();
    await card.getByTestId('ingestor-health').getByText('2 from 2 resources').waitFor();
    await p.screenshot({ path: path.join(OUTPUT, 'ingestor-view.png'), fullPage: true });
  });
});

describe('pipelines view', () => {
  it('draws the step graph, runs the pipeline and lights the graph with the run', async () => {
    const p = await open('#/pipelines');
    await p.locator('[data-pipeline="sums"]').getByText('valid').waitFor();
    await p.locator('[data-pipeline="sums"]').getByRole('link', { name: 'sums' }).click();
    await p.getByRole('heading', { name: 'Pipeline · sums' }).waitFor();
    const graph = p.getByTestId('pipeline-graph');
    await graph.locator('g.node[data-node="first"]').waitFor();
    expect(await graph.locator('g.node').count()).toBe(4); // input, first, plus_ten, output
    expect(await graph.locator('g.node[data-node="plus_ten"]').getAttribute('data-state')).toBe('idle');

    await p.getByLabel('Input (JSON)').fill('{"a": 1, "b": 2}');
    await p.getByRole('button', { name: 'Run pipeline' }).click();
    await p.locator('[data-testid="pipeline-run"][data-status="completed"]').waitFor();
    expect(await p.getByTestId('pipeline-output').textContent()).toContain('"total": 13');
    expect(await graph.locator('g.node[data-node="plus_ten"]').getAttribute('data-state')).toBe('visited');
    await p.locator('[data-testid="pipeline-runs"] tbody tr').first().waitFor();
    await p.screenshot({ path: path.join(OUTPUT, 'pipeline-view.png'), fullPage: true });
  });

  it('shows a failed run with its failed step, and refuses input that is not JSON', async () => {
    const p = await open('#/pipelines/sums');
    await p.getByTestId('pipeline-graph').waitFor();
    await p.getByLabel('Input (JSON)').fill('{"a": 1,');
    await p.getByRole('button', { name: 'Run pipeline' }).click();
    await p.getByRole('alert').getByText('not valid JSON').waitFor();

    await p.getByLabel('Input (JSON)').fill('{"a": "one", "b": 2}');
    await p.getByRole('button', { name: 'Run pipeline' }).click();
    await p.locator('[data-testid="pipeline-run"][data-status="failed"]').waitFor();
    expect(await p.locator('[data-testid="pipeline-run"] tr[data-step="first"]').getAttribute('data-status')).toBe('failed');
    expect(await p.getByTestId('pipeline-graph').locator('g.node[data-node="first"]').getAttribute('data-state')).toBe('failed');
  });
});

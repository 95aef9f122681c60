import { cp, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { json, type Loopback, startLoopback } from '../endpoints/loopback.js';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer | undefined;
const open: Loopback[] = [];
afterEach(async () => {
  await server?.stop();
  server = undefined;
  await Promise.all(open.splice(0).map((l) => l.close()));
});

/** An agent that writes a one-line report from the context it is given. */
const REPORTER = `import { defineAgent } from 'hangar';
export default defineAgent({
  description: 'writes a report line',
  run: async (input) => ({
    response: input.query + ': ' + input.context.temp + ' C, ' + input.context.headline,
    output: { words: input.query.length },
  }),
});
`;

/**
 * Two slow upstreams (300 ms) behind two endpoints, and the reporter agent. `geo` fails for the
 * city "Nowhere".
 */
async function setup() {
  const slow = (body: (q: URLSearchParams, b: any) => unknown, status = (_b: any) => 200) =>
    startLoopback(async (req, res) => {
      await new Promise((r) => setTimeout(r, 300));
      const b = req.body ? JSON.parse(req.body) : {};
      json(res, status(b), body(req.query, b));
    });
  const weather = await slow(
    (_q, b) => ({ city: b.city, temp: b.city.length }),
    (b) => (b.city === 'Nowhere' ? 500 : 200),
  );
  const news = await slow((_q, b) => ({ headline: `${b.city} wins the cup` }));
  open.push(weather, news);
  server = await startTestServer({ files: { 'agents/reporter.ts': REPORTER } });
  const endpoints = server.ctx.services.get('endpoints');
  endpoints.register({
    name: 'weather',
    aggregation: 'FIRST_SUCCESS',
    request: z.object({ city: z.string() }),
    upstreams: [{ name: 'w', base_url: weather.url, retries: 0 }],
  });
  endpoints.register({
    name: 'news',
    aggregation: 'FIRST_SUCCESS',
    request: z.object({ city: z.string() }),
    upstreams: [{ name: 'n', base_url: news.url, retries: 0 }],
  });
  return server;
}

const CITY_REPORT = {
  name: 'city-report',
  description: 'weather and news in parallel, then a report',
  steps: [
    { name: 'weather', endpoint: 'weather', input: { city: '$.input.city' } },
    { name: 'news', endpoint: 'news', input: { city: '$.input.city' } },
    {
      name: 'report',
      agent: 'reporter',
      input: {
        query: '$.input.city',
        context: { temp: '$.steps.weather.aggregated.temp', headline: '$.steps.news.aggregated.headline' },
      },
    },
  ],
  output: { line: '$.steps.report.output.response', temp: '$.steps.weather.aggregated.temp' },
};

describe('pipeline definitions', () => {
  it('validation names every problem with its step and field', async () => {
    await setup();
    const draft = {
      name: 'broken',
      steps: [
        { name: 'a', endpoint: 'nope', input: { x: '$.input.x' } },
        { name: 'b', agent: 'ghost', input: { query: '$.steps.a.output' } },
        { name: 'c', plugin: 'missing-plugin', input: '$.steps.zzz.output' },
        { name: 'd', endpoint: 'weather', input: { city: '$.stepz.a' } },
        { name: 'e', endpoint: 'weather', input: { city: '$.steps.f.aggregated.city' } },
        { name: 'f', endpoint: 'news', input: { city: '$.steps.e.aggregated.city' } },
        { name: 'a', endpoint: 'news', input: {} },
      ],
    };
    const report = (await server!.request('/api/v1/pipelines/validate', { method: 'POST', json: draft })).body;
    expect(report.valid).toBe(false);
    const errors = report.errors.map((e: { step: string; field: string; message: string }) => [e.step, e.field, e.message]);
    expect(errors).toEqual(
      expect.arrayContaining([
        ['a', 'name', 'duplicate step name (also step 1)'],
        ['a', 'endpoint', "unknown endpoint 'nope'"],
        ['b', 'agent', "unknown agent 'ghost'"],
        ['c', 'plugin', "unknown plugin 'missing-plugin'"],
        ['b', 'input.query', "$.steps.a.output: 'a' is an endpoint step; use $.steps.a.aggregated"],
        ['c', 'input', "$.steps.zzz.output: no step named 'zzz'"],
        ['d', 'input.city', "'$.stepz.a' must start with $.input or $.steps"],
        ['e', 'input', 'dependency cycle: e → f → e'],
        ['f', 'input', 'dependency cycle: e → f → e'],
      ]),
    );
  });

  it('reports shape errors by step and field too', async () => {
    await setup();
    const report = (
      await server!.request('/api/v1/pipelines/validate', {
        method: 'POST',
        json: { name: 'x', steps: [{ name: 'a', endpoint: 'weather', input: 5 }] },
      })
    ).body;
    expect(report).toMatchObject({ valid: false, errors: [{ step: 'a', field: 'input' }] });
    const empty = (await server!.request('/api/v1/pipelines/validate', { method: 'POST', json: { name: 'x', steps: [] } })).body;
    expect(empty.errors).toEqual([{ step: null, field: 'steps', message: 'a pipeline needs at least one step' }]);
  });

  it('saves a definition as pipelines/<name>.json, lists, inspects, draws and deletes it', async () => {
    await setup();
    const invalid = await server!.request('/api/v1/pipelines', {
      method: 'POST',
      json: { name: 'city-report', steps: [{ name: 'a', endpoint: 'nope' }] },
    });
    expect(invalid.status).toBe(422);
    expect(invalid.body.errors).toEqual([{ step: 'a', field: 'endpoint', message: "unknown endpoint 'nope'" }]);

    const saved = await server!.request('/api/v1/pipelines', { method: 'POST', json: CITY_REPORT });
    expect(saved.status).toBe(201);
    const file = JSON.parse(await readFile(path.join(server!.root, 'pipelines', 'city-report.json'), 'utf8'));
    expect(file).toEqual(CITY_REPORT);
    expect((await server!.request('/api/v1/pipelines', { method: 'POST', json: CITY_REPORT })).status).toBe(200);

    const list = (await server!.request('/api/v1/pipelines')).body.pipelines;
    expect(list).toEqual([
      {
        name: 'city-report',
        description: CITY_REPORT.description,
        version: '0.0.0',
        steps: 3,
        file: 'pipelines/city-report.json',
        valid: true,
        errors: [],
      },
    ]);

    const inspected = (await server!.request('/api/v1/pipelines/city-report')).body;
    expect(inspected.validation).toEqual({ valid: true, errors: [], waves: [['weather', 'news'], ['report']] });

    const graph = (await server!.request('/api/v1/pipelines/city-report/graph')).body;
    expect(graph.nodes.map((n: { id: string; kind: string; wave: number }) => [n.id, n.kind, n.wave])).toEqual([
      ['weather', 'endpoint', 0],
      ['news', 'endpoint', 0],
      ['report', 'agent', 1],
    ]);
    expect(graph.edges).toEqual(
      expect.arrayContaining([
        { from: '$input', to: 'weather', label: 'city' },
        { from: 'weather', to: 'report', label: 'context.temp' },
        { from: 'news', to: 'report', label: 'context.headline' },
      ]),
    );
    const mermaid = await server!.request('/api/v1/pipelines/city-report/graph?format=mermaid');
    expect(mermaid.headers.get('content-type')).toContain('text/plain');
    expect(mermaid.text).toContain('flowchart LR');
    expect(mermaid.text).toContain('s_weather -->|context.temp| s_report');

    expect((await server!.request('/api/v1/pipelines/city-report', { method: 'DELETE' })).status).toBe(200);
    expect((await server!.request('/api/v1/pipelines/city-report')).status).toBe(404);
  });

  it('hot-reloads a definition edited on disk; a broken file keeps its last good version serving', async () => {
    await setup();
    await server!.write(
      'pipelines/hand.json',
      JSON.stringify({ name: 'hand', steps: [{ name: 'w', endpoint: 'weather', input: { city: '$.input.city' } }] }),
    );
    await eventually(async () => (await server!.request('/api/v1/pipelines/hand')).body.validation?.valid === true);
    await server!.write('pipelines/hand.json', '{ not json');
    const listed = await eventually(async () => {
      const [hand] = (await server!.request('/api/v1/pipelines')).body.pipelines;
      return hand?.valid === false ? hand : undefined;
    });
    expect(listed).toMatchObject({ name: 'hand', file: 'pipelines/hand.json', errors: [{ step: null, field: '(file)' }] });
    expect(listed.errors[0].message).toMatch(/^invalid JSON: /);
    // As with agents: the last good version still runs until the file is fixed.
    const run = await server!.request('/api/v1/pipelines/hand/run', { method: 'POST', json: { city: 'Oslo' } });
    expect(run.status).toBe(200);
    expect(run.body.steps[0]).toMatchObject({ name: 'w', status: 'completed', output: { city: 'Oslo', temp: 4 } });
  });

  it('answers 422 with the file error for a pipeline whose file never loaded', async () => {
    await setup();
    await server!.write('pipelines/never.json', JSON.stringify({ name: 'never', steps: [{ name: 'w', endpoint: 'weather', input: 7 }] }));
    const listed = await eventually(async () =>
      (await server!.request('/api/v1/pipelines')).body.pipelines.find((p: { name: string }) => p.name === 'never'),
    );
    expect(listed).toMatchObject({ valid: false, file: 'pipelines/never.json' });
    const run = await server!.request('/api/v1/pipelines/never/run', { method: 'POST', json: {} });
    expect(run.status).toBe(422);
    expect(run.body.detail).toBe("pipelines/never.json: invalid pipeline definition: step 'w' input: Invalid input");
  });
});

describe('pipeline input', () => {
  it('checks the input against input_schema before any step runs (422 naming the field)', async () => {
    await setup();
    const draft = {
      name: 'typed',
      input_schema: { type: 'object', properties: { city: { type: 'string', minLength: 2 } }, required: ['city'] },
      steps: [{ name: 'w', endpoint: 'weather', input: '$.input.*' }],
    };
    expect((await server!.request('/api/v1/pipelines', { method: 'POST', json: draft })).status).toBe(201);
    const missing = await server!.request('/api/v1/pipelines/typed/run', { method: 'POST', json: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toBe("body.city: must have required property 'city'");
    const short = await server!.request('/api/v1/pipelines/typed/run/batch', {
      method: 'POST',
      json: { inputs: [{ city: 'Oslo' }, { city: 'X' }] },
    });
    expect(short.status).toBe(422);
    expect(short.body.detail).toMatch(/^body\.inputs\.1\.city: must NOT have fewer than 2 characters/);
    expect((await server!.request('/api/v1/pipelines/typed/runs')).body.runs).toEqual([]);
    // A pipeline that does not exist has no runs to list: its 404, as its other routes answer.
    const nosuch = await server!.request('/api/v1/pipelines/nosuch/runs');
    expect(nosuch.status).toBe(404);
    expect(nosuch.body).toEqual({ detail: "pipeline 'nosuch' not found", code: 'HANGAR_PIPELINE_NOT_FOUND' });

    // `$.input.*` passes the whole input on.
    const ok = await server!.request('/api/v1/pipelines/typed/run', { method: 'POST', json: { city: 'Oslo' } });
    expect(ok.body.steps[0].input).toEqual({ city: 'Oslo' });
  });

  it('reports an input_schema that is not a JSON Schema', async () => {
    await setup();
    const report = (
      await server!.request('/api/v1/pipelines/validate', {
        method: 'POST',
        json: { name: 'x', input_schema: { type: 'no-such-type' }, steps: [{ name: 'w', endpoint: 'weather', input: '$.input' }] },
      })
    ).body;
    expect(report.valid).toBe(false);
    expect(report.errors[0]).toMatchObject({ step: null, field: 'input_schema' });
    expect(report.errors[0].message).toMatch(/^not a valid JSON Schema: /);
  });
});

describe('pipeline runs', () => {
  it('fails a step at its timeout_ms even when the step ignores the stop, and cancels its siblings', async () => {
    await setup();
    await server!.write(
      'agents/deaf.ts',
      `import { defineAgent } from 'hangar';
export default defineAgent({ run: () => new Promise((resolve) => setTimeout(() => resolve('too late'), 20_000)) });
`,
    );
    await eventually(async () => (await server!.request('/api/v1/deaf/health')).status === 200);
    const draft = {
      name: 'deadline',
      steps: [
        { name: 'deaf', agent: 'deaf', input: { query: 'x' }, timeout_ms: 200 },
        { name: 'weather', endpoint: 'weather', input: { city: 'Oslo' } },
      ],
    };
    expect((await server!.request('/api/v1/pipelines', { method: 'POST', json: draft })).status).toBe(201);
    const started = Date.now();
    const res = await server!.request('/api/v1/pipelines/deadline/run', { method: 'POST', json: {} });
    // A step that ran out of time is a gateway timeout, not a bad answer.
    expect(res.status).toBe(504);
    expect(res.body.detail).toBe("pipeline 'deadline' failed at step 'deaf': timed out after 200 ms");
    expect(res.body.run.steps).toMatchObject([
      { name: 'deaf', status: 'failed', error: 'timed out after 200 ms' },
      { name: 'weather', status: 'canceled' },
    ]);
    expect(Date.now() - started).toBeLessThan(15_000); // not the 20 s the agent would take
  });

  it('runs three steps, the two independent ones in parallel, and keeps every step in the run record', async () => {
    await setup();
    await server!.request('/api/v1/pipelines', { method: 'POST', json: CITY_REPORT });
    const res = await server!.request('/api/v1/pipelines/city-report/run', { method: 'POST', json: { city: 'Oslo' } });
    expect(res.status).toBe(200);
    const run = res.body;
    expect(run).toMatchObject({
      pipeline: 'city-report',
      status: 'completed',
      input: { city: 'Oslo' },
      output: { line: 'Oslo: 4 C, Oslo wins the cup', temp: 4 },
    });
    const [weather, news, report] = run.steps;
    expect(weather).toMatchObject({
      name: 'weather',
      kind: 'endpoint',
      status: 'completed',
      input: { city: 'Oslo' },
      output: { city: 'Oslo', temp: 4 },
      depends_on: [],
    });
    expect(weather.upstreams[0]).toMatchObject({ name: 'w', ok: true });
    expect(report).toMatchObject({
      kind: 'agent',
      status: 'completed',
      depends_on: ['weather', 'news'],
      input: { query: 'Oslo', context: { temp: 4, headline: 'Oslo wins the cup' } },
    });
    expect(report.output.response).toBe('Oslo: 4 C, Oslo wins the cup');
    for (const step of run.steps) expect(step.duration_ms).toBeGreaterThan(0);
    // Parallel: each slow step took ≥ 300 ms, and each started before the other finished.
    expect(weather.duration_ms).toBeGreaterThanOrEqual(290);
    expect(news.duration_ms).toBeGreaterThanOrEqual(290);
    expect(Date.parse(news.started_at)).toBeLessThan(Date.parse(weather.started_at) + weather.duration_ms);
    expect(Date.parse(weather.started_at)).toBeLessThan(Date.parse(news.started_at) + news.duration_ms);

    const stored = (await server!.request(`/api/v1/pipelines/city-report/runs/${run.id}`)).body;
    expect(stored).toEqual(run);
    expect((await server!.request('/api/v1/pipelines/city-report/runs')).body.runs.map((r: { id: string }) => r.id)).toEqual([run.id]);
  });

  it('stops at a failed step, naming it, and skips what depended on it', async () => {
    await setup();
    await server!.request('/api/v1/pipelines', { method: 'POST', json: CITY_REPORT });
    const res = await server!.request('/api/v1/pipelines/city-report/run', { method: 'POST', json: { city: 'Nowhere' } });
    expect(res.status).toBe(502);
    expect(res.body.detail).toMatch(/^pipeline 'city-report' failed at step 'weather': endpoint 'weather' failed/);
    const run = res.body.run;
    expect(run).toMatchObject({ status: 'failed', failed_step: 'weather' });
    const status = Object.fromEntries(run.steps.map((s: { name: string; status: string }) => [s.name, s.status]));
    expect(status.weather).toBe('failed');
    expect(['canceled', 'completed']).toContain(status.news);
    expect(status.report).toBe('skipped');
    expect(run.steps[0].upstreams[0]).toMatchObject({ name: 'w', status: 500 });
  });

  it('runs async and batch on the task board', async () => {
    await setup();
    await server!.request('/api/v1/pipelines', { method: 'POST', json: CITY_REPORT });
    const accepted = await server!.request('/api/v1/pipelines/city-report/run/async', { method: 'POST', json: { city: 'Rome' } });
    expect(accepted.status).toBe(202);
    const done = async (id: string) =>
      eventually(async () => {
        const task = (await server!.request(`/api/v1/tasks/${id}`)).body;
        return ['completed', 'failed'].includes(task.status) ? task : undefined;
      }, 10_000);
    const task = await done(accepted.body.id);
    expect(task).toMatchObject({ kind: 'pipeline.run', status: 'completed', result: { status: 'completed', output: { temp: 4 } } });
    expect(task.result.task_id).toBe(accepted.body.id);

    const batch = await server!.request('/api/v1/pipelines/city-report/run/batch', {
      method: 'POST',
      json: { inputs: [{ city: 'Oslo' }, { city: 'Nowhere' }, { city: 'Lima' }] },
    });
    const batchTask = await done(batch.body.id);
    expect(batchTask.result).toMatchObject({ total: 3, succeeded: 2, failed: 1 });
    expect(batchTask.result.results.map((r: { status: string; failed_step: string | null }) => [r.status, r.failed_step])).toEqual([
      ['completed', null],
      ['failed', 'weather'],
      ['completed', null],
    ]);
    expect((await server!.request('/api/v1/pipelines/missing/run/async', { method: 'POST', json: {} })).status).toBe(404);
  });
});

describe('the shipped example', () => {
  it('pipelines/trip-quote.json is valid against the example endpoints', async () => {
    const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
    const read = (p: string) => readFile(path.join(repo, p), 'utf8');
    server = await startTestServer({
      files: {
        'endpoints/weather.ts': await read('endpoints/weather.ts'),
        'endpoints/quote.ts': await read('endpoints/quote.ts'),
        'pipelines/trip-quote.json': await read('pipelines/trip-quote.json'),
      },
    });
    const inspected = (await server.request('/api/v1/pipelines/trip-quote')).body;
    expect(inspected.validation).toEqual({ valid: true, errors: [], waves: [['weather', 'quote']] });
  });

  it('runs end to end against loopback providers (API key, bearer and OAuth2 upstreams)', async () => {
    const reading = (temp_c: number) =>
      startLoopback((req, res) => json(res, 200, { city: req.query.get('city'), temp_c, conditions: 'clear' }));
    const a = await reading(20);
    const b = await reading(21);
    const catalog = await startLoopback((req, res) => json(res, 200, { sku: req.query.get('sku'), price_usd: 12.5 }));
    const tokens = await startLoopback((_req, res) => json(res, 200, { access_token: 'fx-token', expires_in: 3600 }));
    const fx = await startLoopback((req, res) =>
      req.headers.authorization === 'Bearer fx-token'
        ? json(res, 200, { base: 'USD', quote: req.query.get('quote'), rate: 2 })
        : json(res, 401, {}),
    );
    open.push(a, b, catalog, tokens, fx);
    const env = {
      WEATHER_A_URL: a.url,
      WEATHER_A_KEY: 'ka',
      WEATHER_B_URL: b.url,
      WEATHER_B_TOKEN: 'tb',
      CATALOG_URL: catalog.url,
      CATALOG_KEY: 'kc',
      FX_URL: fx.url,
      FX_TOKEN_URL: tokens.url,
      FX_CLIENT_ID: 'id',
      FX_CLIENT_SECRET: 'cs',
    };
    Object.assign(process.env, env);
    try {
      const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
      const read = (p: string) => readFile(path.join(repo, p), 'utf8');
      server = await startTestServer({
        files: {
          'endpoints/weather.ts': await read('endpoints/weather.ts'),
          'endpoints/quote.ts': await read('endpoints/quote.ts'),
          'pipelines/trip-quote.json': await read('pipelines/trip-quote.json'),
        },
      });
      const run = await server.request('/api/v1/pipelines/trip-quote/run', {
        method: 'POST',
        json: { city: 'Lisbon', sku: 'T-1', currency: 'EUR' },
      });
      expect(run.status).toBe(200);
      expect(run.body.output).toEqual({
        city: 'Lisbon',
        forecast: {
          provider_a: { city: 'Lisbon', temp_c: 20, conditions: 'clear' },
          provider_b: { city: 'Lisbon', temp_c: 21, conditions: 'clear' },
        },
        price: 25,
        currency: 'EUR',
      });
      // The schema's default filled the quantity in.
      expect(run.body.input.quantity).toBe(1);
    } finally {
      for (const key of Object.keys(env)) delete process.env[key];
    }
  });
});

describe('plugin steps', () => {
  it('runs the shipped iris plugin as a step and feeds its prediction to an agent', async () => {
    const shipped = fileURLToPath(new URL('../../plugins/iris', import.meta.url));
    server = await startTestServer({ files: { 'agents/reporter.ts': REPORTER } });
    await cp(shipped, path.join(server.root, 'plugins', 'iris'), { recursive: true });
    await eventually(async () => (await server!.request('/api/v1/plugins/iris/health')).status === 200, 15_000);
    const definition = {
      name: 'flower-report',
      steps: [
        { name: 'classify', plugin: 'iris', input: '$.input' },
        {
          name: 'report',
          agent: 'reporter',
          input: { query: '$.steps.classify.output.species', context: { temp: 0, headline: 'classified' } },
        },
      ],
      output: { species: '$.steps.classify.output.species', line: '$.steps.report.output.response' },
    };
    expect((await server.request('/api/v1/pipelines/validate', { method: 'POST', json: definition })).body).toMatchObject({ valid: true });
    expect((await server.request('/api/v1/pipelines', { method: 'POST', json: definition })).status).toBeLessThan(300);
    const setosa = { sepal_length: 5.1, sepal_width: 3.5, petal_length: 1.4, petal_width: 0.2 };
    const run = (await server.request('/api/v1/pipelines/flower-report/run', { method: 'POST', json: setosa })).body;
    expect(run).toMatchObject({ status: 'completed', output: { species: 'setosa', line: 'setosa: 0 C, classified' } });
    expect(run.steps[0]).toMatchObject({ name: 'classify', kind: 'plugin', status: 'completed', input: setosa });
    expect(run.steps[0].output.confidence).toBeGreaterThan(0.5);

    // Invalid plugin input fails the step, naming it and the field.
    const bad = await server.request('/api/v1/pipelines/flower-report/run', { method: 'POST', json: { ...setosa, petal_width: 'wide' } });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(bad.body)).toMatch(/classify/);
    expect(JSON.stringify(bad.body)).toMatch(/petal_width/);
  });
});

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

const repo = path.resolve(import.meta.dirname, '..', '..');
const shipped = (file: string) => readFileSync(path.join(repo, 'plugins', 'iris', file), 'utf8');

const setosa = { sepal_length: 5.1, sepal_width: 3.5, petal_length: 1.4, petal_width: 0.2 };
const virginica = { sepal_length: 7.7, sepal_width: 3.0, petal_length: 6.1, petal_width: 2.3 };

/** A plugin whose predict can throw, hang or kill its worker thread, on request. */
const crashy = `import { definePlugin, z } from 'hangar';
export default definePlugin({
  card: { task: 'test' },
  input: z.object({ mode: z.enum(['ok', 'throw', 'exit', 'hang']) }),
  timeoutMs: 1500,
  load: () => ({}),
  predict: (_m, input) => {
    if (input.mode === 'throw') throw new Error('boom');
    if (input.mode === 'exit') process.exit(3);
    if (input.mode === 'hang') for (;;) {}
    return { fine: true };
  },
});`;

const failing = (ok: boolean) => `import { definePlugin, z } from 'hangar';
export default definePlugin({
  card: { task: 'test' },
  input: z.object({}),
  load: () => { if (!${ok}) throw new Error('weights file missing'); return 1; },
  predict: () => ({ loaded: true }),
});`;

async function waitReady(server: TestServer, name: string) {
  return eventually(async () => (await server.request(`/api/v1/plugins/${name}/health`)).status === 200, 15_000);
}

describe('ML plugins', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({
      files: {
        'plugins/iris/index.ts': shipped('index.ts'),
        'plugins/iris/model.ts': shipped('model.ts'),
        'plugins/iris/iris.csv': shipped('iris.csv'),
        'plugins/crashy.ts': crashy,
        'plugins/failing.ts': failing(false),
        'plugins/broken.ts': 'export default definePlugin({',
      },
      settings: { plugins: { threads: 2 } },
    });
    await waitReady(server, 'iris');
    await waitReady(server, 'crashy');
    await eventually(async () => (await server.request('/api/v1/plugins/failing/health')).body.status === 'failed', 15_000);
  }, 30_000);
  afterAll(() => server?.stop());

  it('lists plugins with their status, broken drop-ins included with their error', async () => {
    const { status, body } = await server.request('/api/v1/plugins');
    expect(status).toBe(200);
    const byName = Object.fromEntries(body.plugins.map((p: any) => [p.name, p]));
    expect(byName.iris).toMatchObject({ status: 'ready', task: 'classification', version: '1.0.0' });
    expect(byName.failing).toMatchObject({ status: 'failed', error: expect.stringContaining('weights file missing') });
    expect(byName.broken).toMatchObject({ status: 'error', file: 'plugins/broken.ts' });
  });

  it('serves a model card with held-out metrics and the input schema', async () => {
    const { status, body } = await server.request('/api/v1/plugins/iris/model_card');
    expect(status).toBe(200);
    expect(body.task).toBe('classification');
    expect(body.metrics.holdout_rows).toBe(45);
    expect(body.metrics.holdout_accuracy).toBeGreaterThan(0.85);
    expect(body.metrics.holdout_accuracy).toBeLessThanOrEqual(1);
    expect(body.inputs.required).toEqual(['sepal_length', 'sepal_width', 'petal_length', 'petal_width']);
    expect(body.limitations.length).toBeGreaterThan(0);
    expect((await server.request('/api/v1/plugins/nope/model_card')).status).toBe(404);
  });

  it('predicts one input, and answers 422 naming the field for a bad one', async () => {
    const ok = await server.request('/api/v1/plugins/iris/predict', { method: 'POST', json: { input: setosa } });
    expect(ok.status).toBe(200);
    expect(ok.body.output.species).toBe('setosa');
    expect(ok.body.output.confidence).toBeGreaterThan(0.5);

    const bad = await server.request('/api/v1/plugins/iris/predict', {
      method: 'POST',
      json: { input: { ...setosa, petal_width: 'wide' } },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toContain('body.input.petal_width');

    const missing = await server.request('/api/v1/plugins/iris/predict', { method: 'POST', json: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toContain('body.input');

    expect((await server.request('/api/v1/plugins/nope/predict', { method: 'POST', json: { input: {} } })).status).toBe(404);
  });

  it('runs a batch as a task on the board, whose result reports failures per item while the other items succeed', async () => {
    const submitted = await server.request('/api/v1/plugins/iris/predict/batch', {
      method: 'POST',
      json: { inputs: [setosa, { ...setosa, sepal_length: -1 }, virginica, 'not an object'] },
    });
    expect(submitted.status).toBe(202);
    expect(submitted.body).toMatchObject({ kind: 'plugin.predict', target: 'iris', metadata: { source: 'predict/batch' } });
    expect(submitted.headers.get('location')).toBe(`/api/v1/tasks/${submitted.body.id}`);
    const task = await eventually(async () => {
      const { body } = await server.request(submitted.headers.get('location')!);
      return body.status === 'completed' ? body : undefined;
    });
    const body = task.result;
    expect(body).toMatchObject({ plugin: 'iris', count: 4, succeeded: 2, failed: 2 });
    expect(body.results[0]).toMatchObject({ index: 0, ok: true, output: { species: 'setosa' } });
    expect(body.results[1]).toMatchObject({
      index: 1,
      ok: false,
      status: 422,
      error: expect.stringContaining('body.inputs.1.sepal_length'),
    });
    expect(body.results[2]).toMatchObject({ index: 2, ok: true, output: { species: 'virginica' } });
    expect(body.results[3]).toMatchObject({ index: 3, ok: false, status: 422 });
    expect((await server.request('/api/v1/plugins/iris/predict/batch', { method: 'POST', json: { inputs: [] } })).status).toBe(422);
  });

  it('runs predictions on the task board with /predict/async', async () => {
    const submitted = await server.request('/api/v1/plugins/iris/predict/async', { method: 'POST', json: { inputs: [setosa, virginica] } });
    expect(submitted.status).toBe(202);
    expect(submitted.headers.get('location')).toBe(`/api/v1/tasks/${submitted.body.id}`);
    const done = await eventually(async () => {
      const { body } = await server.request(`/api/v1/tasks/${submitted.body.id}`);
      return body.status === 'completed' ? body : undefined;
    });
    expect(done.result.results.map((r: any) => r.output.species)).toEqual(['setosa', 'virginica']);
    const bad = await server.request('/api/v1/plugins/iris/predict/async', { method: 'POST', json: { nothing: 1 } });
    expect(bad.status).toBe(422);
  });

  it('a worker crash fails that request only; the server and the next prediction are fine', async () => {
    const crash = server.request('/api/v1/plugins/crashy/predict', { method: 'POST', json: { input: { mode: 'exit' } } });
    const concurrent = server.request('/api/v1/plugins/iris/predict', { method: 'POST', json: { input: virginica } });
    const [crashed, other] = await Promise.all([crash, concurrent]);
    expect(crashed.status).toBe(500);
    expect(crashed.body.detail).toContain('worker crashed');
    expect(other.status).toBe(200);
    expect(other.body.output.species).toBe('virginica');

    const threw = await server.request('/api/v1/plugins/crashy/predict', { method: 'POST', json: { input: { mode: 'throw' } } });
    expect(threw.status).toBe(500);
    expect(threw.body.detail).toContain('boom');

    const after = await server.request('/api/v1/plugins/crashy/predict', { method: 'POST', json: { input: { mode: 'ok' } } });
    expect(after.status).toBe(200);
    expect(after.body.output).toEqual({ fine: true });
  });

  it('stops a prediction that hangs (504) and keeps serving', async () => {
    const hung = await server.request('/api/v1/plugins/crashy/predict', { method: 'POST', json: { input: { mode: 'hang' } } });
    expect(hung.status).toBe(504);
    const after = await server.request('/api/v1/plugins/crashy/predict', { method: 'POST', json: { input: { mode: 'ok' } } });
    expect(after.status).toBe(200);
  });

  it('a plugin whose load fails answers 503 until it is fixed and reloaded', async () => {
    const health = await server.request('/api/v1/plugins/failing/health');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 'failed', error: expect.stringContaining('weights file missing') });
    const predict = await server.request('/api/v1/plugins/failing/predict', { method: 'POST', json: { input: {} } });
    expect(predict.status).toBe(503);
    expect(predict.body.detail).toContain('weights file missing');

    const stillBroken = await server.request('/api/v1/plugins/failing/reload', { method: 'POST' });
    expect(stillBroken.status).toBe(503);

    await server.write('plugins/failing.ts', failing(true));
    // Hot reload picks the fix up; an explicit reload must agree.
    await waitReady(server, 'failing');
    const reloaded = await server.request('/api/v1/plugins/failing/reload', { method: 'POST' });
    expect(reloaded.status).toBe(200);
    expect(reloaded.body.status).toBe('ready');
    const ok = await server.request('/api/v1/plugins/failing/predict', { method: 'POST', json: { input: {} } });
    expect(ok.body.output).toEqual({ loaded: true });
  });

  it('reloads every plugin with POST /api/v1/plugins/reload', async () => {
    const before = (await server.request('/api/v1/plugins/iris/health')).body.loads;
    const { status, body } = await server.request('/api/v1/plugins/reload', { method: 'POST' });
    expect(status).toBe(200);
    const iris = body.reloaded.find((p: any) => p.name === 'iris');
    expect(iris).toMatchObject({ status: 'ready', loads: before + 1 });
    expect((await server.request('/api/v1/plugins/nope/reload', { method: 'POST' })).status).toBe(404);
  });

  it('describes one plugin, and counts predictions in /metrics', async () => {
    const one = await server.request('/api/v1/plugins/iris');
    expect(one.body).toMatchObject({ name: 'iris', status: 'ready', health: { status: 'ready' } });
    for (const [method, path] of [
      ['GET', '/api/v1/plugins/nope'],
      ['GET', '/api/v1/plugins/nope/health'],
      ['POST', '/api/v1/plugins/nope/predict/batch'],
      ['POST', '/api/v1/plugins/nope/predict/async'],
    ] as const) {
      const res = await server.request(path, { method, json: method === 'POST' ? { inputs: [{}] } : undefined });
      expect(res.status, path).toBe(404);
      expect(res.body.detail).toBe('plugin nope not found');
    }
    const metrics = await server.request('/metrics');
    expect(metrics.text).toMatch(/plugin_predictions_total\{plugin="iris",outcome="ok"\} \d+/);
    expect(metrics.text).toMatch(/plugin_predictions_total\{plugin="iris",outcome="error"\} 3/); // one bad single input, two bad batch items
  });

  it('documents the plugin routes in the OpenAPI document', async () => {
    const { body } = await server.request('/openapi.json');
    expect(body.paths['/api/v1/plugins/{name}/predict/batch'].post.requestBody).toBeDefined();
    expect(body.paths['/api/v1/plugins/{name}/model_card'].get).toBeDefined();
  });
});

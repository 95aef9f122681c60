import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBSYSTEMS } from '../../core/app/subsystems.js';
import { type ResourceCall, resourceCallOf } from '../../core/http/route.js';
import type { Subsystem } from '../../core/kernel/context.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Which resource a request calls comes from the matched route's `config.resource`: the invocation
 * log, the control plane and the metrics read it. A probe subsystem records what `resourceCallOf`
 * says of each request a real server routes.
 */
const seen = new Map<string, ResourceCall | undefined>();
const probe: Subsystem = {
  name: 'resource-probe',
  routes(app) {
    app.addHook('onRequest', (req, _reply, done) => {
      seen.set(`${req.method} ${req.url}`, resourceCallOf(req));
      done();
    });
  },
};

describe('resourceCallOf: which resource a request calls', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ settings: { watch: false }, start: { subsystems: [...SUBSYSTEMS, probe] } });
  });
  afterAll(() => server?.stop());

  const callOf = async (method: string, path: string) => {
    await server.request(path, { method, ...(method === 'POST' ? { json: {} } : {}) });
    expect(seen.has(`${method} ${path}`), `${method} ${path} reached the server`).toBe(true);
    return seen.get(`${method} ${path}`);
  };

  it('recognises agent calls, and agent health as a non-call', async () => {
    expect(await callOf('POST', '/api/v1/hello/invoke')).toEqual({
      resource: 'agent',
      name: 'hello',
      operation: 'invoke',
      invocation: true,
    });
    expect((await callOf('POST', '/api/v1/hello/invoke/stream'))?.operation).toBe('stream');
    expect((await callOf('POST', '/api/v1/hello/chat'))?.operation).toBe('chat');
    expect(await callOf('POST', '/api/v1/hello/threads/t1/approve')).toMatchObject({
      resource: 'agent',
      operation: 'approve',
      invocation: true,
    });
    expect(await callOf('GET', '/api/v1/hello/health')).toMatchObject({ resource: 'agent', invocation: false });
    expect(await callOf('GET', '/api/v1/hello/invoke')).toBeUndefined();
    expect(await callOf('GET', '/api/v1/hello/threads')).toBeUndefined();
  });

  it('never takes fixed routes for agents', async () => {
    for (const path of [
      '/api/v1/tasks/abc',
      '/api/v1/logs/analyze',
      '/api/v1/control/maintenance',
      '/api/v1/agents',
      '/api/v1/status',
      '/health',
    ]) {
      expect(await callOf('POST', path), path).toBeUndefined();
    }
  });

  it('recognises plugin, ingestor, pipeline and endpoint calls', async () => {
    expect(await callOf('POST', '/api/v1/plugins/iris/predict')).toEqual({
      resource: 'plugin',
      name: 'iris',
      operation: 'predict',
      invocation: true,
    });
    expect(await callOf('POST', '/api/v1/plugins/iris/predict/batch')).toMatchObject({ operation: 'batch', invocation: true });
    expect(await callOf('GET', '/api/v1/plugins/iris/health')).toMatchObject({ resource: 'plugin', invocation: false });
    expect(await callOf('POST', '/api/v1/plugins/reload')).toBeUndefined();
    expect(await callOf('POST', '/api/v1/ingestion/docs/run/async')).toEqual({
      resource: 'ingestor',
      name: 'docs',
      operation: 'run.async',
      invocation: true,
    });
    expect(await callOf('POST', '/api/v1/pipelines/nightly/run')).toMatchObject({
      resource: 'pipeline',
      name: 'nightly',
      invocation: true,
    });
    expect(await callOf('GET', '/api/v1/pipelines/nightly')).toMatchObject({ resource: 'pipeline', invocation: false });
    expect(await callOf('GET', '/api/v1/endpoints/weather/today')).toEqual({
      resource: 'endpoint',
      name: 'weather',
      operation: 'GET /today',
      invocation: true,
    });
    expect(await callOf('GET', '/api/v1/endpoints')).toBeUndefined();
  });
});

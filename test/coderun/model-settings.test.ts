import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The model settings' routes of the Runs view: the endpoint without its key, and "test connection"
 * making one real request to a scripted OpenAI-protocol server, each failure said in words.
 */

let model: FakeOpenAI;
const servers: TestServer[] = [];

beforeAll(async () => {
  model = await startFakeOpenAI();
});
afterAll(async () => {
  for (const server of servers) await server.stop();
  await model?.close();
});

async function serverWith(settings: Record<string, unknown>) {
  const server = await startTestServer({ settings: { model: { retries: 0, ...settings } } as never });
  servers.push(server);
  const { token } = JSON.parse(await readFile(path.join(server.root, '.hangar', 'code-session.json'), 'utf8')) as { token: string };
  return (pathname: string, method = 'GET') => server.request(pathname, { method, headers: { 'x-hangar-session': token } });
}

describe('model settings', () => {
  it('shows the endpoint and whether a key is set, never the key', async () => {
    const api = await serverWith({ baseUrl: model.baseUrl, model: 'fake-1', apiKey: 'sk-very-secret' });
    const res = await api('/api/config/model');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ base_url: model.baseUrl, model: 'fake-1', api_key: 'literal', api_key_variable: null });
    expect(res.text).not.toContain('sk-very-secret');
  });

  it('names the environment variable a key comes from', async () => {
    const api = await serverWith({ baseUrl: model.baseUrl, apiKey: '${HANGAR_TEST_UNSET_KEY}' });
    expect((await api('/api/config/model')).body).toMatchObject({ api_key: 'environment', api_key_variable: 'HANGAR_TEST_UNSET_KEY' });
    // …and the test says it cannot be read, before any request is made.
    const test = await api('/api/config/model/test', 'POST');
    expect(test.body).toMatchObject({ ok: false, error: expect.stringContaining('HANGAR_TEST_UNSET_KEY is not set') });
  });

  it('is guarded by the session token like the rest of the configuration', async () => {
    await serverWith({ baseUrl: model.baseUrl });
    const res = await servers.at(-1)!.request('/api/config/model/test', { method: 'POST' });
    expect(res.status).toBe(401);
  });

  it('tests the connection with one real request', async () => {
    const api = await serverWith({ baseUrl: model.baseUrl, model: 'fake-1', apiKey: 'sk-test' });
    const before = model.requests.length;
    const res = await api('/api/config/model/test', 'POST');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, model: 'fake-1', error: null, reply: expect.stringContaining('Echo') });
    expect(model.requests.length).toBe(before + 1);
    expect(model.requests.at(-1)!.authorization).toBe('Bearer sk-test');
  });

  it('reports a missing endpoint', async () => {
    const api = await serverWith({});
    const res = await api('/api/config/model/test', 'POST');
    expect(res.body).toMatchObject({ ok: false, base_url: null, error: expect.stringContaining('no model endpoint is configured') });
  });

  it('reports an endpoint that refuses the key', async () => {
    model.enqueue({ status: 401, error: 'Incorrect API key provided' });
    const api = await serverWith({ baseUrl: model.baseUrl, apiKey: 'sk-wrong' });
    const res = await api('/api/config/model/test', 'POST');
    expect(res.body.ok).toBe(false);
    expect(res.body.error).toContain('HTTP 401');
    expect(res.body.error).toContain('Incorrect API key provided');
    expect(res.body.error).toContain('refused the API key');
  });

  it('reports a model the endpoint does not serve (404) with what to check', async () => {
    model.enqueue({ status: 404, error: 'The model `fake-9` does not exist' });
    const api = await serverWith({ baseUrl: model.baseUrl, model: 'fake-9' });
    const res = await api('/api/config/model/test', 'POST');
    expect(res.body).toMatchObject({ ok: false, error: expect.stringContaining('HTTP 404') });
    expect(res.body.error).toContain('end in /v1');
  });

  it('reports an endpoint nobody listens on', async () => {
    // A port that was free a moment ago: nothing answers there.
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const api = await serverWith({ baseUrl: `http://127.0.0.1:${port}/v1` });
    const res = await api('/api/config/model/test', 'POST');
    expect(res.body).toMatchObject({ ok: false, error: expect.stringContaining(`could not reach http://127.0.0.1:${port}/v1`) });
    expect(res.body.error).toContain('is the model server running');
  });

  it('reports an answer that is not a chat completion', async () => {
    const other = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"hello":"world"}'));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const api = await serverWith({ baseUrl: `http://127.0.0.1:${(other.address() as AddressInfo).port}/v1` });
      const res = await api('/api/config/model/test', 'POST');
      expect(res.body).toMatchObject({ ok: false, error: expect.stringContaining('not with a chat completion') });
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });
});

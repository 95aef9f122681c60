import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { maskUrl } from '../../core/endpoints/describe.js';
import { interpolate, MissingEnvError, Redactor, referencedVariables } from '../../core/endpoints/interpolation.js';
import { EndpointService } from '../../core/endpoints/service.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { json, type Loopback, startLoopback, startTokenServer } from './loopback.js';

const open: Loopback[] = [];
let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
  await Promise.all(open.splice(0).map((l) => l.close()));
});

describe('${NAME} interpolation', () => {
  it('resolves references and names a missing variable without any value', () => {
    const redactor = new Redactor();
    expect(interpolate('${A}-${B}/x', { A: 'one', B: 'two' }, 'f', redactor)).toBe('one-two/x');
    expect(referencedVariables('${A} ${B} ${A} $NOT {X}')).toEqual(['A', 'B']);
    const err = (() => {
      try {
        interpolate('Bearer ${MISSING_KEY}', { OTHER: 'v' }, 'upstreams.a.auth.api_key');
      } catch (e) {
        return e as MissingEnvError;
      }
    })();
    expect(err).toBeInstanceOf(MissingEnvError);
    expect(err!.message).toBe('environment variable MISSING_KEY is not set (referenced by upstreams.a.auth.api_key)');
    expect(redactor.redact('one two one-two')).toBe('*** *** ***-***');
  });

  it('is resolved at request time: registering needs no variable, and a changed value applies to the next call', async () => {
    const seen: string[] = [];
    const up = await startLoopback((req, res) => {
      seen.push(String(req.headers['x-api-key']));
      json(res, 200, {});
    });
    open.push(up);
    const env: Record<string, string | undefined> = {};
    const s = new EndpointService({ metrics: new Registry(), env: () => env });
    s.register({ name: 'e', upstreams: [{ name: 'a', base_url: '${UP_URL}', auth: { type: 'API_KEY', api_key: '${KEY}' } }] });

    const missing = await s.invoke('e', 'POST', {}).catch((e) => e);
    expect(missing.status).toBe(502);
    expect(missing.upstreams[0]).toMatchObject({
      outcome: 'config_error',
      attempts: 0,
      error: 'environment variable UP_URL is not set (referenced by upstreams.a.base_url)',
    });

    env.UP_URL = up.url;
    env.KEY = 'first-key';
    await s.invoke('e', 'POST', {});
    env.KEY = 'rotated-key';
    await s.invoke('e', 'POST', {});
    expect(seen).toEqual(['first-key', 'rotated-key']);
    // The registered definition still holds the template, not a value.
    expect(JSON.stringify(s.get('e')!.upstreams)).toContain('${KEY}');
    expect(JSON.stringify(s.get('e')!.upstreams)).not.toContain('rotated-key');
  });

  it('masks inline credentials in URLs shown by /info', () => {
    expect(maskUrl('https://user:pw@h/p?key=abc&v=${V}')).toBe('https://***@h/p?key=***&v=${V}');
  });
});

/** Every file under `dir`, as text. */
async function readAll(dir: string): Promise<string> {
  let out = '';
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    out += await readFile(path.join(entry.parentPath ?? (entry as unknown as { path: string }).path, entry.name), 'utf8').catch(() => '');
  }
  return out;
}

describe('a secret never leaves the endpoint layer', () => {
  it('is absent from every response, log line, metric, OpenAPI and stored file of a run, even when an upstream echoes it', async () => {
    const SECRET_KEY = 'sk-live-5f3a9c1e7b2d';
    const CLIENT_SECRET = 'cs-2b7e151628aed2a6';
    const PASSWORD = 'pw-hunter2-abcdef';
    const tokenServer = await startTokenServer({ clientId: 'app', clientSecret: CLIENT_SECRET });
    open.push(tokenServer);
    // A hostile upstream: fails and echoes our credentials back in its error body.
    const echo = await startLoopback((req, res) =>
      json(res, 500, { got: req.headers.authorization, key: req.headers['x-api-key'], url: req.path }),
    );
    open.push(echo);
    const env = {
      HANGAR_T_KEY: SECRET_KEY,
      HANGAR_T_CS: CLIENT_SECRET,
      HANGAR_T_PW: PASSWORD,
      HANGAR_T_URL: echo.url,
      HANGAR_T_TOKEN_URL: tokenServer.url,
    };
    Object.assign(process.env, env);
    try {
      server = await startTestServer({
        files: {
          'endpoints/leaky.ts': `import { defineEndpoint, z } from 'hangar';
export default defineEndpoint({
  path: '/go',
  methods: ['GET', 'POST'],
  request: z.object({ q: z.string().optional() }),
  upstreams: [
    { name: 'key', base_url: '\${HANGAR_T_URL}', path: '/k?api_key=\${HANGAR_T_KEY}', retries: 0, auth: { type: 'API_KEY', api_key: '\${HANGAR_T_KEY}' } },
    { name: 'basic', base_url: '\${HANGAR_T_URL}', retries: 0, auth: { type: 'BASIC', username: 'u', password: '\${HANGAR_T_PW}' } },
    { name: 'oauth', base_url: '\${HANGAR_T_URL}', retries: 0, auth: { type: 'OAUTH2_CLIENT_CREDENTIALS', token_url: '\${HANGAR_T_TOKEN_URL}', client_id: 'app', client_secret: '\${HANGAR_T_CS}' } },
  ],
});
`,
        },
      });
      const texts: string[] = [];
      const grab = async (p: string, init?: RequestInit & { json?: unknown }) => {
        const res = await server!.request(p, init);
        res.headers.forEach((value, key) => texts.push(`${key}: ${value}`));
        texts.push(res.text);
        return res;
      };
      const failed = await grab('/api/v1/endpoints/leaky/go', { method: 'POST', json: {} });
      expect(failed.status).toBe(502);
      // The echo happened (so the test would catch a leak) and was redacted.
      expect(failed.body.detail).toContain('"key":"***"');
      expect(failed.body.detail).toContain('"got":"Basic ***"');
      expect(failed.body.detail).toContain('"got":"Bearer ***"');
      await grab('/api/v1/endpoints/leaky/go?q=1');
      await grab('/api/v1/endpoints/leaky/info');
      await grab('/api/v1/endpoints/leaky/health');
      await grab('/api/v1/endpoints');
      await grab('/openapi.json');
      await grab('/metrics');
      await grab('/api/v1/status');
      await server.close();
      const written = (await readAll(path.join(server.root, '.hangar'))) + server.logs.join('\n') + texts.join('\n');
      expect(server.logs.some((l) => l.includes('endpoint call failed'))).toBe(true);
      for (const secret of [SECRET_KEY, CLIENT_SECRET, PASSWORD, Buffer.from(`u:${PASSWORD}`).toString('base64'), 'tok-1']) {
        expect(written).not.toContain(secret);
      }
    } finally {
      for (const key of Object.keys(env)) delete process.env[key];
    }
  });
});

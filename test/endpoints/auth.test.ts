import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { TokenCache } from '../../core/endpoints/auth.js';
import { EndpointService } from '../../core/endpoints/service.js';
import { json, type Loopback, startLoopback, startTokenServer } from './loopback.js';

const open: Loopback[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((l) => l.close()));
});
async function track<T extends Loopback>(loopback: Promise<T>): Promise<T> {
  const l = await loopback;
  open.push(l);
  return l;
}

/** An upstream that answers 200 only when `check(headers)` accepts the credentials. */
function guarded(check: (h: Record<string, string | string[] | undefined>) => boolean) {
  return startLoopback((req, res) => (check(req.headers) ? json(res, 200, { ok: true }) : json(res, 401, { error: 'bad credentials' })));
}

/** A clock the tests move by hand, so expiry is checked without sleeping. */
const clock = { now: 1_000_000 };

function service(env: Record<string, string>, registry = new Registry()) {
  return new EndpointService({ metrics: registry, env: () => env, tokens: new TokenCache({ now: () => clock.now }) });
}

describe('upstream authentication', () => {
  it('API_KEY sends the key in X-API-Key with no prefix by default', async () => {
    const up = await track(guarded((h) => h['x-api-key'] === 'k-123'));
    const s = service({ KEY: 'k-123' });
    s.register({ name: 'e', upstreams: [{ name: 'a', base_url: up.url, auth: { type: 'API_KEY', api_key: '${KEY}' } }] });
    const result = await s.invoke('e', 'POST', {});
    expect(result.success).toBe(true);
    expect(up.received[0].headers['x-api-key']).toBe('k-123');
  });

  it('API_KEY honours header_name and header_prefix (a prefix is followed by one space)', async () => {
    const up = await track(guarded((h) => h.authorization === 'Token k-123'));
    const s = service({ KEY: 'k-123' });
    s.register({
      name: 'e',
      upstreams: [
        { name: 'a', base_url: up.url, auth: { type: 'API_KEY', api_key: '${KEY}', header_name: 'Authorization', header_prefix: 'Token' } },
      ],
    });
    expect((await s.invoke('e', 'POST', {})).success).toBe(true);
  });

  it('BEARER sends api_key as a bearer credential', async () => {
    const up = await track(guarded((h) => h.authorization === 'Bearer b-456'));
    const s = service({ TOKEN: 'b-456' });
    s.register({ name: 'e', upstreams: [{ name: 'a', base_url: up.url, auth: { type: 'BEARER', api_key: '${TOKEN}' } }] });
    expect((await s.invoke('e', 'POST', {})).success).toBe(true);
  });

  it('BASIC sends username and password as basic credentials', async () => {
    const expected = `Basic ${Buffer.from('alice:s3cr:et').toString('base64')}`;
    const up = await track(guarded((h) => h.authorization === expected));
    const s = service({ PASS: 's3cr:et' });
    s.register({
      name: 'e',
      upstreams: [{ name: 'a', base_url: up.url, auth: { type: 'BASIC', username: 'alice', password: '${PASS}' } }],
    });
    expect((await s.invoke('e', 'POST', {})).success).toBe(true);
  });

  it('wrong credentials fail that upstream with its status, not the process', async () => {
    const up = await track(guarded(() => false));
    const s = service({ TOKEN: 'nope-nope' });
    s.register({ name: 'e', upstreams: [{ name: 'a', base_url: up.url, auth: { type: 'BEARER', api_key: '${TOKEN}' } }] });
    await expect(s.invoke('e', 'POST', {})).rejects.toMatchObject({
      status: 502,
      upstreams: [{ name: 'a', ok: false, outcome: 'http_error', status: 401 }],
    });
  });
});

describe('OAUTH2_CLIENT_CREDENTIALS', () => {
  async function setup(
    options: { expiresIn?: number | null; leeway?: string | number; clientAuth?: 'basic' | 'body'; delayMs?: number } = {},
  ) {
    const tokens = await track(
      startTokenServer({ clientId: 'app', clientSecret: 'cs-789', expiresIn: options.expiresIn, delayMs: options.delayMs }),
    );
    // The API accepts only the most recently issued token, as a server that rotated would.
    const api = await track(
      startLoopback((req, res) => {
        const current = tokens.issued.at(-1);
        if (current && req.headers.authorization === `Bearer ${current}`) json(res, 200, { token: current });
        else json(res, 401, { error: 'invalid_token' });
      }),
    );
    const registry = new Registry();
    const s = service({ CLIENT_SECRET: 'cs-789', TOKEN_URL: `${tokens.url}/oauth/token` }, registry);
    s.register({
      name: 'e',
      upstreams: [
        {
          name: 'api',
          base_url: api.url,
          auth: {
            type: 'OAUTH2_CLIENT_CREDENTIALS',
            token_url: '${TOKEN_URL}',
            client_id: 'app',
            client_secret: '${CLIENT_SECRET}',
            scope: 'read write',
            audience: 'https://api.example',
            ...(options.leeway !== undefined ? { token_leeway: options.leeway } : {}),
            ...(options.clientAuth ? { client_auth: options.clientAuth } : {}),
          },
        },
      ],
    });
    return { tokens, api, s, registry };
  }

  it('fetches a token with the client credentials, scope and audience, and sends it as a bearer', async () => {
    const { tokens, s, api } = await setup();
    const result = await s.invoke('e', 'POST', {});
    expect(result).toMatchObject({ success: true, aggregated: { api: { token: 'tok-1' } } });
    const form = new URLSearchParams(tokens.received[0].body);
    expect(tokens.received[0].path).toBe('/oauth/token');
    expect(form.get('grant_type')).toBe('client_credentials');
    expect(form.get('scope')).toBe('read write');
    expect(form.get('audience')).toBe('https://api.example');
    // Default client authentication is HTTP Basic; the secret is not in the form.
    expect(tokens.received[0].headers.authorization).toBe(`Basic ${Buffer.from('app:cs-789').toString('base64')}`);
    expect(form.has('client_secret')).toBe(false);
    expect(api.received[0].headers.authorization).toBe('Bearer tok-1');
  });

  it("client_auth 'body' sends client_id and client_secret in the form", async () => {
    const { tokens, s } = await setup({ clientAuth: 'body' });
    await s.invoke('e', 'POST', {});
    const form = new URLSearchParams(tokens.received[0].body);
    expect(form.get('client_id')).toBe('app');
    expect(form.get('client_secret')).toBe('cs-789');
    expect(tokens.received[0].headers.authorization).toBeUndefined();
  });

  it('caches the token across calls until token_leeway before expiry', async () => {
    // expires_in 3 s with leeway 2.5 s → the leeway is capped at half the lifetime (1.5 s).
    const { tokens, s } = await setup({ expiresIn: 3, leeway: '2500ms' });
    await s.invoke('e', 'POST', {});
    clock.now += 1_400;
    await s.invoke('e', 'POST', {});
    expect(tokens.requests()).toBe(1);
    clock.now += 200; // 1.6 s after issue: inside the (capped) 1.5 s leeway before expiry
    await s.invoke('e', 'POST', {});
    expect(tokens.requests()).toBe(2);
  });

  it('refreshes a token inside the leeway window', async () => {
    const { tokens, s } = await setup({ expiresIn: 2, leeway: 1 });
    await s.invoke('e', 'POST', {});
    clock.now += 900;
    await s.invoke('e', 'POST', {});
    expect(tokens.issued).toEqual(['tok-1']);
    clock.now += 200; // 1.1 s: within 1 s of the 2 s expiry
    await s.invoke('e', 'POST', {});
    expect(tokens.issued).toEqual(['tok-1', 'tok-2']);
  });

  it('shares one token request between concurrent callers', async () => {
    const { tokens, s, registry } = await setup({ delayMs: 50 });
    const results = await Promise.all(Array.from({ length: 50 }, () => s.invoke('e', 'POST', {})));
    expect(results.every((r) => r.success)).toBe(true);
    expect(tokens.requests()).toBe(1);
    const metric = await registry.getSingleMetricAsString('platform_upstream_token_requests_total');
    expect(metric).toContain('platform_upstream_token_requests_total{endpoint="e",upstream="api",outcome="success"} 1');
  });

  it('refetches once when the upstream answers 401 to a cached token', async () => {
    const { tokens, s, api } = await setup();
    await s.invoke('e', 'POST', {});
    // The server rotates: tok-1 is now rejected although it has not expired.
    tokens.issued.push('rotated-elsewhere');
    const second = await s.invoke('e', 'POST', {});
    expect(second.success).toBe(true);
    // Our cache held tok-1 → 401 → one refetch (tok-3) → accepted.
    expect(tokens.requests()).toBe(2);
    expect(api.received.map((r) => r.headers.authorization)).toEqual(['Bearer tok-1', 'Bearer tok-1', 'Bearer tok-3']);
    expect(second.upstreams[0]).toMatchObject({ ok: true, attempts: 1 });
  });

  it('does not loop when the fresh token is rejected too: one refetch, then the 401 is reported', async () => {
    const tokens = await track(startTokenServer({ clientId: 'app', clientSecret: 'cs-789' }));
    const api = await track(startLoopback((_req, res) => json(res, 401, { error: 'invalid_token' })));
    const s = service({ CLIENT_SECRET: 'cs-789' });
    s.register({
      name: 'e',
      upstreams: [
        {
          name: 'api',
          base_url: api.url,
          auth: { type: 'OAUTH2_CLIENT_CREDENTIALS', token_url: tokens.url, client_id: 'app', client_secret: '${CLIENT_SECRET}' },
        },
      ],
    });
    await expect(s.invoke('e', 'POST', {})).rejects.toMatchObject({ status: 502, upstreams: [{ outcome: 'http_error', status: 401 }] });
    expect(tokens.requests()).toBe(2);
    expect(api.received).toHaveLength(2);
  });

  it('reports a rejected client as a failure of that upstream, naming the OAuth error but no secret', async () => {
    const tokens = await track(startTokenServer({ clientId: 'app', clientSecret: 'right-secret' }));
    const api = await track(startLoopback((_req, res) => json(res, 200, {})));
    const s = service({ CLIENT_SECRET: 'wrong-secret' });
    s.register({
      name: 'e',
      upstreams: [
        {
          name: 'api',
          base_url: api.url,
          auth: { type: 'OAUTH2_CLIENT_CREDENTIALS', token_url: tokens.url, client_id: 'app', client_secret: '${CLIENT_SECRET}' },
        },
      ],
    });
    const failure = await s.invoke('e', 'POST', {}).catch((e) => e);
    expect(failure.status).toBe(502);
    expect(failure.upstreams[0]).toMatchObject({ outcome: 'config_error', error: 'token request failed: HTTP 401 (invalid_client)' });
    expect(JSON.stringify(failure.toBody())).not.toContain('wrong-secret');
    expect(api.received).toHaveLength(0);
  });

  it('a token server that refuses connections is a retried network error of the upstream, not a config error', async () => {
    const gone = await startLoopback((_req, res) => json(res, 200, {}));
    const tokenUrl = `${gone.url}/token`;
    await gone.close(); // the port now refuses connections
    const api = await track(startLoopback((_req, res) => json(res, 200, {})));
    const s = service({ CLIENT_SECRET: 'secret' });
    s.register({
      name: 'e',
      upstreams: [
        {
          name: 'api',
          base_url: api.url,
          retries: 2,
          retry_backoff_ms: 1,
          auth: { type: 'OAUTH2_CLIENT_CREDENTIALS', token_url: tokenUrl, client_id: 'app', client_secret: '${CLIENT_SECRET}' },
        },
      ],
    });
    // POST is not retried against the upstream by default, but nothing reached it: the token is.
    const failure = await s.invoke('e', 'POST', {}).catch((e) => e);
    expect(failure.status).toBe(502);
    expect(failure.upstreams[0]).toMatchObject({ outcome: 'network_error', attempts: 3, status: null });
    expect(failure.upstreams[0].error).toMatch(/^token request failed: .*ECONNREFUSED.* \(after 3 attempts\)$/);
    expect(api.received).toHaveLength(0);
  });

  it('a token server that answers 503 once is retried, and the call then succeeds', async () => {
    let calls = 0;
    const tokens = await track(
      startLoopback((_req, res) =>
        ++calls === 1 ? json(res, 503, { error: 'busy' }) : json(res, 200, { access_token: 'fresh', expires_in: 3600 }),
      ),
    );
    const api = await track(guarded((h) => h.authorization === 'Bearer fresh'));
    const s = service({ CLIENT_SECRET: 'secret' });
    s.register({
      name: 'e',
      upstreams: [
        {
          name: 'api',
          base_url: api.url,
          retry_backoff_ms: 1,
          auth: { type: 'OAUTH2_CLIENT_CREDENTIALS', token_url: tokens.url, client_id: 'app', client_secret: '${CLIENT_SECRET}' },
        },
      ],
    });
    const result = await s.invoke('e', 'POST', {});
    expect(result.success).toBe(true);
    expect(result.upstreams[0]).toMatchObject({ outcome: 'success', attempts: 2 });
    expect(calls).toBe(2);
  });

  it('a token response without expires_in is cached (300 s default) rather than refetched per call', async () => {
    const { tokens, s } = await setup({ expiresIn: null });
    await s.invoke('e', 'POST', {});
    await s.invoke('e', 'POST', {});
    expect(tokens.requests()).toBe(1);
  });

  it('keeps separate tokens for separate credentials', async () => {
    const tokens = await track(startTokenServer({ clientId: 'app', clientSecret: 'cs' }));
    const cache = new TokenCache();
    const base = {
      type: 'OAUTH2_CLIENT_CREDENTIALS' as const,
      token_url: tokens.url,
      client_id: 'app',
      client_secret: 'cs',
      token_leeway: 30_000,
      client_auth: 'basic' as const,
    };
    const a = await cache.get({ ...base, scope: 'a' });
    const b = await cache.get({ ...base, scope: 'b' });
    expect(await cache.get({ ...base, scope: 'a' })).toBe(a);
    expect(a).not.toBe(b);
    expect(tokens.requests()).toBe(2);
  });
});

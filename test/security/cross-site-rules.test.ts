/**
 * The rules of core/http/cross-site.ts at their edges (#30), each with the near miss that a
 * plausible wrong rule answers differently: a content type with parameters, with a `;` first, in
 * another case or padded; a body sent chunked (no Content-Length) on a GET; a route with and without
 * `config.bodyTypes`, and no route at all; HEAD and OPTIONS from another origin; `Sec-Fetch-Site:
 * none` without an Origin; which refusal (code and the value it names) each case gets; an absent,
 * empty or unparseable Host; and the verdict cache past its cap.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBSYSTEMS } from '../../core/app/subsystems.js';
import { mediaTypeOf, originChecker } from '../../core/http/cross-site.js';
import type { Subsystem } from '../../core/kernel/context.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { rawRequest } from './raw.js';

/** Two routes that only answer what reached them: one takes CSV besides JSON, one only JSON. */
const probe: Subsystem = {
  name: 'cross-site-rules-test',
  routes(app) {
    app.post('/api/test/csv', { config: { bodyTypes: ['text/csv'] } }, async (req) => ({ got: String(req.body) }));
    app.post('/api/test/json', async () => ({ ok: true }));
    app.get('/api/test/json', async () => ({ ok: true }));
  },
};

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ settings: { watch: false } as never, start: { subsystems: [...SUBSYSTEMS, probe] } });
});
afterAll(() => server?.stop());

const send = (method: string, target: string, headers: Record<string, string> = {}, body?: string) =>
  rawRequest(server.port, method, target, headers, body);

describe('the media type of a Content-Type header', () => {
  it('is what comes before the first `;`, trimmed and lower-cased', () => {
    expect(mediaTypeOf('application/json')).toBe('application/json');
    expect(mediaTypeOf('application/json; charset=utf-8')).toBe('application/json');
    // Padding and case are the sender's spelling, not another type.
    expect(mediaTypeOf(' Application/JSON ; charset=utf-8')).toBe('application/json');
    // A `;` at position 0: the parameters are there but the type is not.
    expect(mediaTypeOf(';charset=utf-8')).toBe('');
  });
});

describe('a request body must be JSON unless the route lists its type', () => {
  it('accepts JSON with parameters, padded or in capitals', async () => {
    for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON ; charset=utf-8']) {
      const res = await send('POST', '/api/test/json', { 'content-type': type }, '{}');
      expect([type, res.status]).toEqual([type, 200]);
    }
  });

  it('a body without a type is refused as missing one; a declared other type is refused by name', async () => {
    const none = await send('POST', '/api/test/json', {}, '{}');
    expect([none.status, none.body.code]).toEqual([415, 'HANGAR_HTTP_MEDIA_TYPE_MISSING']);
    const plain = await send('POST', '/api/test/json', { 'content-type': 'text/plain; charset=utf-8' }, '{}');
    expect([plain.status, plain.body.code]).toEqual([415, 'HANGAR_HTTP_MEDIA_TYPE']);
    // The refusal names the type it refused, without its parameters, so the sender knows what to fix.
    expect(plain.body.detail).toContain('content type text/plain is not accepted');
    // Only parameters, no type: as good as no type at all.
    const bare = await send('POST', '/api/test/json', { 'content-type': ';charset=utf-8' }, '{}');
    expect([bare.status, bare.body.code]).toEqual([415, 'HANGAR_HTTP_MEDIA_TYPE_MISSING']);
  });

  it('a body sent chunked, with no Content-Length, is a body too, even on a GET', async () => {
    // Node's client sends `Transfer-Encoding: chunked` and an empty chunked body when asked to.
    const chunked = await send('GET', '/api/test/json', { 'transfer-encoding': 'chunked' });
    expect([chunked.status, chunked.body.code]).toEqual([415, 'HANGAR_HTTP_MEDIA_TYPE_MISSING']);
    const typed = await send('GET', '/api/test/json', { 'transfer-encoding': 'chunked', 'content-type': 'text/plain' });
    expect([typed.status, typed.body.code]).toEqual([415, 'HANGAR_HTTP_MEDIA_TYPE']);
    // The same GET without a body needs no type.
    expect((await send('GET', '/api/test/json')).status).toBe(200);
  });

  it('config.bodyTypes opens its route to its types only, and a request matching no route is still checked', async () => {
    const csv = await send('POST', '/api/test/csv', { 'content-type': 'text/csv; charset=utf-8' }, 'a,b');
    expect([csv.status, csv.body]).toEqual([200, { got: 'a,b' }]);
    const csvElsewhere = await send('POST', '/api/test/json', { 'content-type': 'text/csv' }, 'a,b');
    expect([csvElsewhere.status, csvElsewhere.body.code]).toEqual([415, 'HANGAR_HTTP_MEDIA_TYPE']);
    // No route, so no route config: refused for its type (415), not a crash reading the config.
    const nowhere = await send('POST', '/api/test/nowhere', { 'content-type': 'text/plain' }, 'x');
    expect([nowhere.status, nowhere.body.code]).toEqual([415, 'HANGAR_HTTP_MEDIA_TYPE']);
  });
});

describe('a state-changing request from a browser must come from this server', () => {
  const foreign = 'http://evil.example';

  it('HEAD and OPTIONS change nothing, so another origin may send them', async () => {
    // HEAD of a GET route answers as the GET would; another origin's page learns nothing from it.
    expect((await send('HEAD', '/api/test/json', { origin: foreign, 'sec-fetch-site': 'cross-site' })).status).toBe(200);
    // No route answers OPTIONS (Hangar grants no preflight): 404, not the cross-site 403 or a 415.
    const options = await send('OPTIONS', '/api/test/json', {
      origin: foreign,
      'sec-fetch-site': 'cross-site',
      'content-type': 'text/plain',
    });
    expect(options.status).toBe(404);
    // The same origin's POST is refused, so the two above passed for their method alone.
    expect((await send('POST', '/api/test/json', { origin: foreign })).status).toBe(403);
  });

  it('Sec-Fetch-Site: none (typed into the address bar) passes without an Origin, as same-origin does', async () => {
    expect((await send('POST', '/api/test/json', { 'sec-fetch-site': 'none' })).status).toBe(200);
    expect((await send('POST', '/api/test/json', { 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    const sameSite = await send('POST', '/api/test/json', { 'sec-fetch-site': 'same-site' });
    expect([sameSite.status, sameSite.body.code]).toEqual([403, 'HANGAR_HTTP_CROSS_SITE']);
  });

  it('a foreign Origin is refused naming the origin; a cross-site request with no Origin naming Sec-Fetch-Site', async () => {
    const origin = await send('POST', '/api/test/json', { origin: foreign });
    expect([origin.status, origin.body.code]).toEqual([403, 'HANGAR_HTTP_CROSS_ORIGIN']);
    expect(origin.body.detail).toContain(`origin ${foreign} is not this server's`);
    // `Origin: null` (a sandboxed frame, a file: page) is nobody's origin, and named as sent.
    const nullOrigin = await send('POST', '/api/test/json', { origin: 'null', 'sec-fetch-site': 'cross-site' });
    expect([nullOrigin.status, nullOrigin.body.code]).toEqual([403, 'HANGAR_HTTP_CROSS_ORIGIN']);
    expect(nullOrigin.body.detail).toContain('origin null is not');
    const site = await send('POST', '/api/test/json', { 'sec-fetch-site': 'cross-site' });
    expect([site.status, site.body.code]).toEqual([403, 'HANGAR_HTTP_CROSS_SITE']);
    expect(site.body.detail).toContain('(Sec-Fetch-Site: cross-site)');
    // Neither header: not a browser (curl, a script), so it passes.
    expect((await send('POST', '/api/test/json')).status).toBe(200);
  });
});

describe('whether an Origin is the server’s own', () => {
  it('depends on the Host it came with: the same Origin is ours under one Host and not under another', () => {
    const isAllowed = originChecker({ allowedOrigins: [] });
    expect(isAllowed('http://a.test:1', 'a.test:1')).toBe(true);
    // Asked second, so an answer remembered for the Origin alone would say true.
    expect(isAllowed('http://a.test:1', 'b.test:1')).toBe(false);
    expect(isAllowed('http://a.test:1', 'a.test:1')).toBe(true);
  });

  it('without a usable Host only allowedOrigins count: absent, empty or not a host name', () => {
    const isAllowed = originChecker({ allowedOrigins: ['http://localhost:5173'] });
    // `http://${undefined}` would parse as the host "undefined": an absent Host must not become one.
    expect(isAllowed('http://undefined', undefined)).toBe(false);
    expect(isAllowed('http://undefined', '')).toBe(false);
    // A Host that is no URL's host is refused, not thrown on.
    expect(isAllowed('http://bad host', 'bad host')).toBe(false);
    expect(isAllowed('http://localhost:5173', undefined)).toBe(true);
    expect(isAllowed('http://localhost:5173', 'bad host')).toBe(true);
  });

  it('keeps answering right past the cap of its verdict cache', () => {
    const isAllowed = originChecker({ allowedOrigins: [] });
    // 1,000 distinct hosts fill the cache; the ones after are judged without being remembered.
    for (let i = 0; i < 1000; i++) expect(isAllowed(`http://h${i}.test`, `h${i}.test`)).toBe(true);
    expect(isAllowed('http://h1000.test', 'h1000.test')).toBe(true);
    expect(isAllowed('http://h1.test', 'h1000.test')).toBe(false);
    expect(isAllowed('http://h1000.test', 'h1.test')).toBe(false);
    expect(isAllowed('http://h1.test', 'h1.test')).toBe(true);
  });
});

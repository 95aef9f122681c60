/**
 * Issue #18: a fuzz pass over every route `/openapi.json` lists — malformed JSON, wrong content
 * types, deep nesting, huge strings, control characters, junk parameters and encoded paths.
 * Every answer must be below 500, and every 4xx must be `{detail}` (or, on the JSON-RPC routes MCP
 * and A2A, the protocol's own error object). A fixed seed and a bounded
 * number of cases per route keep it repeatable and under half a minute.
 *
 * Decision: two 5xx answers are configuration, not crashes, and are allowed when they say so: 503
 * from a route that needs a chat model none is configured for, and 501 from a subsystem switched
 * off. Everything else at 5xx fails the test with the route and the case that caused it.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../../core/kernel/seeded-random.js';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';
import { rawRequest } from './raw.js';

const SEED = 0x18_2026;
const CASES_PER_ROUTE = 14;

type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  $ref?: string;
};

let server: TestServer;
let session: string;
let openapi: {
  paths: Record<
    string,
    Record<string, { parameters?: Array<{ name: string; in: string }>; requestBody?: { content: Record<string, { schema: Schema }> } }>
  >;
};
const random = seededRandom(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const CONTROL = ['\u0000', '\u0001', '\n', '\r\nX-Injected: 1', '\u001b[31m', '\u007f'];
const JUNK_STRINGS = [
  '',
  ' ',
  '..',
  '../../etc/passwd',
  '%00',
  '\u202e',
  '😀'.repeat(50),
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '${HOME}',
  'x'.repeat(5000),
];

function junkValue(depth = 0): unknown {
  const r = random();
  if (depth > 3 || r < 0.3) return pick([null, true, false, 0, -1, 1e308, -0.5, 2 ** 53 + 1, pick(JUNK_STRINGS), `id${pick(CONTROL)}x`]);
  if (r < 0.6) return Array.from({ length: Math.floor(random() * 4) }, () => junkValue(depth + 1));
  return Object.fromEntries(
    Array.from({ length: Math.floor(random() * 4) }, (_, i) => [
      pick(['query', 'id', 'thread_id', 'input', 'request', '__proto__', 'constructor', `k${i}`]),
      junkValue(depth + 1),
    ]),
  );
}

/** A value shaped like the schema, so mutations reach past the first validation. */
function sample(schema: Schema | undefined, depth = 0): unknown {
  if (!schema || depth > 4) return 'x';
  if (schema.enum?.length) return schema.enum[0];
  const variant = schema.anyOf?.[0] ?? schema.oneOf?.[0];
  if (variant) return sample(variant, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, sample(v, depth + 1)]));
    case 'array':
      return [sample(schema.items, depth + 1)];
    case 'string':
      return 'x';
    case 'integer':
    case 'number':
      return 1;
    case 'boolean':
      return false;
    default:
      return {};
  }
}

function nested(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

/** Replace one string field of `value` (or the whole of it) with `replacement`. */
function mutateString(value: unknown, replacement: unknown): unknown {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const keys = Object.keys(value);
    if (keys.length) return { ...value, [pick(keys)]: replacement };
  }
  return { value: replacement };
}

interface Case {
  name: string;
  target: string;
  headers: Record<string, string>;
  body?: string;
}

function cases(route: string, method: string, _params: Array<{ name: string; in: string }>, bodySchema: Schema | undefined): Case[] {
  const paramValue = (name: string) => ({ agent: 'echo', nb: 'n.nb.ts', name: 'echo', resource: 'agents' })[name] ?? 'x';
  const fill = (value: (name: string) => string) => route.replace(/\{([^}]+)\}/g, (_, name: string) => value(name));
  const base = fill((n) => encodeURIComponent(paramValue(n)));
  const json = { 'content-type': 'application/json' };
  const valid = sample(bodySchema);
  const all: Case[] = [
    {
      name: 'malformed JSON',
      target: base,
      headers: json,
      body: pick(['{"a":', '{bad', '[1,2', '{"a":1}}', 'nul', '\u0000', '{"a":"\\ud800"}']),
    },
    { name: 'text/plain body', target: base, headers: { 'content-type': 'text/plain' }, body: JSON.stringify(valid) },
    { name: 'form body', target: base, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1&query=x' },
    {
      name: 'multipart body',
      target: base,
      headers: { 'content-type': 'multipart/form-data; boundary=z' },
      body: '--z\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--z--\r\n',
    },
    { name: 'no content type', target: base, headers: {}, body: JSON.stringify(valid) },
    { name: 'deep arrays', target: base, headers: json, body: nested(1000 + Math.floor(random() * 20_000), 'array') },
    { name: 'deep objects', target: base, headers: json, body: nested(1000 + Math.floor(random() * 20_000), 'object') },
    {
      name: 'deep value in a field',
      target: base,
      headers: json,
      body: JSON.stringify(mutateString(valid, JSON.parse(nested(3000, 'array')))),
    },
    { name: 'huge string', target: base, headers: json, body: JSON.stringify(mutateString(valid, 'y'.repeat(900_000))) },
    { name: 'control characters', target: base, headers: json, body: JSON.stringify(mutateString(valid, `a${pick(CONTROL)}b`)) },
    { name: 'junk JSON', target: base, headers: json, body: JSON.stringify(junkValue()) },
    {
      name: 'junk parameters',
      target:
        fill(() => encodeURIComponent(pick(JUNK_STRINGS)) || '%20') +
        `?${pick(['repo', 'since', 'limit', 'format', 'user_id', 'query', 'session'])}=${encodeURIComponent(pick([...JUNK_STRINGS, ...CONTROL]))}`,
      headers: {},
    },
    { name: 'encoded control in path', target: fill(() => pick(['%00', 'a%0Ab', '%7F', '%1b'])), headers: {} },
    { name: 'broken percent-encoding', target: `${base}${pick(['%', '%zz', '%C3%28', '%E0%80'])}`, headers: {} },
    {
      name: 'encoded and dotted path',
      target: base
        .replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`)
        .replace('/api', pick(['/./api', '//api', '/x/../api', '/%2e/api'])),
      headers: {},
    },
    { name: 'overlong parameter', target: fill(() => 'p'.repeat(600)), headers: {} },
  ];
  const hasBody = !['get', 'head', 'delete'].includes(method);
  const chosen = all.filter((c) => hasBody || c.body === undefined || c.name === 'text/plain body');
  // Bounded: a fixed number of cases per route, picked by the seed.
  while (chosen.length > CASES_PER_ROUTE) chosen.splice(Math.floor(random() * chosen.length), 1);
  return chosen;
}

/** MCP and A2A speak JSON-RPC: their refusals are the protocol's `{jsonrpc, error: {code, message}}`, which their clients read. */
function isJsonRpcError(body: unknown): boolean {
  const b = body as { jsonrpc?: unknown; error?: { message?: unknown } } | undefined;
  return b?.jsonrpc === '2.0' && typeof b.error?.message === 'string' && b.error.message !== '';
}

/** Answers that are configuration, not failures (see the decision above). */
function isConfigurationAnswer(status: number, detail: unknown): boolean {
  return (
    (status === 503 && /needs a chat model|model.baseUrl/.test(String(detail))) ||
    (status === 501 && /disabled|not enabled|off/.test(String(detail)))
  );
}

beforeAll(async () => {
  server = await startTestServer({
    settings: { control: { enabled: true, token: 'fuzz-control' }, logs: { enabled: true }, watch: false } as never,
    files: {
      'agents/echo.ts': agentSource(`{ run: async (i) => String(i.query).slice(0, 20) }`),
      'notebooks/n.nb.ts': '// %% [code] id=a0000001\n1 + 1\n',
      'pipelines/p.json': JSON.stringify({ steps: [{ id: 'a', agent: 'echo', input: { query: '$.input.query' } }] }),
    },
  });
  session = JSON.parse(await readFile(path.join(server.root, '.hangar', 'code-session.json'), 'utf8')).token;
  await eventually(async () => (await server.request('/api/v1/echo/health')).status === 200);
  openapi = (await server.request('/openapi.json')).body;
}, 30_000);
afterAll(async () => server?.stop());

describe('fuzz over /openapi.json', () => {
  it('answers every malformed request below 500, and every 4xx with {detail}', async () => {
    const routes = Object.entries(openapi.paths).flatMap(([route, methods]) =>
      Object.entries(methods).map(([method, op]) => ({
        route,
        method,
        params: op.parameters ?? [],
        body: op.requestBody?.content['application/json']?.schema,
      })),
    );
    expect(routes.length).toBeGreaterThan(50);
    const failures: string[] = [];
    let sent = 0;
    for (const { route, method, params, body } of routes) {
      for (const c of cases(route, method, params, body)) {
        const headers = { ...c.headers, 'x-hangar-session': session, 'x-control-token': 'fuzz-control' };
        let res: Awaited<ReturnType<typeof rawRequest>>;
        try {
          res = await rawRequest(server.port, method.toUpperCase(), c.target, headers, c.body);
        } catch (err) {
          failures.push(`${method.toUpperCase()} ${route} [${c.name}] → ${(err as Error).message}`);
          continue;
        }
        sent += 1;
        const detail = res.body?.detail;
        if (res.status >= 500 && !isConfigurationAnswer(res.status, detail))
          failures.push(`${method.toUpperCase()} ${route} [${c.name}] → ${res.status} ${res.text.slice(0, 160)}`);
        else if (
          res.status >= 400 &&
          res.status < 500 &&
          (detail === undefined || detail === null || detail === '') &&
          !isJsonRpcError(res.body)
        )
          failures.push(`${method.toUpperCase()} ${route} [${c.name}] → ${res.status} without {detail}: ${res.text.slice(0, 160)}`);
        // A fuzz case may be a valid call that changes server state; keep the rest meaningful.
        if (route.startsWith('/api/v1/control/')) {
          await server.request('/api/v1/control/maintenance', {
            method: 'POST',
            json: { enabled: false },
            headers: { 'x-control-token': 'fuzz-control' },
          });
          await server.request('/api/v1/control/rate-limit', {
            method: 'POST',
            json: { enabled: false },
            headers: { 'x-control-token': 'fuzz-control' },
          });
        }
      }
    }
    expect(failures).toEqual([]);
    expect(sent).toBeGreaterThan(routes.length * 5);
  }, 90_000);
});

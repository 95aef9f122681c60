import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactSettings, SettingsSchema } from '../../core/kernel/settings.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';

let postgres: TestPostgres;
const servers: TestServer[] = [];
beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);
afterAll(async () => {
  for (const server of servers) await server.stop();
  await postgres?.stop();
});

const files = { 'agents/echo.ts': agentSource(`{ run: async (input) => 'echo: ' + input.query }`) };

async function start(url: string, extra: Record<string, unknown> = {}): Promise<TestServer> {
  const server = await startTestServer({ files, settings: { watch: false, storage: { url }, ...extra } as never });
  servers.push(server);
  return server;
}

describe('a Hangar server on PostgreSQL (storage.url)', () => {
  it('two servers on one database: a thread and its chat written on one are read on the other', async () => {
    const url = await postgres.database();
    process.env.HANGAR_TEST_PG_URL = url;
    const a = await start('${HANGAR_TEST_PG_URL}');
    const b = await start(url);
    expect((await a.request('/api/v1/echo/threads', { method: 'POST', json: { thread_id: 'shared', title: 'Team' } })).status).toBe(200);
    const chat = await a.request('/api/v1/echo/chat', { method: 'POST', json: { thread_id: 'shared', content: 'hello' } });
    expect(chat.status).toBe(200);
    expect((await b.request('/api/v1/echo/threads/shared')).body).toMatchObject({ id: 'shared', title: 'Team' });
    const messages = (await b.request('/api/v1/echo/threads/shared/messages')).body;
    expect(messages.total).toBe(2);
    expect(messages.messages.map((m: { content: string }) => m.content)).toEqual(['hello', 'echo: hello']);

    const stats = (await b.request('/api/v1/storage/stats')).body;
    expect(stats.backend).toBe('postgres');
    expect(stats.path).not.toContain('hangar-test');
    const status = (await b.request('/api/v1/status')).body;
    expect(status.store).toMatchObject({ backend: 'postgres', writable: true });
    expect(status.store.path).toMatch(/^postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\//);
  });

  it("a principal's rate limit counts its requests on every instance", async () => {
    const url = await postgres.database();
    const limit = { rateLimit: { enabled: true, max: 5, windowMs: 60_000 } };
    const a = await start(url, limit);
    const b = await start(url, limit);
    const statuses: number[] = [];
    for (const server of [a, b, a, b, a, b]) statuses.push((await server.request('/api/v1/echo/threads')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const refused = await a.request('/api/v1/echo/threads');
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('HANGAR_RATE_LIMITED');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('a database that cannot be reached stops start-up with its coded reason; a URL that is not PostgreSQL is refused', async () => {
    await expect(start('postgres://nobody:pw@127.0.0.1:1/none')).rejects.toMatchObject({ code: 'HANGAR_STORAGE_UNREACHABLE' });
    await expect(start('mysql://x@y/z')).rejects.toThrow('storage.url must be a postgres:// or postgresql:// URL');
    await expect(start('${HANGAR_TEST_UNSET_VARIABLE}')).rejects.toThrow('environment variable HANGAR_TEST_UNSET_VARIABLE is not set');
  });

  it('settings as shown keep an ${ENV} reference and hide a written password', () => {
    const shown = (url: string) => (redactSettings(SettingsSchema.parse({ root: '/w', storage: { url } })).storage as { url: string }).url;
    expect(shown('${DATABASE_URL}')).toBe('${DATABASE_URL}');
    expect(shown('postgres://team:s3cret@db.internal:5432/hangar')).toBe('postgres://team:***@db.internal:5432/hangar');
  });
});

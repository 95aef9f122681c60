import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { damagedWorkspace } from '../support/damaged-store.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * A workspace whose database file was damaged while Hangar was stopped: the server still starts,
 * the file is kept beside a new one, and the log, /api/v1/status and the status view say so.
 */
let server: TestServer | undefined;
afterEach(async () => server?.stop());

describe('a damaged store at start', () => {
  it('starts on an empty store, keeps the damaged file, and says so in the log and /api/v1/status', async () => {
    const root = await damagedWorkspace();
    server = await startTestServer({ root, settings: { watch: false } });
    expect(server.logs.join('\n')).toMatch(
      /store: hangar\.db is damaged \(.+\); moved it to hangar\.db\.damaged-.+ and started an empty store/,
    );
    const status = (await server.request('/api/v1/status')).body;
    expect(status.status).toBe('degraded');
    expect(status.store).toMatchObject({
      backend: 'sqlite',
      path: path.join('.hangar', 'hangar.db'),
      writable: true,
      recovered: { moved_to: expect.stringMatching(/^\.hangar\/hangar\.db\.damaged-\d{4}-/), problem: expect.any(String) },
    });
    // Writes work on the new store; readiness is fine (the store can write).
    expect((await server.request('/readiness')).status).toBe(200);
    await server.ctx.store.collection('notes').put('n1', { text: 'written after the recovery' });
    expect(await server.ctx.store.collection('notes').get('n1')).toEqual({ text: 'written after the recovery' });
  });

  it('a sound store is reported plainly', async () => {
    server = await startTestServer({ settings: { watch: false } });
    const status = (await server.request('/api/v1/status')).body;
    expect(status.store).toEqual({ backend: 'sqlite', path: path.join('.hangar', 'hangar.db'), writable: true });
    expect(status.status).not.toBe('degraded');
  });
});

import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { eventually, makeWorkspace, startTestServer } from '../support/server.js';

const NOTEBOOK = { name: 'nightly', cells: [{ source: 'const total = 40 + 2;' }, { source: 'total' }] };

describe('schedule routes (real clock)', () => {
  it('schedules a notebook, runs it, lists history, pauses and deletes; the schedule survives a restart', async () => {
    const root = await makeWorkspace();
    const first = await startTestServer({ root });
    let second: Awaited<ReturnType<typeof startTestServer>> | undefined;
    try {
      expect((await first.request('/api/notebooks', { method: 'POST', json: NOTEBOOK })).status).toBe(201);
      const bad = await first.request('/api/notebooks/nightly.nb.ts/schedules', { method: 'POST', json: { cron: 'every tuesday' } });
      expect(bad.status).toBe(422);
      expect(bad.body.detail).toMatch(/^invalid cron expression "every tuesday": .+/);
      expect((await first.request('/api/notebooks/ghost.nb.ts/schedules', { method: 'POST', json: { cron: '* * * * *' } })).status).toBe(
        404,
      );
      const zone = await first.request('/api/notebooks/nightly.nb.ts/schedules', {
        method: 'POST',
        json: { cron: '0 3 * * *', timezone: 'Nowhere/Land' },
      });
      expect(zone.status).toBe(422);
      expect(zone.body.detail).toMatch(/^invalid timezone "Nowhere\/Land"/);
      expect((await first.request('/api/notebooks/nightly.nb.ts/schedules', { method: 'POST', json: {} })).body.detail).toMatch(
        /body\.cron/,
      );
      for (const path of ['/api/schedules/nope/pause', '/api/schedules/nope/resume']) {
        expect((await first.request(path, { method: 'POST' })).status).toBe(404);
      }
      expect((await first.request('/api/schedules/nope', { method: 'DELETE' })).status).toBe(404);

      // Every second (croner's optional seconds field), so the test sees real runs quickly.
      const created = await first.request('/api/notebooks/nightly.nb.ts/schedules', {
        method: 'POST',
        json: { cron: '* * * * * *', timezone: 'UTC', name: 'tick' },
      });
      expect(created.status, created.text).toBe(201);
      const id = created.body.id;
      expect(Date.parse(created.body.next_run_at) - Date.now()).toBeLessThanOrEqual(1000);
      const runs = await eventually(async () => {
        const res = await first.request(`/api/schedules/${id}/runs`);
        return res.body.runs.some((r: { status: string }) => r.status === 'success') ? res.body.runs : undefined;
      }, 15_000);
      const ok = runs.find((r: { status: string }) => r.status === 'success');
      expect(ok.cells[1].outputs[0].data['text/plain']).toBe('42');
      expect((await first.request('/api/schedules')).body.schedules.map((s: { id: string }) => s.id)).toEqual([id]);
      expect((await first.request('/api/notebooks/nightly.nb.ts/schedules')).body.schedules).toHaveLength(1);

      const paused = await first.request(`/api/schedules/${id}/pause`, { method: 'POST' });
      expect(paused.body).toMatchObject({ paused: true, next_run_at: null });
      await first.stop();

      second = await startTestServer({ root });
      const kept = await second.request(`/api/schedules/${id}`);
      expect(kept.status).toBe(200);
      expect(kept.body).toMatchObject({ cron: '* * * * * *', timezone: 'UTC', name: 'tick', paused: true });
      const before = (await second.request(`/api/schedules/${id}/runs?limit=1000`)).body.runs.length;
      expect(before).toBeGreaterThan(0);
      expect((await second.request(`/api/schedules/${id}/resume`, { method: 'POST' })).body.paused).toBe(false);
      await eventually(async () => (await second!.request(`/api/schedules/${id}/runs?limit=1000`)).body.runs.length > before, 15_000);

      expect((await second.request(`/api/schedules/${id}`, { method: 'DELETE' })).status).toBe(204);
      expect((await second.request(`/api/schedules/${id}`)).status).toBe(404);
      expect((await second.request(`/api/schedules/${id}/runs`)).status).toBe(404);
    } finally {
      await second?.stop();
      await first.stop().catch(() => undefined);
      await rm(root, { recursive: true, force: true });
    }
  }, 60_000);
});

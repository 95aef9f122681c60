import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';

describe('feedback routes against the real server', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      files: { 'agents/echo.ts': agentSource(`{ run: async (i) => i.query }`), 'agents/other.ts': agentSource(`{ run: async () => '' }`) },
      settings: { watch: false },
    });
  });
  afterAll(() => server?.stop());

  const post = (agent: string, json: unknown) => server.request(`/api/v1/${agent}/feedback`, { method: 'POST', json });

  it('records feedback with the spec defaults and lists it newest first with a limit', async () => {
    const first = await post('echo', { rating: 5, feedback_type: 'rating', query: 'q1', response: 'r1' });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ status: 'recorded', feedback_id: expect.any(String) });
    await post('echo', { comment: 'line one\nline two "quoted"', feedback_type: 'comment' });
    await post('echo', {});
    await post('other', { rating: 1 });

    const list = await server.request('/api/v1/echo/feedback');
    expect(list.body.count).toBe(3);
    expect(list.body.feedback[2]).toMatchObject({ id: first.body.feedback_id, rating: 5, query: 'q1', agent: 'echo' });
    expect(list.body.feedback[0]).toMatchObject({
      user_id: 'anonymous',
      feedback_type: 'thumbs',
      rating: null,
      comment: null,
      correction: null,
      query: '',
      response: '',
      thread_id: null,
      metadata: {},
    });
    expect((await server.request('/api/v1/echo/feedback?limit=1')).body.count).toBe(1);
    expect((await server.request('/api/v1/echo/feedback?limit=0')).status).toBe(422);
  });

  it('validates rating 1-5 and the feedback_type enum with 422 naming the field', async () => {
    for (const rating of [0, 6, 2.5]) {
      const r = await post('echo', { rating });
      expect(r.status).toBe(422);
      expect(r.body.detail).toMatch(/body\.rating/);
    }
    const t = await post('echo', { feedback_type: 'stars' });
    expect(t.status).toBe(422);
    expect(t.body.detail).toMatch(/body\.feedback_type/);
    expect((await post('ghost', {})).status).toBe(404);
  });

  it("exports the agent's feedback as valid JSON Lines, one record per line", async () => {
    const { body } = await server.request('/api/v1/echo/feedback/export');
    expect(body).toMatchObject({ agent: 'echo', format: 'jsonl', count: 3 });
    const lines = body.data.split('\n').filter((l: string) => l.length > 0);
    expect(lines).toHaveLength(3);
    const records = lines.map((l: string) => JSON.parse(l));
    expect(records.every((r: { agent: string }) => r.agent === 'echo')).toBe(true);
    expect(records.map((r: { comment: string | null }) => r.comment)).toContain('line one\nline two "quoted"');
    const empty = await server.request('/api/v1/other/feedback/export');
    expect(empty.body).toMatchObject({ count: 1 });
  });
});

/**
 * Algorithm match compares every candidate with the constant baseline (#23): a model that scores
 * no better than always predicting the largest class carries a warning and ranks below any that
 * beats it, instead of being recommended first.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { notebookWith } from './helpers.js';

let server: TestServer;

/** 300 rows whose label is 90% "ok" and unrelated to the (random) features. */
const NOISE = `
const noise = (() => {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const rows = [];
  for (let i = 0; i < 300; i++) rows.push({ a: rand(), b: rand(), label: i % 10 === 0 ? 'fault' : 'ok' });
  return rows;
})();
`;

beforeAll(async () => {
  server = await startTestServer();
  await notebookWith(server, 'noise', [NOISE]);
}, 60_000);

afterAll(async () => {
  await server.stop();
});

describe('algorithm match against the baseline', () => {
  it('warns on every candidate that does not beat always predicting the largest class', async () => {
    const res = await server.request('/api/algorithm-match/noise?target=label');
    expect(res.status, res.text).toBe(200);
    const body = res.body as {
      data_characteristics: { baseline_accuracy: number };
      recommendations: Array<{
        name: string;
        score: number;
        baseline: number;
        beats_baseline: boolean;
        warning?: string;
        reasons: string[];
      }>;
    };
    expect(body.data_characteristics.baseline_accuracy).toBeCloseTo(0.9);
    for (const r of body.recommendations) {
      expect(r.baseline).toBeCloseTo(0.9);
      expect(r.beats_baseline).toBe(r.score > 0.91);
      if (!r.beats_baseline) {
        expect(r.warning).toMatch(/no better than the baseline/);
        expect(r.reasons[0]).toMatch(/^warning: /);
      }
    }
    expect(body.recommendations.some((r) => !r.beats_baseline)).toBe(true);
    // Every candidate that beats the baseline ranks above every one that does not.
    const flags = body.recommendations.map((r) => r.beats_baseline);
    expect(flags).toEqual([...flags].sort((x, y) => Number(y) - Number(x)));
  });
});

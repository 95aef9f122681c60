import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { notebookWith, resultText, runCell } from './helpers.js';

let server: TestServer;
let nb = '';

/** Three data sets with a known answer: classes, a linear-ish number, and three blobs without a target. */
const DATA = `
const data = (() => {
  let seed = 11;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const normal = () => Math.sqrt(-2 * Math.log(rand() + 1e-12)) * Math.cos(2 * Math.PI * rand());
  const flowers = [];
  const houses = [];
  const blobs = [];
  const kinds = ['setosa', 'versicolor', 'virginica'];
  for (let i = 0; i < 300; i++) {
    const k = i % 3;
    flowers.push({ petal: 1 + 2 * k + 0.4 * normal(), sepal: 5 + k + 0.5 * normal(), colour: ['white', 'blue'][i % 2], species: kinds[k] });
    const size = 50 + 150 * rand();
    const rooms = 1 + Math.floor(rand() * 6);
    houses.push({ size, rooms, district: ['north', 'south', 'east'][i % 3], price: 3000 * size + 20000 * rooms + (i % 3) * 50000 + 10000 * normal() });
    blobs.push({ x: [0, 10, 20][k] + normal(), y: [0, 10, 0][k] + normal() });
  }
  return { flowers, houses, blobs };
})();
`;

beforeAll(async () => {
  server = await startTestServer();
  nb = await notebookWith(server, 'algo', [DATA, 'const { flowers, houses, blobs } = data;', 'const n = 3;']);
}, 60_000);

afterAll(async () => {
  await server.stop();
});

const match = (variable: string, query = '') => server.request(`/api/algorithm-match/${variable}${query}`);

describe('GET /api/algorithm-match/{var_name}', () => {
  it('infers classification from a text target and scores classifiers by cross-validation', async () => {
    const res = await match('flowers', '?target=species');
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ variable: 'flowers', task_type: 'classification', target: 'species' });
    expect(res.body.data_characteristics).toMatchObject({ n_samples: 300, n_features: 3, n_classes: 3, metric: 'accuracy' });
    expect(res.body.data_characteristics.task_reason).toMatch(/3 distinct string values/);
    const names = res.body.recommendations.map((r: { name: string }) => r.name);
    expect(names).toEqual(expect.arrayContaining(['Logistic Regression', 'Decision Tree', 'Random Forest', 'k-Nearest Neighbors']));
    const scores = res.body.recommendations.map((r: { score: number }) => r.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    // Well separated classes: the best model is far above the 1/3 of guessing the largest class.
    expect(scores[0]).toBeGreaterThan(0.85);
    for (const r of res.body.recommendations) {
      expect(['fast', 'medium', 'slow']).toContain(r.speed);
      expect(['high', 'medium', 'low']).toContain(r.interpretability);
      expect(r.reasons[0]).toMatch(/fold cross-validated accuracy/);
      expect(r.cv.fold_scores.length).toBeGreaterThan(0);
    }
  });

  it('infers regression from a numeric target and scores with R²', async () => {
    const res = await match('houses', '?target=price');
    expect(res.status, res.text).toBe(200);
    expect(res.body.task_type).toBe('regression');
    expect(res.body.data_characteristics).toMatchObject({ metric: 'r2', n_features: 3 });
    expect(res.body.data_characteristics.categorical_features).toEqual(['district']);
    const names = res.body.recommendations.map((r: { name: string }) => r.name);
    expect(names).toEqual(expect.arrayContaining(['Linear Regression', 'Decision Tree Regressor', 'Random Forest Regressor']));
    // The price is linear in the features: linear regression wins and explains nearly everything.
    expect(res.body.recommendations[0].name).toBe('Linear Regression');
    expect(res.body.recommendations[0].score).toBeGreaterThan(0.9);
  });

  it('recommends clustering without a target, scored by silhouette, and finds the three blobs', async () => {
    const res = await match('blobs');
    expect(res.status, res.text).toBe(200);
    expect(res.body.task_type).toBe('clustering');
    expect(res.body.target).toBeNull();
    expect(res.body.data_characteristics.metric).toBe('silhouette');
    expect(res.body.recommendations[0].name).toBe('K-Means (k=3)');
  });

  it('gives training code that runs and predicts', async () => {
    for (const [variable, query, check] of [
      ['flowers', '?target=species', (text: string) => expect(text).toMatch(/setosa|versicolor|virginica/)],
      ['houses', '?target=price', (text: string) => expect(text).toMatch(/\d/)],
      ['blobs', '', (text: string) => expect(text).toMatch(/[012]/)],
    ] as const) {
      const res = await match(variable, query);
      for (const recommendation of res.body.recommendations.slice(0, variable === 'blobs' ? 1 : 4)) {
        const cell = await runCell(server, nb, recommendation.code);
        expect(cell.state, `${recommendation.name}\n${recommendation.code}\n${JSON.stringify(cell.outputs)}`).toBe('success');
        check(resultText(cell));
      }
    }
    // The trained model is usable from other cells.
    const used = await runCell(server, nb, "flowers_random_forest.predict([{ petal: 5, sepal: 7, colour: 'blue' }])[0]");
    expect(resultText(used)).toContain('virginica');
  }, 120_000);

  it('stays within its time budget and says what it could not score', async () => {
    const started = Date.now();
    const res = await match('flowers', '?target=species&budget_ms=100');
    expect(res.status, res.text).toBe(200);
    expect(Date.now() - started).toBeLessThan(10_000); // a hang guard; not_scored below is the budget's proof
    expect(res.body.data_characteristics.budget_ms).toBe(100);
    expect(res.body.recommendations.length).toBeGreaterThan(0);
    // Whatever the budget, the cheapest candidate gets at least one fold.
    const tiny = await match('flowers', '?target=species&budget_ms=100');
    expect(tiny.body.recommendations.map((r: { name: string }) => r.name)).toContain('Logistic Regression');
    expect(tiny.body.recommendations.length + tiny.body.data_characteristics.not_scored.length).toBe(4);
  });

  it('answers 404, 422 (not tabular) and 422 (unknown target) like smartprep', async () => {
    expect((await match('missing')).status).toBe(404);
    const notTabular = await match('n');
    expect(notTabular.status).toBe(422);
    expect(notTabular.body.detail).toMatch(/expected an array of records/);
    const badTarget = await match('flowers', '?target=colour_x');
    expect(badTarget.status).toBe(422);
    expect(badTarget.body.detail).toContain('its columns are: petal, sepal, colour, species');
  });
});

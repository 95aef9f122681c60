/**
 * #23: algorithm match's trees and forests (core/notebook/intel/worker/trees.ts) replace ml-cart and
 * ml-random-forest, whose generated training code took ~40 s on 4,000 rows (the speed is measured
 * in bench/notebook-intel.bench.ts, not here). These check what the trees learn, that a forest is
 * the same for the same seed, and that the code handed to the user carries the same source.
 */
import { describe, expect, it } from 'vitest';
import { fitForest, fitTree, TREES_SOURCE } from '../../core/notebook/intel/worker/trees.js';

function data(n: number, seed = 7) {
  let s = seed;
  const rand = () => (s = (s * 16807) % 2147483647) / 2147483647;
  return Array.from({ length: n }, () => [rand(), rand(), rand()]);
}

describe('CART trees and forests', () => {
  it('a tree learns XOR exactly (no linear split does), predicting class indices', () => {
    const X = data(400);
    const y = X.map(([a, b]) => (a! > 0.5 !== b! > 0.5 ? 1 : 0));
    const tree = fitTree(X, y, { kind: 'classifier', maxDepth: 10, minNumSamples: 1 });
    expect(tree.predict(X)).toEqual(y);
    expect(
      tree.predict([
        [0.9, 0.1, 0.5],
        [0.9, 0.9, 0.5],
        [0.1, 0.1, 0.5],
      ]),
    ).toEqual([1, 0, 0]);
  });

  it('a regression tree and forest follow a step function; the forest averages trees', () => {
    const X = data(600);
    const y = X.map(([a]) => (a! < 0.3 ? 10 : a! < 0.7 ? 20 : 30));
    const tree = fitTree(X, y, { kind: 'regression', maxDepth: 4, minNumSamples: 5 });
    expect(
      tree.predict([
        [0.1, 0, 0],
        [0.5, 0, 0],
        [0.9, 0, 0],
      ]),
    ).toEqual([10, 20, 30]);
    const forest = fitForest(X, y, { kind: 'regression', nEstimators: 10, maxFeatures: 1, seed: 1, maxDepth: 6 });
    const [low, mid, high] = forest.predict([
      [0.1, 0.5, 0.5],
      [0.5, 0.5, 0.5],
      [0.9, 0.5, 0.5],
    ]);
    expect(low).toBeCloseTo(10, 0);
    expect(mid).toBeCloseTo(20, 0);
    expect(high).toBeCloseTo(30, 0);
  });

  it('a forest votes over three classes, and the same seed gives the same forest', () => {
    const X = data(900, 3);
    const y = X.map(([a, b]) => (a! + b! < 0.7 ? 0 : a! > b! ? 1 : 2));
    const options = { kind: 'classifier' as const, nEstimators: 15, maxFeatures: 0.6, seed: 42, maxDepth: 10 };
    const test = data(300, 11);
    const truth = test.map(([a, b]) => (a! + b! < 0.7 ? 0 : a! > b! ? 1 : 2));
    const predicted = fitForest(X, y, options).predict(test);
    expect(predicted.filter((p, i) => p === truth[i]).length / truth.length).toBeGreaterThan(0.9);
    expect(fitForest(X, y, options).predict(test)).toEqual(predicted);
    expect(fitForest(X, y, { ...options, seed: 7 }).predict(test)).not.toEqual(undefined);
  });

  it('a feature with one value everywhere is never split on; a pure node is a leaf', () => {
    const X = data(50).map(([a]) => [a!, 1]);
    const y = X.map(() => 0);
    const tree = fitTree(X, y, { kind: 'classifier' }) as unknown as { root: { leaf?: number } };
    expect(tree.root).toEqual({ leaf: 0 });
  });

  it('the source the training code inlines needs no package', () => {
    expect(TREES_SOURCE).not.toMatch(/\bimport\b|\brequire\(/);
  });
});

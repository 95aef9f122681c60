/**
 * Decision trees and random forests (CART), as JavaScript source shared by algorithm match's
 * scoring and the training code it hands the user — one text, as the encoder (`encoder.ts`), so
 * the model scored is the model shipped.
 *
 * Why not ml-cart / ml-random-forest (which these replaced, #23): ml-cart tries every position
 * where the label changes in each feature's sorted order and, for each, splits the whole node
 * again and recounts its classes, which is quadratic in a node's rows. Its generated training code
 * took ~40 s for a 20-tree forest on 4,000 rows. Here each feature is sorted once per tree, at the
 * root, and kept sorted down the tree by stable partitioning (presorted CART); a node scans each
 * feature once with running class counts (or running sums for regression): O(features × n) per
 * level. The search is as exhaustive as scikit-learn's `best` splitter.
 *
 * Splits: `x < threshold` goes left, the threshold being the midpoint between two consecutive
 * distinct values; impurity is Gini (classification) or variance (regression). A forest draws a
 * bootstrap sample per tree and a fraction of the features per node (`maxFeatures`), from a seeded
 * generator, so the same data gives the same forest.
 */
export const TREES_SOURCE = `function _rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
// cols: one Float64Array per feature; orders: per feature, this node's rows sorted by that feature
// (sorted once at the root and kept sorted by stable partitioning, so no node sorts again).
function _grow(cols, y, orders, o, depth, random, goesLeft) {
  const n = orders[0].length;
  const rows = orders[0];
  const classes = o.classes;
  let leaf;
  if (classes) {
    const counts = new Float64Array(classes);
    for (let i = 0; i < n; i++) counts[y[rows[i]]]++;
    let best = 0;
    for (let c = 1; c < classes; c++) if (counts[c] > counts[best]) best = c;
    leaf = { value: best, pure: counts[best] === n };
  } else {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += y[rows[i]];
    leaf = { value: sum / n, pure: false };
  }
  if (n <= o.minNumSamples || depth >= o.maxDepth || leaf.pure) return { leaf: leaf.value };
  const d = cols.length;
  let features = Array.from({ length: d }, (_, j) => j);
  if (o.maxFeatures < 1) {
    for (let i = d - 1; i > 0; i--) { const j = Math.floor(random() * (i + 1)); [features[i], features[j]] = [features[j], features[i]]; }
    features = features.slice(0, Math.max(1, Math.round(o.maxFeatures * d)));
  }
  let bestScore = Infinity, bestFeature = -1, bestThreshold = 0;
  const left = classes ? new Float64Array(classes) : null;
  const total = classes ? new Float64Array(classes) : null;
  let totalSum = 0, totalSq = 0;
  if (classes) for (let i = 0; i < n; i++) total[y[rows[i]]]++;
  else for (let i = 0; i < n; i++) { const v = y[rows[i]]; totalSum += v; totalSq += v * v; }
  for (const f of features) {
    const sorted = orders[f], col = cols[f];
    if (col[sorted[0]] === col[sorted[n - 1]]) continue;
    if (left) left.fill(0);
    let lSum = 0, lSq = 0;
    for (let i = 0; i < n - 1; i++) {
      const r = sorted[i];
      if (left) left[y[r]]++;
      else { lSum += y[r]; lSq += y[r] * y[r]; }
      const here = col[r], next = col[sorted[i + 1]];
      if (here === next) continue;
      const nl = i + 1, nr = n - nl;
      let score;
      if (left) {
        // n × weighted Gini of the two sides: nl - Σ left² / nl + nr - Σ right² / nr
        let sl = 0, sr = 0;
        for (let c = 0; c < classes; c++) { const a = left[c], b = total[c] - a; sl += a * a; sr += b * b; }
        score = nl - sl / nl + nr - sr / nr;
      } else {
        const rSum = totalSum - lSum, rSq = totalSq - lSq;
        score = lSq - (lSum * lSum) / nl + rSq - (rSum * rSum) / nr;
      }
      if (score < bestScore - 1e-12) { bestScore = score; bestFeature = f; bestThreshold = (here + next) / 2; }
    }
  }
  if (bestFeature < 0) return { leaf: leaf.value };
  const col = cols[bestFeature];
  let nLeft = 0;
  for (let i = 0; i < n; i++) { const r = rows[i]; const l = col[r] < bestThreshold; goesLeft[r] = l ? 1 : 0; if (l) nLeft++; }
  const lesser = [], greater = [];
  for (let f = 0; f < d; f++) {
    const from = orders[f], a = new Int32Array(nLeft), b = new Int32Array(n - nLeft);
    let ia = 0, ib = 0;
    for (let i = 0; i < n; i++) { const r = from[i]; if (goesLeft[r]) a[ia++] = r; else b[ib++] = r; }
    lesser.push(a);
    greater.push(b);
  }
  return {
    feature: bestFeature,
    threshold: bestThreshold,
    left: _grow(cols, y, lesser, o, depth + 1, random, goesLeft),
    right: _grow(cols, y, greater, o, depth + 1, random, goesLeft),
  };
}
function _root(X, y, sample, o, random) {
  const d = X[0].length;
  const cols = Array.from({ length: d }, (_, f) => Float64Array.from(X, (row) => row[f]));
  const orders = cols.map((col) => Int32Array.from(sample).sort((a, b) => col[a] - col[b]));
  return _grow(cols, y, orders, o, 0, random, new Uint8Array(X.length));
}
function _walk(node, x) {
  while (node.leaf === undefined) node = x[node.feature] < node.threshold ? node.left : node.right;
  return node.leaf;
}
function _options(y, o) {
  const classes = o.kind === 'classifier' ? y.reduce((m, v) => Math.max(m, v), 0) + 1 : 0;
  return { classes, maxDepth: o.maxDepth ?? 10, minNumSamples: o.minNumSamples ?? 3, maxFeatures: o.maxFeatures ?? 1 };
}
/** One CART tree; kind 'classifier' (labels 0..k-1) or 'regression'. */
function _fitTree(X, y, o) {
  const root = _root(X, y, Array.from({ length: X.length }, (_, i) => i), _options(y, o), _rng(o.seed ?? 42));
  return { kind: o.kind, root, predict: (rows) => rows.map((x) => _walk(root, x)) };
}
/** nEstimators trees on bootstrap samples, maxFeatures of the features per split; votes or averages. */
function _fitForest(X, y, o) {
  const opts = _options(y, { maxFeatures: 0.6, ...o });
  const random = _rng(o.seed ?? 42);
  const trees = [];
  for (let t = 0; t < (o.nEstimators ?? 20); t++) {
    const sample = Array.from({ length: X.length }, () => Math.floor(random() * X.length));
    trees.push(_root(X, y, sample, opts, random));
  }
  const predict = (rows) => rows.map((x) => {
    if (!opts.classes) return trees.reduce((s, tree) => s + _walk(tree, x), 0) / trees.length;
    const votes = new Array(opts.classes).fill(0);
    for (const tree of trees) votes[_walk(tree, x)]++;
    let best = 0;
    for (let c = 1; c < votes.length; c++) if (votes[c] > votes[best]) best = c;
    return best;
  });
  return { kind: o.kind, trees, predict };
}`;

export interface TreeModel {
  predict(rows: number[][]): number[];
}

export interface TreeOptions {
  kind: 'classifier' | 'regression';
  maxDepth?: number;
  minNumSamples?: number;
  maxFeatures?: number;
  nEstimators?: number;
  seed?: number;
}

type Fit = (X: number[][], y: number[], options: TreeOptions) => TreeModel;

/** The same source, compiled once here for the scoring. */
export const { fitTree, fitForest } = new Function(`${TREES_SOURCE}\nreturn { fitTree: _fitTree, fitForest: _fitForest };`)() as {
  fitTree: Fit;
  fitForest: Fit;
};

/**
 * Algorithm match, run inside the notebook's kernel thread: infer the task from the target, encode
 * a sample of the data, and score the candidate models of that task by k-fold cross-validation
 * with the mljs libraries (ml-knn, ml-logistic-regression, ml-regression-multivariate-linear,
 * ml-kmeans) and our own CART trees and forests (`trees.ts`, whose source the training code
 * inlines) — on the user's data, not from a lookup table.
 *
 * Budget: `budget_ms` (default 5 s) counts from the call, reading the frame included. A fold is
 * started only when its projected time (the candidate's previous fold, or for the forest its
 * trees' share of the single tree's time) still fits; candidates run cheapest first, and the
 * first fold of the first one (k = 2 for clustering) always runs, so an answer has a score.
 * Candidates left unscored are listed in `data_characteristics.not_scored`, never given an
 * invented score.
 *
 * Sample: at most 1,000 rows, drawn with a fixed seed so the same data gets the same answer.
 * The trees are presorted CART (`trees.ts`), linear in a node's rows per feature; before #23 they
 * were mljs's, quadratic, and the 20-tree forest rarely fitted the 5 s budget on 1,000 rows (see
 * bench/notebook-intel.bench.ts for today's figures), and the cross-validation
 * estimate's spread (reported as `std`) stays at a few points.
 */
import { kmeans } from 'ml-kmeans';
import KNN from 'ml-knn';
import LogisticRegression from 'ml-logistic-regression';
import { Matrix } from 'ml-matrix';
import MLR from 'ml-regression-multivariate-linear';
import { seededRandom } from '../../../kernel/seeded-random.js';
import { ENCODER_SOURCE, type EncoderSpec, type FeatureSpec } from './encoder.js';
import { AnalysisError, type ColumnProfile, checkTarget, isMissing, profileColumn, toFrame } from './frame.js';
import { isClassTarget, MAX_CLASSES } from './smartprep.js';
import { fitForest, fitTree, TREES_SOURCE } from './trees.js';

export type TaskType = 'classification' | 'regression' | 'clustering';
type Level = 'fast' | 'medium' | 'slow';

export interface Recommendation {
  name: string;
  /** Mean cross-validated score: accuracy (classification), R² (regression), silhouette (clustering). */
  score: number;
  speed: Level;
  interpretability: 'high' | 'medium' | 'low';
  reasons: string[];
  code: string;
  /** Name the code defines. */
  defines: string;
  cv: { metric: string; folds: number; fold_scores: number[]; std: number; fit_ms: number };
  /** Supervised tasks: what always predicting the largest class (accuracy) or the mean (R² 0) scores. */
  baseline?: number;
  /** Whether the score beats the baseline by more than a point; candidates that do not rank last, with a warning. */
  beats_baseline?: boolean;
  warning?: string;
}

export interface AlgorithmMatchResult {
  variable: string;
  task_type: TaskType;
  target: string | null;
  data_characteristics: Record<string, unknown> & { n_samples: number; n_features: number };
  recommendations: Recommendation[];
}

export const DEFAULT_BUDGET_MS = 5000;
const SAMPLE_ROWS = 1000;
const CLUSTER_SAMPLE_ROWS = 1000;
const MAX_LEVELS = 10;
/**
 * A fold of the 20-tree forest, in single-tree folds. Fewer features per split would suggest
 * 20 × 0.6, but measured forests cost ~16 tree fits (bootstrap copies, per-tree overhead), so
 * the projection uses the full 20 and errs on the side of the budget.
 */
const FOREST_SHARE = 20;

function shuffle<T>(xs: T[], random: () => number): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}

const encode = new Function(`${ENCODER_SOURCE}\nreturn _encode;`)() as (spec: EncoderSpec, row: Record<string, unknown>) => number[];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Decide which columns become which features (numbers standardised, small categoricals one-hot). */
function buildSpec(
  profiles: ColumnProfile[],
  column: (name: string) => unknown[],
  rows: number[],
): { spec: EncoderSpec; dropped: Array<{ column: string; why: string }> } {
  const features: FeatureSpec[] = [];
  const dropped: Array<{ column: string; why: string }> = [];
  for (const p of profiles) {
    const values = rows.map((r) => column(p.name)[r]);
    const numericText = p.kind === 'string' && p.numericStrings >= 0.9 * p.present;
    const dateText = p.kind === 'string' && p.dateStrings >= 0.9 * p.present;
    if (p.present === 0 || p.distinct <= 1) {
      dropped.push({ column: p.name, why: 'no variation' });
    } else if (p.kind === 'number' || p.kind === 'boolean' || p.kind === 'date' || numericText || dateText) {
      const kind = p.kind === 'date' || dateText ? 'date' : 'number';
      const nums = values.map((v) => toNumber(v, kind)).filter(Number.isFinite);
      const fill = median(nums);
      const mean = nums.reduce((a, b) => a + b, 0) / (nums.length || 1);
      const sd = Math.sqrt(nums.reduce((a, b) => a + (b - mean) ** 2, 0) / (nums.length || 1)) || 1;
      features.push({ name: p.name, kind, fill, mean, std: sd });
    } else if (p.kind === 'string' && p.distinct <= 50) {
      const counts = new Map<string, number>();
      for (const v of values) if (!isMissing(v)) counts.set(String(v), (counts.get(String(v)) ?? 0) + 1);
      const levels = [...counts]
        .sort((a, b) => b[1] - a[1])
        .slice(0, MAX_LEVELS)
        .map(([l]) => l);
      features.push({ name: p.name, kind: 'onehot', levels });
    } else {
      dropped.push({
        column: p.name,
        why: p.kind === 'string' ? `${p.distinct} categories (too many to encode)` : `values of type ${p.kind}`,
      });
    }
  }
  return { spec: { features }, dropped };
}

function toNumber(v: unknown, kind: 'number' | 'date'): number {
  if (v instanceof Date) return v.getTime();
  if (kind === 'date') return typeof v === 'string' ? Date.parse(v) : Number.NaN;
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return Number(v);
  if (typeof v === 'string' && v.trim() !== '') return Number(v.replace(/,/g, ''));
  return Number.NaN;
}

interface Candidate {
  name: string;
  slug: string;
  interpretability: Recommendation['interpretability'];
  /** Projected ms of one fold from the folds measured so far (slug → ms per fold). */
  projected?(measured: Map<string, number>): number;
  /** Fit on train rows, predict test rows (labels are class indices or numbers). */
  fitPredict(X: number[][], y: number[], Xtest: number[][]): number[];
  /** Import line and constructor + training lines of the generated code. */
  code: { imports: string; train: string; predict: string /** Inlined definitions the training uses (trees.ts). */; source?: string };
  why: string;
}

function classifiers(nClasses: number): Candidate[] {
  return [
    {
      name: 'Logistic Regression',
      slug: 'logistic_regression',
      interpretability: 'high',
      why: 'A linear model: its coefficients say how each (standardised) feature moves the odds of each class.',
      fitPredict(X, y, Xt) {
        const m = new LogisticRegression({ numSteps: 150, learningRate: 0.3 });
        m.train(new Matrix(X), Matrix.columnVector(y));
        return Array.from(m.predict(new Matrix(Xt)));
      },
      code: {
        imports: "import _LogisticRegression from 'ml-logistic-regression';\nimport { Matrix as _Matrix } from 'ml-matrix';\n",
        train:
          'const _model = new _LogisticRegression({ numSteps: 150, learningRate: 0.3 });\n_model.train(new _Matrix(_X), _Matrix.columnVector(_y));\n',
        predict: 'Array.from(_model.predict(new _Matrix(X)))',
      },
    },
    {
      name: 'Decision Tree',
      slug: 'decision_tree',
      interpretability: 'high',
      why: 'Readable if-then splits; handles non-linear effects and interactions without feature engineering.',
      fitPredict(X, y, Xt) {
        return fitTree(X, y, { kind: 'classifier', maxDepth: 10, minNumSamples: 3 }).predict(Xt);
      },
      code: {
        imports: '',
        source: TREES_SOURCE,
        train: "const _model = _fitTree(_X, _y, { kind: 'classifier', maxDepth: 10, minNumSamples: 3 });\n",
        predict: '_model.predict(X)',
      },
    },
    {
      name: 'k-Nearest Neighbors',
      slug: 'knn',
      interpretability: 'medium',
      why: 'Predicts from the most similar rows; no training, but prediction cost grows with the data.',
      fitPredict(X, y, Xt) {
        const m = new KNN(X, y, { k: Math.min(5, X.length - 1) });
        return m.predict(Xt) as number[];
      },
      code: {
        imports: "import _KNN from 'ml-knn';\n",
        train: 'const _model = new _KNN(_X, _y, { k: Math.min(5, _X.length - 1) });\n',
        predict: '_model.predict(X)',
      },
    },
    {
      name: 'Random Forest',
      slug: 'random_forest',
      interpretability: 'medium',
      projected: (measured) => FOREST_SHARE * (measured.get('decision_tree') ?? 0),
      why: `An ensemble of ${nClasses > 2 ? 'multi-class ' : ''}trees on bootstrap samples: usually the strongest of these on tabular data, less prone to overfit than one tree.`,
      fitPredict(X, y, Xt) {
        return fitForest(X, y, { kind: 'classifier', nEstimators: 20, maxFeatures: 0.6, seed: 42, maxDepth: 10 }).predict(Xt);
      },
      code: {
        imports: '',
        source: TREES_SOURCE,
        train: "const _model = _fitForest(_X, _y, { kind: 'classifier', nEstimators: 20, maxFeatures: 0.6, seed: 42, maxDepth: 10 });\n",
        predict: '_model.predict(X)',
      },
    },
  ];
}

function regressors(): Candidate[] {
  return [
    {
      name: 'Linear Regression',
      slug: 'linear_regression',
      interpretability: 'high',
      why: 'Ordinary least squares: each coefficient is the effect of one standardised feature.',
      fitPredict(X, y, Xt) {
        const m = new MLR(
          X,
          y.map((v) => [v]),
        );
        return Xt.map((row) => (m.predict(row) as number[])[0]);
      },
      code: {
        imports: "import _MLR from 'ml-regression-multivariate-linear';\n",
        train: 'const _model = new _MLR(_X, _y.map((v) => [v]));\n',
        predict: 'X.map((row) => _model.predict(row)[0])',
      },
    },
    {
      name: 'Decision Tree Regressor',
      slug: 'decision_tree',
      interpretability: 'high',
      why: 'Piecewise-constant predictions from readable splits; captures thresholds and interactions.',
      fitPredict(X, y, Xt) {
        return fitTree(X, y, { kind: 'regression', maxDepth: 10, minNumSamples: 5 }).predict(Xt);
      },
      code: {
        imports: '',
        source: TREES_SOURCE,
        train: "const _model = _fitTree(_X, _y, { kind: 'regression', maxDepth: 10, minNumSamples: 5 });\n",
        predict: '_model.predict(X)',
      },
    },
    {
      name: 'Random Forest Regressor',
      slug: 'random_forest',
      interpretability: 'medium',
      projected: (measured) => FOREST_SHARE * (measured.get('decision_tree') ?? 0),
      why: 'Averages many trees on bootstrap samples: smooth, strong on non-linear tabular data.',
      fitPredict(X, y, Xt) {
        return fitForest(X, y, { kind: 'regression', nEstimators: 20, maxFeatures: 0.6, seed: 42, maxDepth: 10 }).predict(Xt);
      },
      code: {
        imports: '',
        source: TREES_SOURCE,
        train: "const _model = _fitForest(_X, _y, { kind: 'regression', nEstimators: 20, maxFeatures: 0.6, seed: 42, maxDepth: 10 });\n",
        predict: '_model.predict(X)',
      },
    },
  ];
}

function accuracy(pred: number[], truth: number[]): number {
  let ok = 0;
  for (let i = 0; i < truth.length; i++) if (pred[i] === truth[i]) ok++;
  return ok / truth.length;
}

function r2(pred: number[], truth: number[]): number {
  const m = truth.reduce((a, b) => a + b, 0) / truth.length;
  let ssr = 0;
  let sst = 0;
  for (let i = 0; i < truth.length; i++) {
    ssr += (truth[i] - pred[i]) ** 2;
    sst += (truth[i] - m) ** 2;
  }
  return sst === 0 ? 0 : 1 - ssr / sst;
}

function silhouette(X: number[][], labels: number[]): number {
  const k = Math.max(...labels) + 1;
  let total = 0;
  for (let i = 0; i < X.length; i++) {
    const sums = new Array<number>(k).fill(0);
    const counts = new Array<number>(k).fill(0);
    for (let j = 0; j < X.length; j++) {
      if (i === j) continue;
      let d = 0;
      for (let f = 0; f < X[i].length; f++) d += (X[i][f] - X[j][f]) ** 2;
      sums[labels[j]] += Math.sqrt(d);
      counts[labels[j]]++;
    }
    const own = labels[i];
    if (counts[own] === 0) continue; // a singleton cluster scores 0 by convention
    const a = sums[own] / counts[own];
    let b = Infinity;
    for (let c = 0; c < k; c++) if (c !== own && counts[c] > 0) b = Math.min(b, sums[c] / counts[c]);
    total += b === Infinity ? 0 : (b - a) / Math.max(a, b);
  }
  return total / X.length;
}

const speedOf = (ms: number): Level => (ms < 50 ? 'fast' : ms < 500 ? 'medium' : 'slow');
const fmt = (x: number) => x.toFixed(3);
const stdOf = (xs: number[]) => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / xs.length);
};

export function algorithmMatch(value: unknown, args: { variable: string; target?: string; budget_ms?: number }): AlgorithmMatchResult {
  const started = performance.now();
  const { variable, target } = args;
  const budget = args.budget_ms ?? DEFAULT_BUDGET_MS;
  const frame = toFrame(value, variable);
  checkTarget(frame, target, variable);
  const random = seededRandom(42);
  const targetValues = target !== undefined ? frame.column(target) : undefined;
  // Rows whose target is known; a model can neither learn from nor be scored on the others.
  const usable: number[] = [];
  for (let r = 0; r < frame.rows; r++) if (!targetValues || !isMissing(targetValues[r])) usable.push(r);
  const limit = target === undefined ? CLUSTER_SAMPLE_ROWS : SAMPLE_ROWS;
  const sample =
    usable.length > limit
      ? shuffle([...usable], random)
          .slice(0, limit)
          .sort((a, b) => a - b)
      : usable;
  const featureCols = frame.columns.filter((c) => c !== target);
  const profiles = featureCols.map((c) =>
    profileColumn(
      c,
      sample.map((r) => frame.column(c)[r]),
    ),
  );
  const { spec, dropped } = buildSpec(profiles, (c) => frame.column(c), sample);
  const rowObject = (r: number) => {
    const o: Record<string, unknown> = {};
    for (const f of spec.features) o[f.name] = frame.column(f.name)[r];
    return o;
  };
  const X = sample.map((r) => encode(spec, rowObject(r)));
  const nEncoded = X[0]?.length ?? 0;

  let taskType: TaskType = 'clustering';
  let taskReason = 'no target column given: the task is to find groups (clustering)';
  let classes: unknown[] = [];
  let y: number[] = [];
  if (target !== undefined) {
    const tp = profileColumn(
      target,
      sample.map((r) => targetValues![r]),
    );
    if (isClassTarget(tp)) {
      taskType = 'classification';
      const counts = new Map<unknown, number>();
      for (const r of sample) counts.set(targetValues![r], (counts.get(targetValues![r]) ?? 0) + 1);
      classes = [...counts.keys()].sort((a, b) => String(a).localeCompare(String(b)));
      const index = new Map(classes.map((c, i) => [c, i]));
      y = sample.map((r) => index.get(targetValues![r])!);
      taskReason = `target "${target}" has ${tp.distinct} distinct ${tp.kind} values: classification`;
    } else if (tp.kind === 'number' || tp.numericStrings >= 0.9 * tp.present) {
      taskType = 'regression';
      y = sample.map((r) => toNumber(targetValues![r], 'number'));
      taskReason = `target "${target}" is numeric with ${tp.distinct} distinct values: regression`;
    } else {
      throw new AnalysisError(
        422,
        `target "${target}" has ${tp.distinct} distinct ${tp.kind} values: too many classes to predict and not numeric; pick a numeric target or one with at most ${MAX_CLASSES} classes`,
      );
    }
  }

  const characteristics: AlgorithmMatchResult['data_characteristics'] = {
    n_samples: frame.rows,
    n_features: featureCols.length,
    n_encoded_features: nEncoded,
    sample_size: sample.length,
    task_reason: taskReason,
    numeric_features: spec.features.filter((f) => f.kind !== 'onehot').map((f) => f.name),
    categorical_features: spec.features.filter((f) => f.kind === 'onehot').map((f) => f.name),
    dropped_features: dropped,
    budget_ms: budget,
  };
  const recommendations: Recommendation[] = [];
  const notScored: string[] = [];
  // Reading, sampling and encoding, before any model: tells a user where the budget went.
  characteristics.prep_ms = Math.round(performance.now() - started);

  if (nEncoded === 0 || sample.length < 6) {
    throw new AnalysisError(
      422,
      `${variable} has ${sample.length} usable rows and ${nEncoded} usable features; algorithm match needs at least 6 rows and one numeric or categorical feature`,
    );
  }

  if (taskType === 'clustering') {
    characteristics.metric = 'silhouette';
    const maxK = Math.min(6, sample.length - 1);
    for (let k = 2; k <= maxK; k++) {
      if (k > 2 && performance.now() - started > budget) {
        notScored.push(`K-Means (k=${k})`);
        continue;
      }
      const t0 = performance.now();
      const result = kmeans(X, k, { seed: 42, initialization: 'kmeans++' });
      const fitMs = performance.now() - t0;
      const score = silhouette(X, result.clusters);
      recommendations.push({
        name: `K-Means (k=${k})`,
        score,
        speed: speedOf(fitMs),
        interpretability: 'high',
        defines: `${variable}_kmeans_${k}`,
        reasons: [
          `silhouette ${fmt(score)} on ${sample.length} sampled rows (1 = tight, well separated clusters; 0 = overlapping)`,
          'centroids are readable: each cluster is described by its average (standardised) feature values',
        ],
        code: clusterCode(variable, spec, k),
        cv: { metric: 'silhouette', folds: 1, fold_scores: [score], std: 0, fit_ms: fitMs },
      });
    }
  } else {
    const classification = taskType === 'classification';
    const folds = sample.length >= 500 ? 3 : 5;
    const order = shuffle(
      sample.map((_, i) => i),
      random,
    );
    const foldOf = new Array<number>(sample.length);
    order.forEach((i, pos) => (foldOf[i] = pos % folds));
    characteristics.metric = classification ? 'accuracy' : 'r2';
    characteristics.folds = folds;
    if (classification) {
      const counts = new Array<number>(classes.length).fill(0);
      for (const c of y) counts[c]++;
      characteristics.n_classes = classes.length;
      characteristics.class_counts = Object.fromEntries(classes.map((c, i) => [String(c), counts[i]]));
      characteristics.baseline_accuracy = Math.max(...counts) / y.length;
    }
    const candidates = classification ? classifiers(classes.length) : regressors();
    const measured = new Map<string, number>();
    for (const cand of candidates) {
      const scores: number[] = [];
      let fitMs = 0;
      for (let f = 0; f < folds; f++) {
        const projected = scores.length ? fitMs / scores.length : (cand.projected?.(measured) ?? 0);
        // The first fold of the first (cheapest) candidate always runs: an answer with no score is no answer.
        const first = recommendations.length === 0 && scores.length === 0 && notScored.length === 0;
        if (!first && performance.now() - started + projected > budget) break;
        const train: number[] = [];
        const test: number[] = [];
        for (let i = 0; i < sample.length; i++) (foldOf[i] === f ? test : train).push(i);
        const t0 = performance.now();
        try {
          const pred = cand.fitPredict(
            train.map((i) => X[i]),
            train.map((i) => y[i]),
            test.map((i) => X[i]),
          );
          const truth = test.map((i) => y[i]);
          scores.push(classification ? accuracy(pred, truth) : r2(pred, truth));
        } catch (err) {
          // One library failing on this data (a singular matrix for linear regression) must not sink the rest.
          characteristics[`error_${cand.slug}`] = err instanceof Error ? err.message : String(err);
          scores.length = 0;
          break;
        }
        fitMs += performance.now() - t0;
      }
      if (scores.length === 0) {
        notScored.push(cand.name);
        continue;
      }
      measured.set(cand.slug, fitMs / scores.length);
      const score = scores.reduce((a, b) => a + b, 0) / scores.length;
      const reasons = [
        `${scores.length}-fold cross-validated ${classification ? 'accuracy' : 'R²'} ${fmt(score)} ± ${fmt(stdOf(scores))} on ${sample.length} ${sample.length < usable.length ? 'sampled ' : ''}rows`,
        cand.why,
      ];
      if (classification) reasons.push(`always predicting the largest class scores ${fmt(characteristics.baseline_accuracy as number)}`);
      if (scores.length < folds) reasons.push(`only ${scores.length} of ${folds} folds ran within the ${budget} ms budget`);
      // A model no better than a constant guess has learned nothing from the features: say so, and rank it last.
      const baseline = classification ? (characteristics.baseline_accuracy as number) : 0;
      const beats = score > baseline + 0.01;
      const warning = beats
        ? undefined
        : `no better than the baseline: ${fmt(score)} against ${fmt(baseline)} for ${classification ? 'always predicting the largest class' : 'always predicting the mean'}; the features may not predict ${target}`;
      if (warning) reasons.unshift(`warning: ${warning}`);
      recommendations.push({
        baseline,
        beats_baseline: beats,
        ...(warning ? { warning } : {}),
        name: cand.name,
        score,
        speed: speedOf(fitMs / scores.length),
        interpretability: cand.interpretability,
        defines: `${variable}_${cand.slug}`,
        reasons,
        code: modelCode(variable, target!, spec, cand, classification ? classes : undefined),
        cv: {
          metric: classification ? 'accuracy' : 'r2',
          folds: scores.length,
          fold_scores: scores,
          std: stdOf(scores),
          fit_ms: fitMs / scores.length,
        },
      });
    }
  }

  recommendations.sort((a, b) => Number(b.beats_baseline !== false) - Number(a.beats_baseline !== false) || b.score - a.score);
  if (recommendations.length > 1) {
    const [best, second] = recommendations;
    best.reasons.push(
      `best of the ${recommendations.length} candidates scored (${fmt(best.score - second.score)} ahead of ${second.name})`,
    );
  }
  characteristics.not_scored = notScored;
  characteristics.elapsed_ms = Math.round(performance.now() - started);
  return { variable, task_type: taskType, target: target ?? null, data_characteristics: characteristics, recommendations };
}

const rowsOf = (variable: string) => `const _rows = Array.isArray(${variable}) ? ${variable} : ${variable}.objects();\n`;

function modelCode(variable: string, target: string, spec: EncoderSpec, cand: Candidate, classes: unknown[] | undefined): string {
  const out = `${variable}_${cand.slug}`;
  const t = JSON.stringify(target);
  return (
    `// train a ${cand.name} on ${variable} to predict ${target}; ${out}.predict(rows) answers for new rows\n` +
    cand.code.imports +
    `const _spec = ${JSON.stringify(spec)};\n` +
    `${ENCODER_SOURCE}\n` +
    (cand.code.source ? `${cand.code.source}\n` : '') +
    rowsOf(variable) +
    `const _missing = (v) => v == null || (typeof v === 'number' && Number.isNaN(v)) || (typeof v === 'string' && v.trim() === '');\n` +
    `const _train = _rows.filter((r) => !_missing(r[${t}]));\n` +
    `const _X = _train.map((r) => _encode(_spec, r));\n` +
    (classes
      ? `const _classes = ${JSON.stringify(classes)};\nconst _y = _train.map((r) => _classes.indexOf(r[${t}]));\n`
      : `const _y = _train.map((r) => Number(r[${t}]));\n`) +
    cand.code.train +
    `const ${out} = {\n` +
    `  model: _model,\n` +
    `  features: _spec.features.map((f) => f.name),\n` +
    `  predict(rows) {\n` +
    `    const X = (Array.isArray(rows) ? rows : rows.objects()).map((r) => _encode(_spec, r));\n` +
    (classes ? `    return ${cand.code.predict}.map((i) => _classes[i]);\n` : `    return ${cand.code.predict};\n`) +
    `  },\n` +
    `};\n` +
    `${out}.predict(_train.slice(0, 5))`
  );
}

function clusterCode(variable: string, spec: EncoderSpec, k: number): string {
  const out = `${variable}_kmeans_${k}`;
  return (
    `// group the rows of ${variable} into ${k} clusters with k-means on standardised features\n` +
    "import { kmeans as _kmeans } from 'ml-kmeans';\n" +
    `const _spec = ${JSON.stringify(spec)};\n` +
    `${ENCODER_SOURCE}\n` +
    rowsOf(variable) +
    `const _X = _rows.map((r) => _encode(_spec, r));\n` +
    `const _result = _kmeans(_X, ${k}, { seed: 42, initialization: 'kmeans++' });\n` +
    `const ${out} = { clusters: _result.clusters, centroids: _result.centroids, features: _spec.features.map((f) => f.name) };\n` +
    `${out}.clusters.slice(0, 10)`
  );
}

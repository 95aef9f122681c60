/**
 * Multinomial logistic regression (softmax regression) trained with full-batch gradient descent
 * and L2 regularisation on standardised features. Small and dependency-free on purpose: 150 rows
 * train in a few milliseconds, so the model is rebuilt from the shipped CSV at every load.
 */

export interface Dataset {
  features: number[][];
  labels: number[];
  classes: string[];
  featureNames: string[];
}

export interface Model {
  classes: string[];
  featureNames: string[];
  mean: number[];
  std: number[];
  /** weights[c][f]; bias[c] */
  weights: number[][];
  bias: number[];
}

/** Parse a CSV with a header, numeric feature columns and the label in the last column. */
export function parseCsv(text: string): Dataset {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  const header = lines[0]!.split(',').map((h) => h.trim());
  const featureNames = header.slice(0, -1);
  const classes: string[] = [];
  const features: number[][] = [];
  const labels: number[] = [];
  for (const [i, line] of lines.slice(1).entries()) {
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length !== header.length) throw new Error(`row ${i + 2}: expected ${header.length} columns, got ${cells.length}`);
    const row = cells.slice(0, -1).map(Number);
    if (row.some((v) => !Number.isFinite(v))) throw new Error(`row ${i + 2}: non-numeric feature`);
    const label = cells.at(-1)!;
    let index = classes.indexOf(label);
    if (index < 0) index = classes.push(label) - 1;
    features.push(row);
    labels.push(index);
  }
  return { features, labels, classes, featureNames };
}

/** Mulberry32: a seeded generator, so the split (and the card's metrics) are reproducible. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Stratified split: `testShare` of every class goes to the held-out set. */
export function stratifiedSplit(data: Dataset, testShare: number, seed: number): { train: number[]; test: number[] } {
  const random = seeded(seed);
  const train: number[] = [];
  const test: number[] = [];
  for (let c = 0; c < data.classes.length; c++) {
    const rows = data.labels.flatMap((l, i) => (l === c ? [i] : []));
    for (let i = rows.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [rows[i], rows[j]] = [rows[j]!, rows[i]!];
    }
    const cut = Math.round(rows.length * testShare);
    test.push(...rows.slice(0, cut));
    train.push(...rows.slice(cut));
  }
  return { train, test };
}

export function probabilities(model: Model, x: number[]): number[] {
  const z = model.weights.map(
    (w, c) => model.bias[c]! + w.reduce((sum, wf, f) => sum + (wf * (x[f]! - model.mean[f]!)) / model.std[f]!, 0),
  );
  const max = Math.max(...z);
  const exp = z.map((v) => Math.exp(v - max));
  const total = exp.reduce((a, b) => a + b, 0);
  return exp.map((v) => v / total);
}

/**
 * `probabilities` for training, written into `out`: training calls it 52,500 times (500 epochs of
 * 105 rows), and the arrays map and reduce made there were most of a load, 42-47 ms in a fresh
 * thread. The sums run in the same order, so the weights are the same to the bit. Predictions
 * keep `probabilities` as it was: calling this from it instead (one form for both) made the ML
 * benchmark's in-process loop of 10,000 predictions ~2× slower (9.5-10.5 → 22 ms, two runs each).
 */
function softmaxInto(model: Model, x: number[], out: number[]): number[] {
  const { weights, bias, mean, std } = model;
  let max = Number.NEGATIVE_INFINITY;
  for (let c = 0; c < weights.length; c++) {
    const w = weights[c]!;
    let sum = 0;
    for (let f = 0; f < w.length; f++) sum += (w[f]! * (x[f]! - mean[f]!)) / std[f]!;
    out[c] = bias[c]! + sum;
    if (out[c]! > max) max = out[c]!;
  }
  let total = 0;
  for (let c = 0; c < out.length; c++) {
    out[c] = Math.exp(out[c]! - max);
    total += out[c]!;
  }
  for (let c = 0; c < out.length; c++) out[c] = out[c]! / total;
  return out;
}

export function train(data: Dataset, rows: number[], { epochs = 500, rate = 0.5, l2 = 1e-3 } = {}): Model {
  const f = data.featureNames.length;
  const k = data.classes.length;
  // Standardise with training-set statistics only: the held-out rows stay unseen.
  const mean = Array.from({ length: f }, (_, j) => rows.reduce((s, i) => s + data.features[i]![j]!, 0) / rows.length);
  const std = Array.from(
    { length: f },
    (_, j) => Math.sqrt(rows.reduce((s, i) => s + (data.features[i]![j]! - mean[j]!) ** 2, 0) / rows.length) || 1,
  );
  const model: Model = {
    classes: data.classes,
    featureNames: data.featureNames,
    mean,
    std,
    weights: Array.from({ length: k }, () => new Array<number>(f).fill(0)),
    bias: new Array<number>(k).fill(0),
  };
  const gradW = Array.from({ length: k }, () => new Array<number>(f));
  const gradB = new Array<number>(k);
  const p = Array.from({ length: k }, () => 0);
  for (let epoch = 0; epoch < epochs; epoch++) {
    for (let c = 0; c < k; c++) gradW[c]!.fill(0);
    gradB.fill(0);
    for (const i of rows) {
      const x = data.features[i]!;
      softmaxInto(model, x, p);
      for (let c = 0; c < k; c++) {
        const err = p[c]! - (data.labels[i] === c ? 1 : 0);
        gradB[c]! += err;
        for (let j = 0; j < f; j++) gradW[c]![j]! += (err * (x[j]! - mean[j]!)) / std[j]!;
      }
    }
    for (let c = 0; c < k; c++) {
      model.bias[c]! -= (rate * gradB[c]!) / rows.length;
      for (let j = 0; j < f; j++) model.weights[c]![j]! -= rate * (gradW[c]![j]! / rows.length + l2 * model.weights[c]![j]!);
    }
  }
  return model;
}

/** Accuracy, macro-averaged F1 and log loss of `model` on `rows`. */
export function evaluate(model: Model, data: Dataset, rows: number[]): { accuracy: number; macro_f1: number; log_loss: number } {
  const k = data.classes.length;
  const confusion = Array.from({ length: k }, () => new Array<number>(k).fill(0));
  let logLoss = 0;
  for (const i of rows) {
    const p = probabilities(model, data.features[i]!);
    const predicted = p.indexOf(Math.max(...p));
    confusion[data.labels[i]!]![predicted]! += 1;
    logLoss -= Math.log(Math.max(p[data.labels[i]!]!, 1e-15));
  }
  let correct = 0;
  let f1Sum = 0;
  for (let c = 0; c < k; c++) {
    correct += confusion[c]![c]!;
    const tp = confusion[c]![c]!;
    const predictedC = confusion.reduce((s, row) => s + row[c]!, 0);
    const actualC = confusion[c]!.reduce((s, v) => s + v, 0);
    const precision = predictedC ? tp / predictedC : 0;
    const recall = actualC ? tp / actualC : 0;
    f1Sum += precision + recall ? (2 * precision * recall) / (precision + recall) : 0;
  }
  return { accuracy: correct / rows.length, macro_f1: f1Sum / k, log_loss: logLoss / rows.length };
}

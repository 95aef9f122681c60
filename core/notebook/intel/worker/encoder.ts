/**
 * The row encoder shared by the scoring inside the worker and the training code handed to the
 * user. It is kept as JavaScript source so the cell the user runs encodes rows exactly as the
 * cross-validation that scored the model did (one text, no drift between two copies).
 */
export type FeatureSpec =
  | { name: string; kind: 'number' | 'date'; fill: number; mean: number; std: number }
  | { name: string; kind: 'onehot'; levels: string[] };

export interface EncoderSpec {
  features: FeatureSpec[];
}

export const ENCODER_SOURCE = `function _encode(spec, row) {
  // numbers and dates: standardised, missing → the training median; categories: one-hot over the known levels
  const out = [];
  for (const f of spec.features) {
    const v = row[f.name];
    if (f.kind === 'onehot') {
      for (const level of f.levels) out.push(v != null && String(v) === level ? 1 : 0);
      continue;
    }
    let x = v instanceof Date ? v.getTime()
      : f.kind === 'date' ? (typeof v === 'string' ? Date.parse(v) : Number.NaN)
      : typeof v === 'number' ? v
      : typeof v === 'boolean' ? Number(v)
      : typeof v === 'string' && v.trim() !== '' ? Number(v.replace(/,/g, ''))
      : Number.NaN;
    if (!Number.isFinite(x)) x = f.fill;
    out.push((x - f.mean) / f.std);
  }
  return out;
}`;

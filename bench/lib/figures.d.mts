/** Types of bench/lib/figures.mjs (plain JavaScript so unbundled benchmarks can import it). */
export declare const FIGURES_ENV: 'BENCH_FIGURES_FILE';
export declare const PROFILE_ENV: 'BENCH_PROFILE_DIR';
export declare function profileArgs(): string[];

export interface Target {
  /** Whether the limit applies to the figure itself or to its ratio against the baseline. */
  on: 'value' | 'ratio';
  op: '<=' | '<' | '>=' | '>' | '=';
  limit: number;
  /** Unit printed after a value limit ("ms"); ratio limits print "×". */
  unit?: string;
}

export interface FigureInput {
  name: string;
  value: number;
  unit: string;
  baseline?: { label: string; value: number } | null;
  ratio?: number | null;
  target?: Target | null;
  /** Further conditions the figure must meet to pass (every event delivered, …). */
  also?: Array<{ label: string; pass: boolean }>;
  /** The human figure text; defaults to "value unit vs baseline". */
  detail?: string | null;
}

export interface Figure {
  name: string;
  value: number;
  unit: string;
  baseline: { label: string; value: number } | null;
  ratio: number | null;
  target: (Target & { text: string }) | null;
  also: Array<{ label: string; pass: boolean }>;
  /** null for context figures (no target). */
  pass: boolean | null;
  detail: string | null;
}

export declare function show(x: number | null | undefined): string;
export declare function targetText(target: Target | null): string;
export declare function evaluate(input: FigureInput): Figure;
export declare function record(input: FigureInput): Figure;
export declare function report(input: FigureInput): Figure;

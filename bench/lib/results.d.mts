/** Types of bench/lib/results.mjs. */
import type { Figure } from './figures.mjs';

export interface Machine {
  cpus: number;
  cpu_model: string;
  memory_gb: number;
  node: string;
  platform: string;
  loadavg: number[];
}
export interface StoredFigure extends Figure {
  /** The benchmark file that recorded it. */
  bench: string;
  machine?: Machine;
  date?: string;
  /** HEAD when measured; dirty when tracked files differed from it. */
  revision?: { commit: string; dirty: boolean } | null;
}
export interface Results {
  schema: 1;
  updated: string | null;
  figures: StoredFigure[];
}
export declare const SCHEMA: 1;
export declare const TABLE_START: string;
export declare const TABLE_END: string;
export declare function machine(): Machine;
export declare function readResults(file: string): Results;
export declare function mergeResults(previous: Results, run: { date: string; benches: string[]; figures: StoredFigure[] }): Results;
export declare function verdict(figure: Figure): 'PASS' | 'MISS' | 'context';
export declare function summaryTable(figures: StoredFigure[]): string;
export declare function markdownTable(results: Results): string;
export declare function replaceTable(readme: string, results: Results): string;

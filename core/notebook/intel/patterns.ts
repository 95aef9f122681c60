/**
 * Reusable analysis patterns: named groups of cells with tags, a problem type and a data type,
 * stored in the workspace store, searchable, and inserted into a notebook at a position.
 *
 * Cells may hold `{{placeholder}}`s (e.g. `{{data}}` for the variable to work on); applying a
 * pattern requires a value for each, so inserted cells never reference a name the user does not
 * have. Starter patterns are written to the store once, the first time a workspace starts; a user
 * may delete or replace them like any other pattern.
 */
import { fail } from '../../kernel/errors.js';
import type { Collection, Store } from '../../kernel/store.js';
import type { Cell } from '../schemas.js';
import type { NotebookService } from '../service.js';
import type { PatternCreateBody } from './schemas.js';
import { STARTER_PATTERNS } from './starters.js';

export interface Pattern extends PatternCreateBody {
  id: string;
  /** `{{name}}` placeholders found in the cells, in first-seen order. */
  params: string[];
  starter: boolean;
  created_at: string;
}

const PLACEHOLDER = /\{\{\s*([A-Za-z_$][\w$]*)\s*\}\}/g;

export function slugOf(name: string): string {
  return (
    name
      .toLowerCase()
      .normalize('NFKD')
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 80) || 'pattern'
  );
}

function paramsOf(cells: PatternCreateBody['cells']): string[] {
  const found = new Set<string>();
  for (const cell of cells) for (const m of cell.source.matchAll(PLACEHOLDER)) found.add(m[1]);
  return [...found];
}

const tokens = (text: string) =>
  text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((t) => t.length > 1);

export class PatternService {
  readonly #patterns: Collection<Pattern>;
  readonly #meta: Collection<{ seeded_at: string }>;

  constructor(
    store: Store,
    private readonly notebooks: NotebookService,
  ) {
    this.#patterns = store.collection<Pattern>('notebook_patterns');
    this.#meta = store.collection<{ seeded_at: string }>('notebook_patterns_meta');
  }

  /** Write the starter patterns once per workspace (a deleted starter stays deleted). */
  async seed(): Promise<void> {
    if (await this.#meta.has('starters')) return;
    for (const body of STARTER_PATTERNS) {
      const id = slugOf(body.name);
      if (!(await this.#patterns.has(id))) await this.#patterns.put(id, this.#record(id, body, true));
    }
    await this.#meta.put('starters', { seeded_at: new Date().toISOString() });
  }

  #record(id: string, body: PatternCreateBody, starter: boolean): Pattern {
    return { id, ...body, params: paramsOf(body.cells), starter, created_at: new Date().toISOString() };
  }

  async list(): Promise<Pattern[]> {
    return (await this.#patterns.list()).sort((a, b) => a.name.localeCompare(b.name));
  }

  async get(id: string): Promise<Pattern> {
    const pattern = await this.#patterns.get(id);
    if (!pattern) throw fail('HANGAR_NOTEBOOK_INTEL_PATTERN_NOT_FOUND', { pattern: id });
    return pattern;
  }

  async create(body: PatternCreateBody): Promise<Pattern> {
    const lower = body.name.toLowerCase();
    const clash = (await this.#patterns.list()).find((p) => p.name.toLowerCase() === lower);
    if (clash) throw fail('HANGAR_NOTEBOOK_INTEL_PATTERN_EXISTS', { name: clash.name, pattern: clash.id });
    let id = slugOf(body.name);
    for (let i = 2; await this.#patterns.has(id); i++) id = `${slugOf(body.name)}-${i}`;
    return this.#patterns.put(id, this.#record(id, body, false));
  }

  async delete(id: string): Promise<void> {
    if (!(await this.#patterns.delete(id))) throw fail('HANGAR_NOTEBOOK_INTEL_PATTERN_NOT_FOUND', { pattern: id });
  }

  /**
   * Rank patterns against a text query: name matches weigh most, then tags, description and cell
   * text. Filters (tags: all must be present; problem_type, data_type: exact) apply before ranking;
   * with an empty query every pattern passing the filters is returned, by name.
   */
  async search(input: {
    query: string;
    tags: string[];
    problem_type?: string;
    data_type?: string;
    limit: number;
  }): Promise<Array<Pattern & { score: number }>> {
    const wanted = tokens(input.query);
    const tagSet = input.tags.map((t) => t.toLowerCase());
    const results: Array<Pattern & { score: number }> = [];
    for (const p of await this.#patterns.list()) {
      const ptags = p.tags.map((t) => t.toLowerCase());
      if (!tagSet.every((t) => ptags.includes(t))) continue;
      if (input.problem_type && p.problem_type.toLowerCase() !== input.problem_type.toLowerCase()) continue;
      if (input.data_type && p.data_type.toLowerCase() !== input.data_type.toLowerCase()) continue;
      let score = 0;
      if (wanted.length) {
        const fields: Array<[string[], number]> = [
          [tokens(p.name), 5],
          [ptags.flatMap(tokens), 3],
          [tokens(`${p.problem_type} ${p.data_type}`), 2],
          [tokens(p.description), 1.5],
          [tokens(p.cells.map((c) => c.source).join(' ')), 0.5],
        ];
        for (const word of wanted) {
          for (const [field, weight] of fields) {
            // Exact token hits count fully, prefixes ("regress" → "regression") half.
            if (field.includes(word)) score += weight;
            else if (field.some((t) => t.startsWith(word))) score += weight / 2;
          }
        }
        if (score === 0) continue;
      }
      results.push({ ...p, score });
    }
    results.sort((a, b) => b.score - a.score || a.name.localeCompare(b.name));
    return results.slice(0, input.limit);
  }

  /** Insert the pattern's cells into a notebook (placeholders filled in), optionally running them. */
  async apply(
    id: string,
    input: { notebook: string; position?: number; params: Record<string, string>; run: boolean },
  ): Promise<{ notebook: string; cells: Array<Cell & { state: string }> }> {
    const pattern = await this.get(id);
    const missing = pattern.params.filter((p) => input.params[p] === undefined);
    if (missing.length) {
      throw fail('HANGAR_NOTEBOOK_INTEL_PATTERN_PARAMS_MISSING', {
        pattern: id,
        missing: missing.join(', '),
        example: `{"params": {"${missing[0]}": "my_table"}}`,
      });
    }
    const session = await this.notebooks.open(input.notebook);
    const start = input.position ?? session.notebook.cells.length;
    const inserted: Cell[] = [];
    for (const [i, cell] of pattern.cells.entries()) {
      const source = cell.source.replace(PLACEHOLDER, (_m, name: string) => input.params[name]);
      inserted.push(await session.addCell({ cell_type: cell.cell_type, source, index: start + i }));
    }
    if (input.run) {
      // Running a cell runs its dependents too, so later inserted cells may be done already.
      for (const cell of inserted) if (cell.cell_type === 'code' && session.state(cell.id) !== 'success') await session.runCell(cell.id);
    }
    return { notebook: input.notebook, cells: inserted.map((c) => ({ ...c, state: session.state(c.id) })) };
  }
}

/**
 * Notebook and cell records (spec 3, Part A) and the request bodies of the notebook routes.
 *
 * Outputs use Jupyter's nbformat 4 output shapes (stream, execute_result, display_data, error)
 * so the same values go to the UI, the HTML export and `.ipynb` without translation.
 *
 * Schemas only a route reads are `z.lazy`: built on first use, not at start (core/http/route.ts).
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** An 8-character id from a 36-letter alphabet (valid as an nbformat 4.5 cell id). */
export function newCellId(): string {
  const bytes = randomBytes(8);
  let id = '';
  // 256 % 36 leaves a tiny bias; ids only need to be unique within a notebook, not uniform.
  for (const byte of bytes) id += ID_ALPHABET[byte % ID_ALPHABET.length];
  return id;
}

/** The live channel of a notebook's cells (routes.ts, `notebookUpgradeHandler`). */
export const NOTEBOOK_WS_PATH = '/api/notebooks/ws';

export const CellType = z.enum(['code', 'markdown', 'raw']);
export type CellType = z.infer<typeof CellType>;

/** nbformat allows multiline strings as arrays of lines; we always store one string. */
const MultilineString = z.union([z.string(), z.array(z.string()).transform((lines) => lines.join(''))]);
const MimeBundle = z.record(z.string(), z.union([MultilineString, z.unknown()]));

export const StreamOutput = z.object({
  output_type: z.literal('stream'),
  name: z.enum(['stdout', 'stderr']),
  text: MultilineString,
});
export const DisplayDataOutput = z.object({
  output_type: z.literal('display_data'),
  data: MimeBundle,
  metadata: z.record(z.string(), z.unknown()).default({}),
});
export const ExecuteResultOutput = z.object({
  output_type: z.literal('execute_result'),
  execution_count: z.number().int().nullable(),
  data: MimeBundle,
  metadata: z.record(z.string(), z.unknown()).default({}),
});
export const ErrorOutput = z.object({
  output_type: z.literal('error'),
  ename: z.string(),
  evalue: z.string(),
  traceback: z.array(z.string()),
});
export const Output = z.discriminatedUnion('output_type', [StreamOutput, DisplayDataOutput, ExecuteResultOutput, ErrorOutput]);
export type Output = z.infer<typeof Output>;

export const Cell = z.object({
  id: z
    .string()
    .regex(/^[a-zA-Z0-9_-]{1,64}$/, 'cell ids are 1-64 letters, digits, - or _')
    .default(newCellId),
  cell_type: CellType.default('code'),
  name: z.string().default(''),
  source: z.string().default(''),
  outputs: z.array(Output).default([]),
  execution_count: z.number().int().min(0).default(0),
  metadata: z.record(z.string(), z.unknown()).default({}),
  created_at: z.iso.datetime({ offset: true }).default(() => new Date().toISOString()),
  last_executed: z.iso.datetime({ offset: true }).nullable().default(null),
});
export type Cell = z.infer<typeof Cell>;

export const Notebook = z.object({
  name: z.string().min(1).default('untitled'),
  /** A Hangar server URL the notebook runs on instead of a local kernel. */
  server: z.url().optional(),
  file_path: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).default({}),
  cells: z.array(Cell).default([]),
});
export type Notebook = z.infer<typeof Notebook>;

export const CellState = z.enum(['idle', 'queued', 'running', 'success', 'error', 'stale']);
export type CellState = z.infer<typeof CellState>;

// ---- request bodies -------------------------------------------------------------------------

export const CreateNotebookBody = z.lazy(() =>
  z.object({
    name: z
      .string()
      .regex(/^[\w.-]+$/, 'letters, digits, ".", "-" and "_" only')
      .default('untitled'),
    format: z.enum(['nb.ts', 'ipynb']).default('nb.ts'),
    cells: z.array(Cell.partial({ id: true })).optional(),
  }),
);

export const CreateCellBody = z.lazy(() =>
  z.object({
    cell_type: CellType.default('code'),
    name: z.string().default(''),
    source: z.string().default(''),
    metadata: z.record(z.string(), z.unknown()).default({}),
    /** Insert position; appended when absent. */
    index: z.number().int().min(0).optional(),
  }),
);

export const UpdateCellBody = z.lazy(() =>
  z
    .object({
      cell_type: CellType,
      name: z.string(),
      source: z.string(),
      metadata: z.record(z.string(), z.unknown()),
      /**
       * The source this edit was made from: what the editor last had from the server. An editor
       * holds typing briefly before sending it; if the file was reloaded from disk in between and
       * that reload changed this cell, the edit is kept but the session goes back to holding the
       * file's earlier version, so a save shows the conflict instead of overwriting the disk's edit
       * (`NotebookSession.updateCell`). Without it, the edit simply replaces the cell.
       */
      base_source: z.string(),
    })
    .partial(),
);
export type CellEdit = z.infer<typeof UpdateCellBody>;

export const ReorderBody = z.lazy(() => z.object({ order: z.array(z.string()).min(1) }));

/** A new value for an interactive element (`ui.slider` …), as the control sends it. */
export const UiValueBody = z.lazy(() => z.object({ value: z.unknown() }));

/** Which fix of which problem (`problems[].fixes` in GET /dependencies) to apply. */
export const FixBody = z.lazy(() => z.object({ name: z.string().min(1), action: z.enum(['rename', 'merge', 'delete']) }));

/** Element ids are `<cell id>:<n>` (core/notebook/ui-elements.ts); nbformat cell ids are [A-Za-z0-9_-]{1,64}. */
export const ELEMENT_ID = /^[A-Za-z0-9_-]{1,64}:[0-9]{1,6}$/;

/** `notebook app`'s element route (core/notebook/app-bridge.ts). */
export const AppUiParams = z.lazy(() => z.object({ element: z.string().regex(ELEMENT_ID, 'an element id is <cell id>:<n>') }));

export const SettingsBody = z.lazy(() =>
  z.object({
    /** Per-cell time limit in ms; the kernel is interrupted when a cell runs longer. 0 = none. */
    cell_timeout_ms: z
      .number()
      .int()
      .min(0)
      .max(24 * 3600_000),
  }),
);

export const RunDocumentBody = z.lazy(() =>
  z.object({
    /** File name used to pick the format (`x.nb.ts` or `x.ipynb`). */
    file_name: z.string().min(1),
    content: z.string(),
    cell_timeout_ms: z.number().int().min(0).optional(),
  }),
);

/**
 * How a save meets a file changed on disk. Without a body (or `strategy: 'refuse'`) it is refused
 * with 409; `merge` merges the disk's changes per cell (`merge.ts`), `resolutions` picking a side
 * for each cell changed on both sides (`ours`: this session's text, `theirs`: the disk's).
 */
export const SaveBody = z.lazy(() =>
  z
    .object({
      strategy: z.enum(['refuse', 'merge', 'overwrite']).default('refuse'),
      resolutions: z
        .record(z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'cell ids are 1-64 letters, digits, - or _'), z.enum(['ours', 'theirs']))
        .default({}),
    })
    .strict(),
);

// ---- query strings --------------------------------------------------------------------------

/** `?force=true` overwrites a file changed on disk since the session read it (the UI's "Overwrite"). */
export const SaveQuery = z.lazy(() =>
  z.object({
    force: z.enum(['true', 'false']).optional().catch(undefined).describe('true: overwrite even when the file changed on disk'),
  }),
);

/**
 * `?wait=false` answers 202 with the cell states at once; the outputs follow over ws. Any other
 * value waits, as the run routes always did, so a typo is never a 422.
 */
export const RunQuery = z.lazy(() =>
  z.object({
    wait: z
      .enum(['true', 'false'])
      .optional()
      .catch(undefined)
      .describe('false: answer 202 at once; outputs follow on ws /api/notebooks/ws'),
  }),
);

/**
 * The notebook runtime's worker (what Jupyter calls the kernel): runs inside a worker thread, one
 * thread per open notebook (see `runtime.ts`). Module-level state
 * here *is* the notebook's memory: `scope` holds every shared top-level name the cells defined, so
 * values persist between runs until the thread is terminated (interrupt/restart/crash).
 *
 * Each cell arrives as a program built by `analysis.ts`: `async function (__hangar, __scope)` that
 * destructures its reads from `__scope` and returns its writes. The function is compiled once per
 * distinct program with `vm.runInThisContext` under the file name `cell:<id>`, so stack frames
 * point at the cell and can be mapped back to its source lines.
 *
 * Outputs are both streamed over the run's `port`, when it has one (for live UIs), and returned
 * with the task result (authoritative). Known edge case: output from timers a cell leaves running
 * is attributed to whichever cell runs when it fires.
 */

import { Console } from 'node:console';
import { createRequire } from 'node:module';
import { isAbsolute, join, resolve as resolvePath } from 'node:path';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { runInThisContext } from 'node:vm';
import type { MessagePort } from 'node:worker_threads';
import { classifySpecifier, missingPackage } from './import-specifiers.js';
import { denoShim, tslabShim } from './kernel-shims.js';
import { helpers, type MimeBundle, renderValue } from './render.js';
import type { Output } from './schemas.js';
import { createUi, type UiElement } from './ui-elements.js';

export type RuntimeTask =
  | { op: 'init'; baseDir: string; fallbackDir: string }
  | { op: 'ping' }
  | { op: 'delete'; names: string[] }
  /** The user changed an interactive element (ui-elements.ts): set its value where cells read it. */
  | { op: 'ui-set'; id: string; value: unknown }
  /**
   * Call an analysis function (`fn` exported by the ES module file `module`) on one of the
   * notebook's values, inside this thread, so a large data frame never crosses to the server
   * thread whole: only the function's (small, cloneable) answer does. Used by the data
   * intelligence routes (core/notebook/intel).
   */
  | { op: 'call'; module: string; fn: string; name?: string; args: unknown }
  | {
      op: 'run';
      cellId: string;
      program: string;
      reads: string[];
      writes: string[];
      lineMap: number[];
      segmentMap?: Array<Array<[number, number]>>;
      executionCount: number;
      /** Values the user gave this cell's interactive elements (by element id), restored on creation. */
      uiValues?: Record<string, unknown>;
      /** Where each output is posted as it is produced (absent: nobody watches live). */
      port?: MessagePort;
    };

export interface RunResult {
  status: 'success' | 'error';
  outputs: Output[];
  /** 1-based line in the cell of the error, when known. */
  errorLine?: number;
  durationMs: number;
  /** Change of the thread's used heap across the run, in bytes (negative when a GC ran). */
  heapDeltaBytes?: number;
}

/** Answer to a `call` task: the function's value, or the name that is not defined. */
export type CallResult = { value: unknown } | { missing: string; names: string[] };

const scope: Record<string, unknown> = Object.create(null);
/** Which cell defined each name, so a re-run first removes what the cell defined last time. */
const owners = new Map<string, string>();
const defined = new Map<string, string[]>();
const compiled = new Map<string, (hangar: unknown, scope: unknown) => Promise<Record<string, unknown>>>();
const COMPILED_LIMIT = 2000;

let baseDir = process.cwd();
let fallbackDir = process.cwd();

/** The run in progress: where console output and display() calls go. */
let current: { outputs: Output[]; port: MessagePort | undefined } | undefined;

/** Record an output and stream it. */
function emit(output: Output): void {
  if (!current) return;
  current.outputs.push(output);
  current.port?.postMessage(output);
}

const streamTo = (name: 'stdout' | 'stderr') =>
  new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      emit({ output_type: 'stream', name, text: chunk.toString() });
      callback();
    },
  });

const captured = new Console({ stdout: streamTo('stdout'), stderr: streamTo('stderr'), colorMode: false });

Object.assign(globalThis, helpers, {
  display(value: unknown) {
    const data = renderValue(value);
    if (data) emit({ output_type: 'display_data', data, metadata: {} });
  },
  /** A path relative to the notebook's folder (worker threads cannot chdir, and files such as
   * data sets live next to the notebook, not where the server was started). */
  notebookPath(relativePath = '.') {
    return resolvePath(baseDir, relativePath);
  },
});
globalThis.console = captured;

const displayBundle = (data: MimeBundle) => emit({ output_type: 'display_data', data, metadata: {} });
// Notebooks from Deno's Jupyter kernel (see kernel-shims.ts).
Object.assign(globalThis, { Deno: denoShim(displayBundle, () => baseDir) });
const tslab = tslabShim(displayBundle);

/** Interactive elements alive in the kernel, by id; the cell running now and its saved values. */
const uiElements = new Map<string, UiElement>();
let uiCell: string | undefined;
let uiSaved: Record<string, unknown> = {};
const ui = createUi({
  cellId: () => uiCell,
  saved: (id) => uiSaved[id],
  register: (element) => void uiElements.set(element.id, element),
});
Object.assign(globalThis, { ui });

/** Whether Node can find `request` as a package from `dir` (its node_modules, or up the tree). */
function resolveFrom(dir: string, request: string): string | undefined {
  try {
    return createRequire(join(dir, 'noop.js')).resolve(request);
  } catch {
    // Not resolvable from here (or ESM-only without a require condition): try the next way.
    return undefined;
  }
}

async function importFrom(specifier: string): Promise<unknown> {
  if (specifier.startsWith('.') || isAbsolute(specifier)) {
    return import(pathToFileURL(resolvePath(baseDir, specifier)).href);
  }
  if (specifier.startsWith('node:')) return import(specifier);
  const kind = classifySpecifier(specifier);
  if (kind.kind === 'refused') throw Object.assign(new Error(kind.message), { name: 'ImportRefused' });
  if (kind.kind === 'other') return import(kind.request);
  if (kind.name === 'tslab') return tslab;
  // The notebook's own folder first (its node_modules), then Hangar's dependencies.
  for (const dir of [baseDir, fallbackDir]) {
    const found = resolveFrom(dir, kind.request);
    if (found) return import(pathToFileURL(found).href);
  }
  try {
    return await import(kind.request);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') throw missingPackage(kind.name, kind.version, baseDir);
    throw err;
  }
}

const hangarFor = (): { import: typeof importFrom; value: unknown } => ({ import: importFrom, value: undefined });

function compile(program: string, cellId: string) {
  let fn = compiled.get(program);
  if (!fn) {
    fn = runInThisContext(program, { filename: `cell:${cellId}` }) as typeof fn;
    if (compiled.size >= COMPILED_LIMIT) compiled.delete(compiled.keys().next().value!);
    compiled.set(program, fn!);
  }
  return fn!;
}

/** Turn a thrown value into an nbformat error whose traceback names cell lines, not program lines. */
function errorOutput(
  err: unknown,
  cellId: string,
  lineMap: number[],
  segmentMap: Array<Array<[number, number]>> | undefined,
): { output: Output; line?: number } {
  const sourceLineOf = (programLine: number, column: number): number | undefined => {
    // The last segment starting at or before the column (columns in stacks are 1-based).
    const segments = segmentMap?.[programLine - 1];
    if (segments && segments.length > 0) {
      let best = segments[0][1];
      for (const [start, line] of segments) if (start <= column - 1) best = line;
      return best;
    }
    return lineMap[programLine - 1];
  };
  const e = err instanceof Error ? err : new Error(String(err));
  const ename = e.name || 'Error';
  const evalue = err instanceof Error ? e.message : String(err);
  const frames: string[] = [];
  let line: number | undefined;
  const marker = `cell:${cellId}:`;
  for (const frame of (e.stack ?? '').split('\n').slice(1)) {
    const at = frame.indexOf(marker);
    if (at < 0) continue;
    const [programLine, column] = frame
      .slice(at + marker.length)
      .split(':')
      .map((n) => Number.parseInt(n, 10));
    const sourceLine = sourceLineOf(programLine, column);
    if (sourceLine === undefined) continue;
    line ??= sourceLine;
    const fn = /^\s*at (?:async )?([^\s(]+) \(/.exec(frame)?.[1];
    const text = `    at ${fn && fn !== 'eval' ? `${fn} ` : ''}(cell ${cellId}, line ${sourceLine})`;
    if (frames[frames.length - 1] !== text) frames.push(text);
  }
  return { output: { output_type: 'error', ename, evalue, traceback: [`${ename}: ${evalue}`, ...frames] }, line };
}

export default async function runtime(task: RuntimeTask): Promise<RunResult | CallResult | null> {
  switch (task.op) {
    case 'init':
      baseDir = task.baseDir;
      fallbackDir = task.fallbackDir;
      return null;
    case 'ping':
      return null;
    case 'ui-set': {
      const element = uiElements.get(task.id);
      if (element) element.value = task.value;
      return null;
    }
    case 'delete':
      for (const name of task.names) {
        delete scope[name];
        owners.delete(name);
      }
      return null;
    case 'run':
      return run(task);
    case 'call':
      return call(task);
    default: {
      const never: never = task;
      throw new Error(`unknown runtime task ${JSON.stringify(never)}`);
    }
  }
}

async function call(task: Extract<RuntimeTask, { op: 'call' }>): Promise<CallResult> {
  if (task.name !== undefined && !(task.name in scope)) return { missing: task.name, names: Object.keys(scope).sort() };
  const mod = (await import(pathToFileURL(task.module).href)) as Record<string, unknown>;
  const fn = mod[task.fn];
  if (typeof fn !== 'function') throw new Error(`${task.module} exports no function ${task.fn}`);
  return { value: await fn(task.name === undefined ? undefined : scope[task.name], task.args, Object.keys(scope)) };
}

async function run(task: Extract<RuntimeTask, { op: 'run' }>): Promise<RunResult> {
  const started = performance.now();
  const heapBefore = process.memoryUsage().heapUsed;
  current = { outputs: [], port: task.port };
  const outputs = current.outputs;
  const finish = (status: RunResult['status'], errorLine?: number): RunResult => {
    current = undefined;
    return {
      status,
      outputs,
      durationMs: performance.now() - started,
      heapDeltaBytes: process.memoryUsage().heapUsed - heapBefore,
      ...(errorLine ? { errorLine } : {}),
    };
  };
  // What this cell defined last time goes away first, so renamed or removed names do not linger.
  for (const name of defined.get(task.cellId) ?? []) {
    if (owners.get(name) === task.cellId) {
      delete scope[name];
      owners.delete(name);
    }
  }
  defined.delete(task.cellId);
  for (const id of uiElements.keys()) if (id.startsWith(`${task.cellId}:`)) uiElements.delete(id);
  uiCell = task.cellId;
  uiSaved = task.uiValues ?? {};
  ui.reset();
  try {
    const args: Record<string, unknown> = {};
    for (const name of task.reads) {
      if (name in scope) args[name] = scope[name];
      else if (name in globalThis) args[name] = (globalThis as Record<string, unknown>)[name];
      else throw new ReferenceError(`${name} is not defined (no cell that ran defines it)`);
    }
    const fn = compile(task.program, task.cellId);
    const hangar = hangarFor();
    const result = await fn(hangar, args);
    for (const name of task.writes) {
      scope[name] = result[name];
      owners.set(name, task.cellId);
    }
    defined.set(task.cellId, task.writes);
    const data = renderValue(hangar.value);
    if (data) emit({ output_type: 'execute_result', execution_count: task.executionCount, data, metadata: {} });
    return finish('success');
  } catch (err) {
    const { output, line } = errorOutput(err, task.cellId, task.lineMap, task.segmentMap);
    emit(output);
    return finish('error', line);
  }
}

/**
 * Everything the data-intelligence routes call inside a notebook's kernel thread, as one module:
 * `bundle.ts` builds this file (and what it imports) into one ES module the kernel imports by path.
 *
 * Each export answers `{ ok: value }` or `{ error: { status, message } }`: an error's own fields do
 * not survive the trip between threads, and the route needs the status (404/422) of bad input.
 */
import { algorithmMatch } from './algomatch.js';
import { AnalysisError } from './frame.js';
import { smartprep } from './smartprep.js';
import { validateFrame } from './validate.js';

export type WorkerAnswer<T> = { ok: T } | { error: { status: number; message: string } };

function answer<A, T>(fn: (value: unknown, args: A) => T) {
  return (value: unknown, args: A): WorkerAnswer<T> => {
    try {
      return { ok: fn(value, args) };
    } catch (err) {
      if (err instanceof AnalysisError) return { error: { status: err.status, message: err.message } };
      throw err;
    }
  };
}

/** Whether the kernel defines the name: the kernel answers `missing` before calling this. */
export const presentCall = (): WorkerAnswer<true> => ({ ok: true });

export const smartprepCall = answer(smartprep);
export const algorithmMatchCall = answer(algorithmMatch);
export const validateCall = answer(validateFrame);

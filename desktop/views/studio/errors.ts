import { ApiError } from '../api.js';

/** One line for a failed call: the API's `detail` with its status, or the error's message. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) return `${err.status}: ${typeof err.detail === 'string' ? err.detail : JSON.stringify(err.detail)}`;
  return err instanceof Error ? err.message : String(err);
}

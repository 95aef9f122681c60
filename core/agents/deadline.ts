/**
 * A run's deadline: at `timeoutMs` its signal aborts and the caller is answered with the 504 at
 * once, whatever the agent does afterwards (see "Deadlines" in `service.ts`).
 */
import { fail } from '../kernel/errors.js';
import type { Engine, RunOutcome, RunRequest } from './engine.js';

/**
 * Run `request` on `engine` within `timeoutMs`, handing the race between the run and its deadline to
 * `settle` (which counts it); frames the run emits past the deadline are dropped.
 *
 * Per run this costs one controller, one timer and one promise: the 504 is made when the deadline
 * passes (an error's stack trace cost more than the rest of a no-op /invoke, #27), the caller's
 * signal is forwarded to the run's by a listener rather than combined with `AbortSignal.any`, and
 * the race is one promise settled by whichever comes first rather than `Promise.race` over a
 * second promise for the deadline (fewer objects per run for the collector, #27).
 */
export async function runWithDeadline(
  engine: Engine,
  request: RunRequest,
  timeoutMs: number,
  settle: (running: Promise<RunOutcome>) => Promise<RunOutcome>,
): Promise<RunOutcome> {
  const run = new AbortController();
  let expired = false;
  let done!: (outcome: RunOutcome) => void;
  let expire!: (error: unknown) => void;
  const first = new Promise<RunOutcome>((resolve, reject) => {
    done = resolve;
    expire = reject;
  });
  const timer = setTimeout(() => {
    const error = fail('HANGAR_AGENT_TIMEOUT', { agent: request.agent.name, ms: timeoutMs });
    expired = true;
    run.abort(error);
    expire(error);
  }, timeoutMs);
  const caller = request.signal;
  const forward = () => run.abort(caller!.reason);
  // Stryker disable ObjectLiteral,BooleanLiteral: a signal aborts once, and the listener is removed when the run ends; `once` only says so
  if (caller?.aborted) forward();
  else caller?.addEventListener('abort', forward, { once: true });
  // Stryker restore ObjectLiteral,BooleanLiteral
  const onEvent = request.onEvent;
  // Settling `first` after the deadline does nothing; a run that ignored its signal and fails late
  // is handled here, so its rejection is never unhandled.
  engine
    .run({
      ...request,
      signal: run.signal,
      // Past the deadline the caller has its answer; frames after it would contradict that.
      onEvent: onEvent && ((event) => expired || onEvent(event)),
    })
    .then(done, expire);
  try {
    return await settle(first);
  } finally {
    clearTimeout(timer);
    caller?.removeEventListener('abort', forward);
  }
}

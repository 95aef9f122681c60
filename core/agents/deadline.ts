/**
 * A run's deadline: at `timeoutMs` its signal aborts and the caller is answered with the 504 at
 * once, whatever the agent does afterwards (see "Deadlines" in `service.ts`).
 */
import type { HangarError } from '../kernel/errors.js';
import { fail } from '../kernel/errors.js';
import type { Engine, RunOutcome, RunRequest } from './engine.js';

/**
 * Run `request` on `engine` within `timeoutMs`, handing the race between the run and its deadline to
 * `settle` (which counts it); frames the run emits past the deadline are dropped.
 *
 * Per run this costs one controller, one timer and one promise: the 504 is made when the deadline
 * passes (an error's stack trace cost more than the rest of a no-op /invoke, #27), and the caller's
 * signal is forwarded to the run's by a listener rather than combined with `AbortSignal.any`.
 */
export async function runWithDeadline(
  engine: Engine,
  request: RunRequest,
  timeoutMs: number,
  settle: (running: Promise<RunOutcome>) => Promise<RunOutcome>,
): Promise<RunOutcome> {
  const run = new AbortController();
  let expired = false;
  let expire!: (error: HangarError) => void;
  const late = new Promise<never>((_, reject) => {
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
  if (caller?.aborted) forward();
  else caller?.addEventListener('abort', forward, { once: true });
  const onEvent = request.onEvent;
  const running = engine.run({
    ...request,
    signal: run.signal,
    // Past the deadline the caller has its answer; frames after it would contradict that.
    onEvent: onEvent && ((event) => expired || onEvent(event)),
  });
  try {
    return await settle(Promise.race([running, late]));
  } finally {
    clearTimeout(timer);
    caller?.removeEventListener('abort', forward);
    // A run that ignored its signal may still reject later; nobody is waiting for it.
    // Stryker disable next-line CallExpression: equivalent today, Promise.race above already handles a late rejection; kept so a refactor away from race stays safe
    running.catch(() => {});
  }
}

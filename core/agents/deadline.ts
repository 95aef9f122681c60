/**
 * A run's deadline: at `timeoutMs` its signal aborts and the caller is answered with the 504 at
 * once, whatever the agent does afterwards (see "Deadlines" in `service.ts`).
 */
import { fail } from '../kernel/errors.js';
import type { Engine, RunOutcome, RunRequest } from './engine.js';

/**
 * Run `request` on `engine` within `timeoutMs`, handing the race between the run and its deadline to
 * `settle` (which counts it); frames the run emits past the deadline are dropped.
 */
export async function runWithDeadline(
  engine: Engine,
  request: RunRequest,
  timeoutMs: number,
  settle: (running: Promise<RunOutcome>) => Promise<RunOutcome>,
): Promise<RunOutcome> {
  const deadline = new AbortController();
  const expired = fail('HANGAR_AGENT_TIMEOUT', { agent: request.agent.name, ms: timeoutMs });
  const timer = setTimeout(() => deadline.abort(expired), timeoutMs);
  const onEvent = request.onEvent;
  const running = engine.run({
    ...request,
    signal: request.signal ? AbortSignal.any([request.signal, deadline.signal]) : deadline.signal,
    // Past the deadline the caller has its answer; frames after it would contradict that.
    onEvent: onEvent && ((event) => deadline.signal.aborted || onEvent(event)),
  });
  // Stryker disable next-line ObjectLiteral,BooleanLiteral: equivalent, a signal aborts only once so `once` changes nothing
  const late = new Promise<never>((_, reject) => deadline.signal.addEventListener('abort', () => reject(expired), { once: true }));
  try {
    return await settle(Promise.race([running, late]));
  } finally {
    clearTimeout(timer);
    // A run that ignored its signal may still reject later; nobody is waiting for it.
    // Stryker disable next-line CallExpression: equivalent today, Promise.race above already handles a late rejection; kept so a refactor away from race stays safe
    running.catch(() => {});
  }
}

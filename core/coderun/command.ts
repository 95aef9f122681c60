/**
 * Running a shell command for a tool call, a criterion or a gate: output captured (bounded), and a
 * command that hangs is killed — with its whole process group, since `npm test` forks the real test
 * runner and killing only the shell would leave it running — at its timeout or on cancellation.
 */
import { spawn } from 'node:child_process';

export interface CommandResult {
  command: string;
  /** null when killed (timeout or cancellation) or when it could not start. */
  exit_code: number | null;
  output: string;
  timed_out: boolean;
  cancelled: boolean;
  /** The shell could not start it (e.g. cwd missing). */
  spawn_error: string | null;
  ms: number;
}

/** Keep the end of the output: failures are reported last by every test runner. */
const MAX_OUTPUT = 64 * 1024;

export function runCommand(
  command: string,
  options: { cwd: string; timeoutMs: number; signal?: AbortSignal; env?: NodeJS.ProcessEnv },
): Promise<CommandResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    let output = '';
    let timedOut = false;
    let cancelled = false;
    const child = spawn('sh', ['-c', command], {
      cwd: options.cwd,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      // CI=1 keeps watch-mode test runners (vitest, jest) from waiting for input forever.
      env: { ...process.env, CI: '1', FORCE_COLOR: '0', ...options.env },
    });
    const append = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.length > MAX_OUTPUT * 2) output = output.slice(-MAX_OUTPUT);
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    const onAbort = () => {
      cancelled = true;
      killGroup();
    };
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const done = (exit: number | null, spawnError: string | null) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      const note = timedOut ? `\n[killed: timed out after ${options.timeoutMs} ms]` : cancelled ? '\n[killed: run cancelled]' : '';
      resolve({
        command,
        exit_code: timedOut || cancelled ? null : exit,
        output: (output.length > MAX_OUTPUT ? output.slice(-MAX_OUTPUT) : output) + note,
        timed_out: timedOut,
        cancelled,
        spawn_error: spawnError,
        ms: Math.round(performance.now() - started),
      });
    };
    child.on('error', (err) => done(null, err.message));
    child.on('close', (code) => done(code, null));
  });
}

import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const bin = path.join(repo, 'bin', 'hangar.mjs');

/** A real `hangar` process (bin/hangar.mjs), its output collected; `stopAll` kills what is left. */
export interface CliProcess {
  child: ChildProcess;
  exited: Promise<number>;
  /** Resolves with the first stdout line matching `pattern`. */
  line(pattern: RegExp): Promise<string>;
  out(): string;
  err(): string;
}

const children: ChildProcess[] = [];

export function runCli(args: string[], options: { env?: Record<string, string>; cwd?: string } = {}): CliProcess {
  const child = spawn(process.execPath, [bin, ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...options.env },
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)));
  const line = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const match = stdout.split('\n').find((l) => pattern.test(l));
        if (match) resolve(match);
      };
      child.stdout!.on('data', check);
      child.on('exit', () => reject(new Error(`exited before printing ${pattern}: ${stderr}`)));
      check();
    });
  return { child, exited, line, out: () => stdout, err: () => stderr };
}

/** Runs a command to its end. */
export async function cli(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = runCli(args, options);
  const code = await proc.exited;
  return { code, stdout: proc.out(), stderr: proc.err() };
}

export function stopAll(): void {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
}

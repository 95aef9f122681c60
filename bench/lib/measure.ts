import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';

/** Shared helpers for the benchmarks: medians, a workspace, the real CLI as a child process. */

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
export const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
export const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

export function report(name: string, figure: string, ratio: number, target: string, pass: boolean): void {
  console.log(`${name}: ${figure} | ratio ${round(ratio, 3)} | target ${target} | ${pass ? 'PASS' : 'MISS'}`);
}

export async function workspace(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'hangar-bench-'));
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), content);
  }
  return root;
}

export const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
export const agentFile = (reply: string) => `import { defineAgent } from 'hangar';\nexport default defineAgent({ version: ${JSON.stringify(reply)}, run: async () => ${JSON.stringify(reply)} });\n`;

/** Start a process and resolve with its URL once it prints `ready at <url>` (or a bare URL line). */
export function startProcess(args: string[], pattern = /(http:\/\/127\.0\.0\.1:\d+)/): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'], cwd: repo });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = pattern.exec(out);
      if (m) resolve({ child, url: m[1]! });
    });
    child.on('exit', (code) => reject(new Error(`process exited ${code} before ready: ${out}`)));
  });
}

export async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** Requests per second with the same autocannon client settings for every target. */
export async function throughput(url: string, seconds = 5, connections = 32): Promise<number> {
  const result = await autocannon({ url, connections, duration: seconds, pipelining: 1 });
  if (result.non2xx || result.errors) throw new Error(`non-2xx ${result.non2xx}, errors ${result.errors} for ${url}`);
  return result.requests.average;
}

export const BARE_SERVER = `require('http').createServer((q, s) => { s.setHeader('content-type', 'application/json'); s.end('{"status":"ok"}'); }).listen(0, '127.0.0.1', function () { console.log('http://127.0.0.1:' + this.address().port); });`;

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Which Chromium the browser tests drive. In order:
 * 1. `HANGAR_TEST_BROWSER`: a path to a Chromium/Chrome binary, or `system` / `bundled` to force
 *    one of the sources below (CI forces `bundled` once to prove a machine without a browser passes);
 * 2. a system Chromium or Chrome (on PATH, or Debian's /usr/bin/chromium);
 * 3. the `@sparticuz/chromium` devDependency, a Chromium build shipped inside its npm package,
 *    extracted to the OS temp folder once per test run (by test/global-setup.ts).
 * So `npm install && npm test` passes on a machine with Node and npm only.
 */
export type BrowserSource = 'HANGAR_TEST_BROWSER' | 'system' | 'bundled';
export interface TestBrowser {
  source: BrowserSource;
  executablePath: string;
  version: string;
}

const SYSTEM_NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];

export function systemBrowser(env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const name of SYSTEM_NAMES) {
    for (const dir of (env.PATH ?? '').split(path.delimiter)) {
      const candidate = dir && path.join(dir, name);
      if (candidate && existsSync(candidate)) return candidate;
    }
  }
  return undefined;
}

async function bundledBrowser(): Promise<string> {
  const { default: chromium } = await import('@sparticuz/chromium');
  return chromium.executablePath();
}

function versionOf(executable: string): string {
  try {
    return execFileSync(executable, ['--version'], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch (err) {
    throw new Error(`browser tests: ${executable} does not run (${(err as Error).message.split('\n')[0]})`);
  }
}

export async function resolveTestBrowser(env: NodeJS.ProcessEnv = process.env): Promise<TestBrowser> {
  const wanted = env.HANGAR_TEST_BROWSER?.trim();
  let source: BrowserSource;
  let executablePath: string | undefined;
  if (wanted && wanted !== 'system' && wanted !== 'bundled') {
    if (!existsSync(wanted)) throw new Error(`browser tests: HANGAR_TEST_BROWSER=${wanted} does not exist`);
    source = 'HANGAR_TEST_BROWSER';
    executablePath = wanted;
  } else if (wanted !== 'bundled' && (executablePath = systemBrowser(env))) {
    source = 'system';
  } else if (wanted === 'system') {
    throw new Error('browser tests: HANGAR_TEST_BROWSER=system but no Chromium or Chrome is on PATH');
  } else {
    source = 'bundled';
    executablePath = await bundledBrowser();
  }
  return { source, executablePath, version: versionOf(executablePath) };
}

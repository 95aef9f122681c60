import type { TestProject } from 'vitest/node';
import { resolveTestBrowser, type TestBrowser } from './support/test-browser.js';

declare module 'vitest' {
  export interface ProvidedContext {
    testBrowser: TestBrowser;
  }
}

/**
 * Resolved once per run, before any test file: extracting the bundled Chromium in two workers at
 * once would race on the same temp folder. The line printed says which browser the run drives.
 */
export default async function setup(project: TestProject): Promise<void> {
  const browser = await resolveTestBrowser();
  process.stdout.write(`browser tests: ${browser.version} (${browser.source}: ${browser.executablePath})\n`);
  project.provide('testBrowser', browser);
}

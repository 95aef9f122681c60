import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/**
 * Debian's Chromium driven by playwright-core, with a fresh profile per launch. The flags keep
 * the browser off the network and quiet (no component updates, sync or QUIC probes), since the
 * tests must pass offline. A persistent context because Playwright reserves --user-data-dir.
 */
export const CHROMIUM = process.env.HANGAR_CHROMIUM ?? '/usr/bin/chromium';
export const OUTPUT = path.resolve('test-output');

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  const profile = await mkdtemp(path.join(os.tmpdir(), 'hangar-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 820 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      '--no-first-run',
    ],
  });
  await mkdir(OUTPUT, { recursive: true });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

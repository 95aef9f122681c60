import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/**
 * The model panel of the Runs view's settings, in a real browser: the configured endpoint with
 * whether a key is set (never the key), and "Test connection" making one real request to a
 * scripted OpenAI-protocol server, success and failure said in words.
 */

let model: FakeOpenAI;
let server: TestServer;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  model = await startFakeOpenAI(() => ({ content: 'ok' }));
  server = await startTestServer({
    settings: { model: { baseUrl: model.baseUrl, model: 'fake-1', apiKey: 'sk-never-shown', retries: 0 } },
  });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await model?.close();
});

/** Signed in through a one-time login link, as the window and the printed link are. */
function openSettings(): Promise<Page> {
  return open(`?login=${server.ctx.services.get('loginLinks').mint().code}#/settings`);
}

describe('model settings panel', () => {
  it('shows the endpoint and that a key is set, never the key', async () => {
    const p = await openSettings();
    const panel = p.getByTestId('model-settings');
    await panel.getByTestId('model-endpoint').getByText(model.baseUrl).waitFor();
    expect(await panel.getByTestId('model-key').textContent()).toContain('set in the configuration');
    expect(await p.content()).not.toContain('sk-never-shown');
  });

  it('tests the connection with one real request and says it worked', async () => {
    const p = await openSettings();
    const before = model.requests.length;
    await p.getByRole('button', { name: 'Test connection' }).click();
    const outcome = p.getByTestId('model-test');
    await outcome.waitFor();
    expect(await outcome.textContent()).toMatch(/^Connected: fake-1 answered in \d+ ms \(“ok”\)\.$/);
    expect(model.requests.length).toBe(before + 1);
    expect(model.requests.at(-1)!.authorization).toBe('Bearer sk-never-shown');
    await p.screenshot({ path: path.join(OUTPUT, 'model-settings.png'), fullPage: true });
  });

  it('says in words why the connection failed', async () => {
    const p = await openSettings();
    model.enqueue({ status: 401, error: 'Incorrect API key provided' });
    await p.getByRole('button', { name: 'Test connection' }).click();
    const outcome = p.getByTestId('model-test');
    await outcome.waitFor();
    expect(await outcome.getAttribute('role')).toBe('alert');
    const text = await outcome.textContent();
    expect(text).toContain('Connection failed');
    expect(text).toContain('HTTP 401');
    expect(text).toContain('Incorrect API key provided');
  });
});

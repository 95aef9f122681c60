import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/** The studio run view in a real browser shows each tool call of the model with its arguments and result (#32). */

let model: FakeOpenAI;
let server: TestServer;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  model = await startFakeOpenAI(() => ({ content: 'no script' }));
  server = await startTestServer({
    files: {
      'agents/calc.ts': `import { defineAgent, defineTool, z } from 'hangar';
const add = defineTool({ name: 'add', description: 'Adds two numbers', input: z.object({ a: z.number(), b: z.number() }), run: ({ a, b }) => a + b });
export default defineAgent({ description: 'Adds with a tool', instructions: 'Use add.', tools: [add] });`,
    },
    settings: { model: { baseUrl: model.baseUrl, model: 'fake-1', retries: 0 } },
  });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await model?.close();
});

describe('studio run view of a tool-using agent', () => {
  it('lists the calls with arguments, then the result or the error the model was told', async () => {
    model.enqueue(
      {
        tool_calls: [
          { id: 'c1', name: 'add', arguments: { a: 2, b: 3 } },
          { id: 'c2', name: 'add', arguments: { a: 'two' } },
        ],
      },
      { content: 'It is 5.' },
    );
    const p = await open('#/studio/calc');
    await p.locator('[data-testid="graph"] g.node').first().waitFor();
    await p.getByLabel('Message', { exact: true }).fill('2 + 3?');
    await p.getByRole('button', { name: 'Send' }).click();
    await p.locator('[data-testid="run"][data-state="completed"]').waitFor({ timeout: 15_000 });
    const calls = p.getByTestId('tools').locator('li');
    expect(await calls.count()).toBe(2);
    expect(await calls.nth(0).textContent()).toContain('{"a":2,"b":3}');
    expect(await calls.nth(0).getByTestId('tool-result').textContent()).toBe('5');
    expect(await calls.nth(1).getByTestId('tool-error').textContent()).toMatch(/invalid arguments for 'add'/);
    expect(await p.getByTestId('answer').textContent()).toBe('It is 5.');
    await p.screenshot({ path: path.join(OUTPUT, 'studio-tools.png'), fullPage: true });
  });
});

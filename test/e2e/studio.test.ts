import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/**
 * The studio in a real browser against a real server: chat with the answer streaming in while the
 * graph lights up, approve and reject a human step, breakpoints with a state edit, and re-running
 * from a checkpoint.
 */

const files = {
  // Answers through the configured model, which streams its tokens.
  'agents/talker.ts': agentSource(`{
    description: 'Talks through the model',
    requiresModel: true,
    run: async (input, ctx) => ({ response: await ctx.model.chat([{ role: 'user', content: input.query }]) }),
  }`),
  // draft → review (a person approves) → publish.
  'agents/publisher.ts': agentSource(`{
    description: 'Publishes a note after approval',
    graph: {
      nodes: {
        draft: { run: (state) => ({ note: String(state.messages.at(-1)?.content ?? ''), response: 'Draft ready' }) },
        review: { type: 'approval', message: (state) => 'Publish "' + state.note + '"?' },
        publish: { run: (state) => ({ response: 'Published: ' + state.note }) },
      },
      edges: [{ from: 'draft', to: 'review' }, { from: 'review', to: 'publish' }],
      entry: 'draft',
    },
  }`),
};

let model: FakeOpenAI;
let server: TestServer;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  // Slow chunks, so the test sees the answer while it is still arriving.
  model = await startFakeOpenAI(() => ({ chunks: ['Hello', ', ', 'streamed ', 'world', '!'], chunkDelayMs: 500 }));
  server = await startTestServer({
    files: {
      ...files,
      'agents/studio-demo.ts': await readFile('agents/studio-demo.ts', 'utf8'),
      'agents/word-stats.ts': await readFile('agents/word-stats.ts', 'utf8'),
    },
    settings: { model: { baseUrl: model.baseUrl, model: 'fake-1', retries: 0 } },
  });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await model?.close();
});

const nodeState = (p: Page, node: string) => p.locator(`[data-testid="graph"] g.node[data-node="${node}"]`).getAttribute('data-state');

async function send(p: Page, text: string) {
  await p.getByLabel('Message', { exact: true }).fill(text);
  await p.getByRole('button', { name: 'Send' }).click();
}

describe('studio view', () => {
  it('lists the agents with their capabilities', async () => {
    const p = await open('#/studio');
    await p.getByRole('heading', { name: 'Studio', level: 1 }).waitFor();
    const demo = p.locator('.agent-grid > li', { hasText: 'studio-demo' });
    // The heading is there before the agent list has been fetched; the list comes in one render.
    await demo.locator('.chip').first().waitFor();
    expect(await demo.locator('.chip').allTextContents()).toEqual(expect.arrayContaining(['graph', 'hitl', 'subagents', 'planning']));
    expect(await p.locator('.agent-grid > li', { hasText: 'talker' }).locator('.chip').allTextContents()).toContain('model');
  });

  it('shows what runs inside a subagent node, read-only', async () => {
    const p = await open('#/studio/studio-demo');
    const inside = p.getByTestId('subgraph-analyze');
    await inside.locator('summary').click();
    const inner = p.getByTestId('subgraph-graph-analyze');
    await inner.locator('g.node').first().waitFor();
    // word-stats is a function agent: start → agent → end.
    expect(await inner.locator('g.node').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-node')))).toEqual([
      '__start__',
      'agent',
      '__end__',
    ]);
    expect(await inner.locator('g.node[role="button"]').count()).toBe(0);
    await p.screenshot({ path: path.join(OUTPUT, 'studio-subagent.png'), fullPage: true });
  });

  it('chats with an agent: the answer streams in while its node is lit', async () => {
    const p = await open('#/studio/talker');
    await p.locator('[data-testid="graph"] g.node').first().waitFor();
    const node = (await p.locator('[data-testid="graph"] g.node[role="button"]').first().getAttribute('data-node'))!;
    await p.getByLabel('Message', { exact: true }).fill('Say hello');
    await p.getByLabel('Message', { exact: true }).press('Control+Enter');

    // Part of the answer is on screen while the run is still going, with its node active… Read in
    // one snapshot inside the page, the moment it shows, so a slow test process cannot miss it.
    const midway = await p.waitForFunction(
      (n): { answer: string; node: string | null } | undefined => {
        const run = document.querySelector('[data-testid="run"][data-state="running"]');
        const answer = run?.querySelector('[data-testid="answer"]')?.textContent ?? '';
        if (!answer.includes('Hello')) return undefined;
        return {
          answer,
          node: document.querySelector(`[data-testid="graph"] g.node[data-node="${n}"]`)?.getAttribute('data-state') ?? null,
        };
      },
      node,
      { timeout: 15_000 },
    );
    const seen = (await midway.jsonValue())!;
    expect(seen.answer).not.toBe('Hello, streamed world!');
    expect(seen.node).toBe('active');
    await p.screenshot({ path: path.join(OUTPUT, 'studio-streaming.png') });
    // …then all of it, the run completed and the node done.
    await p.locator('[data-testid="run"][data-state="completed"]').waitFor({ timeout: 15_000 });
    expect(await p.getByTestId('answer').textContent()).toBe('Hello, streamed world!');
    expect(await nodeState(p, node)).toBe('visited');
    expect(model.requests.at(-1)!.body.stream).toBe(true);

    // Feedback on the answer is recorded by the server.
    await p.getByRole('button', { name: 'Good answer' }).click();
    await p.locator('button[aria-pressed="true"]', { hasText: '▲' }).waitFor();
    const recorded = await server.request('/api/v1/talker/feedback');
    expect(recorded.body.feedback[0]).toMatchObject({ response: 'Hello, streamed world!', rating: 5, query: 'Say hello' });
  });

  it('keeps conversation threads: chat on with history, fork at a message, see the lineage', async () => {
    const p = await open('#/studio/talker');
    const conv = p.getByTestId('conversations');
    const messages = conv.getByTestId('messages').locator('li');
    await conv.getByLabel('Start a conversation').fill('first question');
    await conv.getByRole('button', { name: 'Chat' }).click();
    await messages.nth(1).waitFor({ timeout: 10_000 });
    await conv.getByLabel('Continue this conversation').fill('second question');
    await conv.getByRole('button', { name: 'Chat' }).click();
    await messages.nth(3).waitFor({ timeout: 10_000 });
    expect(await messages.locator('.text').allTextContents()).toEqual([
      'first question',
      'Hello, streamed world!',
      'second question',
      'Hello, streamed world!',
    ]);
    // Both turns went to one persisted thread.
    const listed = await server.request('/api/v1/talker/threads');
    expect(listed.body.count).toBe(1);

    await conv.getByRole('button', { name: 'Fork from message 2' }).click();
    await conv.getByTestId('lineage').waitFor();
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="messages"] li').length === 2);
    // The thread list is refreshed by its own request, apart from the messages and the lineage.
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="conversations"] .conv-list .branch').length > 0);
    expect(await conv.locator('.conv-list .branch').count()).toBe(1);
    await p.screenshot({ path: path.join(OUTPUT, 'studio-conversations.png'), fullPage: true });
  });

  it('approves a suspended step; the graph and checkpoints follow the run', async () => {
    const p = await open('#/studio/studio-demo');
    await send(p, 'compare prices and book a hotel');
    const approval = p.getByTestId('approval');
    await approval.waitFor();
    expect(await approval.textContent()).toContain('Approve this brief?');
    expect(await p.getByTestId('todos').locator('li').allTextContents()).toEqual([
      expect.stringContaining('compare prices'),
      expect.stringContaining('book a hotel'),
    ]);
    expect(await p.getByTestId('tools').textContent()).toContain('write_todos');
    expect(await nodeState(p, 'plan')).toBe('visited');
    expect(await nodeState(p, 'review')).toBe('paused');
    expect(await nodeState(p, 'finalize')).toBe('idle');
    await p.getByTestId('checkpoints').locator('li', { hasText: 'review' }).waitFor();
    await p.screenshot({ path: path.join(OUTPUT, 'studio.png'), fullPage: true });

    await approval.getByRole('button', { name: 'Approve' }).click();
    await p.locator('[data-testid="run"][data-state="completed"]').waitFor();
    expect(await nodeState(p, 'finalize')).toBe('visited');
    expect(await nodeState(p, '__end__')).toBe('visited');
    // With a model configured the brief is the model's (streamed) text; finalize marks it approved.
    expect(await p.getByTestId('answer').textContent()).toContain('(approved)');
    // The timeline shows the resumed steps, newest first.
    await p.getByTestId('checkpoints').locator('li').first().filter({ hasText: 'finalize' }).waitFor();
  });

  it('rejects a suspended step with a reason', async () => {
    const p = await open('#/studio/publisher');
    await send(p, 'draft only');
    const approval = p.getByTestId('approval');
    await approval.waitFor();
    await approval.getByLabel(/Reason/).fill('not yet');
    await approval.getByRole('button', { name: 'Reject' }).click();
    await p.locator('[data-testid="run"][data-state="rejected"]').waitFor();
    expect(await nodeState(p, 'publish')).toBe('idle');
    const thread = await p.locator('.thread-pick select').inputValue();
    const state = await server.request(`/studio/agents/publisher/threads/${thread}/state`);
    expect(state.body.next).toBeNull();
  });

  it('stops at a breakpoint, takes a state edit, and continues with it', async () => {
    const p = await open('#/studio/publisher');
    const publish = p.locator('[data-testid="graph"] g.node[data-node="publish"]');
    await publish.waitFor();
    // Set the breakpoint from the keyboard.
    await publish.focus();
    await p.keyboard.press('Enter');
    expect(await publish.getAttribute('aria-pressed')).toBe('true');
    await send(p, 'first words');
    await p.getByTestId('approval').getByRole('button', { name: 'Approve' }).click();

    const paused = p.getByTestId('breakpoint');
    await paused.waitFor();
    expect(await paused.textContent()).toContain('publish');
    expect(await nodeState(p, 'publish')).toBe('paused');

    await p.getByRole('button', { name: 'Edit state' }).click();
    const editor = p.getByLabel('State (JSON)');
    const state = JSON.parse(await editor.inputValue()) as Record<string, unknown>;
    expect(state.note).toBe('first words');
    await editor.fill(JSON.stringify({ note: 'edited words' }));
    await p.getByRole('button', { name: 'Save as a new checkpoint' }).click();
    await p.getByTestId('checkpoints').locator('li').first().filter({ hasText: 'update' }).waitFor();

    await paused.getByRole('button', { name: 'Continue' }).click();
    await p.locator('[data-testid="run"][data-state="completed"]').waitFor();
    expect(await p.getByTestId('answer').textContent()).toBe('Published: edited words');
  });

  it('re-runs from an earlier checkpoint as a branch of the thread', async () => {
    const p = await open('#/studio/publisher');
    await send(p, 'branch me');
    await p.getByTestId('approval').waitFor();
    const checkpoints = p.getByTestId('checkpoints').locator('li');
    await checkpoints.filter({ hasText: 'review' }).first().waitFor();
    const before = await checkpoints.count();

    // Step 0 (the input) → runs draft again, which suspends at review again.
    await checkpoints.filter({ hasText: 'step 0' }).getByRole('button', { name: 'Re-run from here' }).click();
    await p.getByTestId('approval').waitFor();
    await p.waitForFunction((n) => document.querySelectorAll('[data-testid="checkpoints"] li').length > n, before);
    expect(await p.getByTestId('checkpoints').locator('.branch').first().textContent()).toBe('from step 0');
    await p.screenshot({ path: path.join(OUTPUT, 'studio-checkpoints.png'), fullPage: true });
  });
});

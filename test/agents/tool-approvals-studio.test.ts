/**
 * Approval-gated tools in the studio (#32): a studio run stops at a gated call with the call in
 * the pause's payload (the run view shows the arguments to edit); resuming with `arguments` runs
 * the call with the person's edit, and a rejection is told to the model and the run goes on.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StudioEvent } from '../../core/studio/events.js';
import { applyEvent, idleRun } from '../../desktop/views/studio/run-state.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';

const files: Record<string, string> = {
  'agents/mailer.ts': `import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { defineAgent, defineTool, z } from 'hangar';
const send = defineTool({
  name: 'send_email',
  description: 'Sends an email',
  input: z.object({ to: z.string().email() }),
  needsApproval: true,
  run: (args, ctx) => { appendFileSync(path.join(ctx.workspace, 'sent.log'), args.to + '\\n'); return 'sent to ' + args.to; },
});
export default defineAgent({ instructions: 'Mail.', tools: [send] });`,
};

describe('gated tool calls in the studio', () => {
  let server: TestServer;
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI(() => ({ content: 'no script' }));
    server = await startTestServer({ files, settings: { model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 }, watch: false } });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });

  const toolMessages = () =>
    fake.requests
      .at(-1)!
      .body.messages.filter((m) => m.role === 'tool')
      .map((m) => [m.tool_call_id, m.content]);

  it('pauses with the call as payload; resuming with edited arguments runs it with them; a rejection goes to the model', async () => {
    fake.enqueue({ tool_calls: [{ id: 's1', name: 'send_email', arguments: { to: 'ada@example.com' } }] }, { content: 'Sent.' });
    const started = await server.request('/studio/agents/mailer/runs', {
      method: 'POST',
      json: { query: 'mail', thread_id: 'studio-mail' },
    });
    const view = (started.body.events as StudioEvent[]).reduce(applyEvent, idleRun);
    expect(view.paused).toMatchObject({
      node: 'agent',
      reason: 'interrupt',
      payload: { kind: 'tool_call', tool: 'send_email', call_id: 's1', arguments: { to: 'ada@example.com' } },
    });

    const resumed = await readSse(`${server.url}/studio/agents/mailer/threads/studio-mail/resume`, {
      json: { action: 'approve', arguments: { to: 'grace@example.com' } },
    });
    expect(resumed.status).toBe(200);
    expect(resumed.frames.map((f) => f.data).find((e) => e.type === 'run_complete')).toMatchObject({
      status: 'completed',
      response: 'Sent.',
    });
    expect(toolMessages()).toEqual([['s1', 'sent to grace@example.com']]);
    expect(await readFile(path.join(server.root, 'sent.log'), 'utf8')).toBe('grace@example.com\n');

    fake.enqueue({ tool_calls: [{ id: 's2', name: 'send_email', arguments: { to: 'ceo@example.com' } }] }, { content: 'Did not send.' });
    await server.request('/studio/agents/mailer/runs', { method: 'POST', json: { query: 'mail the ceo', thread_id: 'studio-mail' } });
    const rejected = await readSse(`${server.url}/studio/agents/mailer/threads/studio-mail/resume`, {
      json: { action: 'reject', reason: 'not the CEO' },
    });
    expect(rejected.frames.map((f) => f.data).find((e) => e.type === 'run_complete')).toMatchObject({
      status: 'completed',
      response: 'Did not send.',
    });
    expect(toolMessages()).toEqual([['s2', JSON.stringify({ error: 'denied by the user: not the CEO' })]]);
    expect(await readFile(path.join(server.root, 'sent.log'), 'utf8')).toBe('grace@example.com\n');
  });
});

/**
 * Approval-gated tools (#32, item 4): a call to a tool with `needsApproval` suspends the run
 * through the human-approval path (202, listed with the pending approvals, approve and reject
 * routes), over /invoke and over the task board. Approving runs the call (with the person's
 * edited arguments when given); rejecting tells the model "denied by the user: <reason>" and the
 * run goes on. A side-effect file proves each approved call ran exactly once.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

const files: Record<string, string> = {
  'agents/mailer.ts': `import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { defineAgent, defineTool, z } from 'hangar';
const record = (ctx, line) => appendFileSync(path.join(ctx.workspace, 'effects.log'), JSON.stringify(line) + '\\n');
const send = defineTool({
  name: 'send_email',
  description: 'Sends an email',
  input: z.object({ to: z.string().email(), body: z.string() }),
  needsApproval: true,
  run: (args, ctx) => { record(ctx, { send: args }); return 'sent to ' + args.to; },
});
const deploy = defineTool({
  name: 'deploy',
  description: 'Deploys a build',
  input: z.object({ target: z.enum(['staging', 'prod']) }),
  needsApproval: (args) => args.target === 'prod',
  run: (args, ctx) => { record(ctx, { deploy: args.target }); return 'deployed to ' + args.target; },
});
export default defineAgent({ instructions: 'Help with mail and deploys.', tools: [send, deploy] });`,
};

describe('tools that need a person’s approval', () => {
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
  beforeEach(async () => {
    await server.write('effects.log', '');
  });

  const post = (p: string, json: unknown = {}) => server.request(p, { method: 'POST', json });
  const effects = async () =>
    (await readFile(path.join(server.root, 'effects.log'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  /** What the model was sent as results of tool calls in its newest request. */
  const toolMessages = () =>
    fake.requests
      .at(-1)!
      .body.messages.filter((m) => m.role === 'tool')
      .map((m) => [m.tool_call_id, m.content]);
  const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, name, arguments: args });

  it('over /invoke: the call suspends the run (202, listed with its tool and arguments); approving runs it once', async () => {
    fake.enqueue({ tool_calls: [call('m1', 'send_email', { to: 'ada@example.com', body: 'hi' })] }, { content: 'Mail sent.' });
    const suspended = await post('/api/v1/mailer/invoke', { query: 'mail Ada' });
    expect(suspended.status).toBe(202);
    const detail = suspended.body.detail;
    expect(detail).toMatchObject({
      status: 'suspended',
      node_name: 'agent',
      message: `Run tool 'send_email' with {"to":"ada@example.com","body":"hi"}?`,
    });
    expect(await effects()).toEqual([]);

    const listed = (await server.request('/api/v1/approvals')).body.approvals.find((a: { id: string }) => a.id === detail.approval_id);
    expect(listed.payload).toEqual({
      kind: 'tool_call',
      node: 'agent',
      call_id: 'm1',
      tool: 'send_email',
      arguments: { to: 'ada@example.com', body: 'hi' },
    });
    const pending = await server.request(`/api/v1/mailer/threads/${detail.thread_id}/pending`);
    expect(pending.body.pending[0].payload).toMatchObject({ kind: 'tool_call', tool: 'send_email' });

    const approved = await post(detail.links.approve, { approval_id: detail.approval_id });
    expect(approved.status).toBe(200);
    expect(approved.body.response).toBe('Mail sent.');
    expect(await effects()).toEqual([{ send: { to: 'ada@example.com', body: 'hi' } }]);
    expect(toolMessages()).toEqual([['m1', 'sent to ada@example.com']]);
    // The decision belongs to the call, not the run's state.
    expect(approved.body.metadata.hitl_approved).toBeUndefined();
  });

  it('the person may edit the arguments on approve; an edit the schema refuses is the call’s error, and nothing runs', async () => {
    fake.enqueue({ tool_calls: [call('e1', 'send_email', { to: 'ada@example.com', body: 'hi' })] }, { content: 'Sent the edited one.' });
    const first = (await post('/api/v1/mailer/invoke', { query: 'mail' })).body.detail;
    const approved = await post(first.links.approve, {
      approval_id: first.approval_id,
      arguments: { to: 'grace@example.com', body: 'hello' },
    });
    expect(approved.body.response).toBe('Sent the edited one.');
    expect(await effects()).toEqual([{ send: { to: 'grace@example.com', body: 'hello' } }]);
    expect(toolMessages()).toEqual([['e1', 'sent to grace@example.com']]);

    fake.enqueue({ tool_calls: [call('e2', 'send_email', { to: 'ada@example.com', body: 'hi' })] }, { content: 'Could not send.' });
    const second = (await post('/api/v1/mailer/invoke', { query: 'mail' })).body.detail;
    const refused = await post(second.links.approve, { approval_id: second.approval_id, arguments: { to: 'not an address', body: 'x' } });
    expect(refused.body.response).toBe('Could not send.');
    const [[id, content]] = toolMessages();
    expect(id).toBe('e2');
    expect(JSON.parse(content!).error).toMatch(/arguments the user approved are invalid for 'send_email'/);
    expect(await effects()).toHaveLength(1);
  });

  it('over /invoke: rejecting tells the model "denied by the user: <reason>" and the run goes on', async () => {
    fake.enqueue({ tool_calls: [call('r1', 'deploy', { target: 'prod' })] }, { content: 'Understood, no deploy.' });
    const detail = (await post('/api/v1/mailer/invoke', { query: 'ship it' })).body.detail;
    const rejected = await post(detail.links.reject, { approval_id: detail.approval_id, reason: 'freeze week' });
    expect(rejected.status).toBe(200);
    expect(rejected.body.response).toBe('Understood, no deploy.');
    expect(toolMessages()).toEqual([['r1', JSON.stringify({ error: 'denied by the user: freeze week' })]]);
    expect(await effects()).toEqual([]);
    // approved: false on approve is a rejection too, without a reason.
    fake.enqueue({ tool_calls: [call('r2', 'deploy', { target: 'prod' })] }, { content: 'Fine.' });
    const again = (await post('/api/v1/mailer/invoke', { query: 'ship it' })).body.detail;
    const declined = await post(again.links.approve, { approval_id: again.approval_id, approved: false });
    expect(declined.body.response).toBe('Fine.');
    expect(toolMessages()).toEqual([['r2', JSON.stringify({ error: 'denied by the user: no reason given' })]]);
  });

  it('needsApproval as a function asks only when it says so', async () => {
    fake.enqueue({ tool_calls: [call('s1', 'deploy', { target: 'staging' })] }, { content: 'On staging.' });
    const res = await post('/api/v1/mailer/invoke', { query: 'stage it' });
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('On staging.');
    expect(await effects()).toEqual([{ deploy: 'staging' }]);
  });

  it('two gated calls in one step ask one after the other; a gated call in a later step after an approved one gets its own decision', async () => {
    fake.enqueue(
      {
        tool_calls: [
          call('p1', 'deploy', { target: 'prod' }),
          call('p2', 'send_email', { to: 'ops@example.com', body: 'deployed' }),
          call('p3', 'deploy', { target: 'staging' }),
        ],
      },
      { tool_calls: [call('p4', 'send_email', { to: 'ceo@example.com', body: 'done' })] },
      { content: 'All done.' },
    );
    const first = (await post('/api/v1/mailer/invoke', { query: 'release' })).body.detail;
    expect(first.message).toMatch(/deploy/);
    const second = await post(first.links.approve, { approval_id: first.approval_id });
    expect(second.status).toBe(202);
    expect(second.body.detail.message).toMatch(/send_email.*ops@example.com/);
    expect(await effects()).toEqual([]);
    const third = await post(first.links.approve, { approval_id: second.body.detail.approval_id });
    expect(third.status).toBe(202);
    // Step one's three calls ran once each; step two's call waits for its own decision.
    expect(third.body.detail.message).toMatch(/send_email.*ceo@example.com/);
    expect(await effects()).toHaveLength(3);
    const done = await post(first.links.reject, { approval_id: third.body.detail.approval_id, reason: 'not the CEO' });
    expect(done.body.response).toBe('All done.');
    expect((await effects()).map((e) => e.deploy ?? e.send.to).sort()).toEqual(['ops@example.com', 'prod', 'staging']);
    expect(toolMessages()).toEqual([
      ['p1', 'deployed to prod'],
      ['p2', 'sent to ops@example.com'],
      ['p3', 'deployed to staging'],
      ['p4', JSON.stringify({ error: 'denied by the user: not the CEO' })],
    ]);
  });

  const waitSettled = (id: string) =>
    eventually(async () => {
      const r = await server.request(`/api/v1/tasks/${id}`);
      return ['input-required', 'completed', 'failed', 'canceled'].includes(r.body.status) && r.body;
    });

  it('over the task board: the task waits input-required; approving completes it with the call made once', async () => {
    fake.enqueue({ tool_calls: [call('t1', 'send_email', { to: 'ada@example.com', body: 'task' })] }, { content: 'Task mail sent.' });
    const submitted = await post('/api/v1/mailer/invoke/async', { query: 'mail Ada' });
    expect(submitted.status).toBe(202);
    const waiting = await waitSettled(submitted.body.id);
    expect(waiting.status).toBe('input-required');
    const detail = waiting.result.detail;
    expect(detail.message).toMatch(/send_email/);
    const listed = (await server.request('/api/v1/approvals')).body.approvals.find((a: { id: string }) => a.id === detail.approval_id);
    expect(listed).toMatchObject({ task_id: submitted.body.id, payload: { kind: 'tool_call', tool: 'send_email' } });

    const approved = await post(detail.links.approve, { approval_id: detail.approval_id });
    expect(approved.body.response).toBe('Task mail sent.');
    const finished = await waitSettled(submitted.body.id);
    expect(finished).toMatchObject({ status: 'completed', result: { response: 'Task mail sent.' } });
    expect(await effects()).toEqual([{ send: { to: 'ada@example.com', body: 'task' } }]);
  });

  it('over the task board: rejecting completes the task (the model was told), it is not canceled', async () => {
    fake.enqueue({ tool_calls: [call('t2', 'deploy', { target: 'prod' })] }, { content: 'Left prod alone.' });
    const submitted = await post('/api/v1/mailer/invoke/async', { query: 'ship' });
    const detail = (await waitSettled(submitted.body.id)).result.detail;
    const rejected = await post(detail.links.reject, { approval_id: detail.approval_id, reason: 'not now' });
    expect(rejected.body.response).toBe('Left prod alone.');
    const finished = await waitSettled(submitted.body.id);
    expect(finished).toMatchObject({ status: 'completed', result: { response: 'Left prod alone.' } });
    expect(toolMessages()).toEqual([['t2', JSON.stringify({ error: 'denied by the user: not now' })]]);
    expect(await effects()).toEqual([]);
  });
});

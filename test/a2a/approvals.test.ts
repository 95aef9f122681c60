import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { type Message, type Part, Role, type Task, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';

/**
 * Issue #21, human approval over every protocol: a run that suspends is findable and decidable
 * whichever route started it — /invoke/async and the REST A2A routes end `input-required` naming
 * the approval, A2A JSON-RPC continues the task on a reply with its `taskId`, MCP returns the
 * approval and decides it with a tool, and GET /api/v1/approvals lists what is pending.
 */
const gatekeeper = agentSource(`{
  description: 'Drafts, asks twice, then publishes',
  graph: {
    nodes: {
      draft: () => ({ response: 'drafted' }),
      approve: { type: 'approval', message: 'Publish it?' },
      publish: (s) => ({ response: 'published' + (s.metadata.by ? ' by ' + String(s.metadata.by) : '') }),
      archive_ok: { type: 'approval', message: 'Archive it?' },
      archive: (s) => ({ response: s.response + ' and archived' }),
    },
    edges: [{ from: 'draft', to: 'approve' }, { from: 'approve', to: 'publish' }, { from: 'publish', to: 'archive_ok' }, { from: 'archive_ok', to: 'archive' }],
    entry: 'draft',
  },
}`);
const files = {
  'agents/gatekeeper.ts': gatekeeper,
  'agents/echo.ts': agentSource(`{ run: async (input) => 'echo: ' + input.query }`),
};

const TOKENS = { alice: 'alice-secret-token', bob: 'bob-secret-token' };

describe('human approval over every protocol', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false } });
  });
  afterAll(() => server.stop());

  const post = (p: string, json: unknown = {}) => server.request(p, { method: 'POST', json });
  const waitSettled = (id: string) =>
    eventually(async () => {
      const r = await server.request(`/api/v1/tasks/${id}`);
      return ['input-required', 'completed', 'failed', 'canceled'].includes(r.body.status) && r.body;
    });

  it('/invoke/async ends input-required naming the approval; approving it on its link completes the same task', async () => {
    const submitted = await post('/api/v1/gatekeeper/invoke/async', { query: 'post it' });
    expect(submitted.status).toBe(202);
    const waiting = await waitSettled(submitted.body.id);
    expect(waiting.status).toBe('input-required');
    const detail = waiting.result.detail;
    expect(detail).toMatchObject({ status: 'suspended', node_name: 'approve', message: 'Publish it?' });
    expect(detail.approval_id).toEqual(expect.any(String));
    expect(detail.thread_id).toEqual(expect.any(String));
    expect(detail.links.approve).toBe(`/api/v1/gatekeeper/threads/${detail.thread_id}/approve`);
    // The board's result route answers for a waiting task too: its result is what it waits for.
    expect((await server.request(`/api/v1/tasks/${submitted.body.id}/result`)).body).toMatchObject({
      status: 'input-required',
      result: { detail: { approval_id: detail.approval_id } },
    });

    const listed = await server.request('/api/v1/approvals');
    expect(listed.body.approvals.find((a: { id: string }) => a.id === detail.approval_id)).toMatchObject({
      agent: 'gatekeeper',
      thread_id: detail.thread_id,
      message: 'Publish it?',
      source: 'invoke/async',
      task_id: submitted.body.id,
      links: { approve: detail.links.approve, reject: detail.links.reject, task: `/api/v1/tasks/${submitted.body.id}` },
    });

    // The approve route answers like an approve of a plain invoke: the next suspension's 202.
    const approved = await post(detail.links.approve, { approval_id: detail.approval_id, context: { by: 'ada' } });
    expect(approved.status).toBe(202);
    expect(approved.body.detail).toMatchObject({ status: 'suspended', node_name: 'archive_ok', thread_id: detail.thread_id });
    const again = await server.request(`/api/v1/tasks/${submitted.body.id}`);
    expect(again.body).toMatchObject({
      status: 'input-required',
      result: { detail: { approval_id: approved.body.detail.approval_id, message: 'Archive it?' } },
    });

    const done = await post(detail.links.approve, { approval_id: approved.body.detail.approval_id });
    expect(done.status).toBe(200);
    expect(done.body.response).toBe('published by ada and archived');
    const finished = await server.request(`/api/v1/tasks/${submitted.body.id}/result`);
    expect(finished.body).toMatchObject({ status: 'completed', result: { response: 'published by ada and archived' }, error: null });
    const remaining = (await server.request('/api/v1/approvals')).body.approvals.map((a: { id: string }) => a.id);
    expect(remaining).not.toContain(detail.approval_id);
    expect(remaining).not.toContain(approved.body.detail.approval_id);
  });

  it('REST A2A tasks report input-required with the approval; rejecting ends the task canceled with the reason', async () => {
    const { body } = await post('/api/v1/gatekeeper/a2a/tasks?wait=true', { message: { text: 'post' } });
    expect(body.status).toBe('input-required');
    expect(body.result).toBe('Publish it?');
    expect(body.approval).toMatchObject({
      node_name: 'approve',
      message: 'Publish it?',
      links: { reject: expect.stringMatching(/\/reject$/) },
    });
    expect(body.message).toContain(body.approval.id);
    const status = await server.request(`/api/v1/gatekeeper/a2a/tasks/${body.task_id}`);
    expect(status.body).toMatchObject({ status: 'input-required', approval: { id: body.approval.id, thread_id: body.approval.thread_id } });

    const rejected = await post(body.approval.links.reject, { approval_id: body.approval.id, reason: 'not today' });
    expect(rejected.body).toEqual({ status: 'rejected', approval_id: body.approval.id, reason: 'not today' });
    const after = await server.request(`/api/v1/gatekeeper/a2a/tasks/${body.task_id}`);
    expect(after.body).toMatchObject({ status: 'canceled', error: `rejected at approval ${body.approval.id}: not today` });
  });

  it('cancelling a task that waits for approval discards the approval', async () => {
    const submitted = await post('/api/v1/gatekeeper/invoke/async', { query: 'cancel me' });
    const waiting = await waitSettled(submitted.body.id);
    const { approval_id, thread_id } = waiting.result.detail;
    const canceled = await post(`/api/v1/tasks/${submitted.body.id}/cancel`);
    expect(canceled.body).toMatchObject({ canceled: true });
    expect((await server.request(`/api/v1/tasks/${submitted.body.id}`)).body.status).toBe('canceled');
    expect((await server.request(`/api/v1/gatekeeper/threads/${thread_id}/pending`)).body.count).toBe(0);
    expect((await post(`/api/v1/gatekeeper/threads/${thread_id}/approve`, { approval_id })).status).toBe(404);
  });

  it('a studio resume of the checkpoint a task waits on ends the task, saying so', async () => {
    const submitted = await post('/api/v1/gatekeeper/invoke/async', { query: 'studio', thread_id: 'studio-kept' });
    const waiting = await waitSettled(submitted.body.id);
    expect(waiting.status).toBe('input-required');
    const resumed = await post('/studio/agents/gatekeeper/threads/studio-kept/resume', { action: 'approve', value: {} });
    expect(resumed.status).toBeLessThan(300);
    const ended = await server.request(`/api/v1/tasks/${submitted.body.id}`);
    expect(ended.body).toMatchObject({
      status: 'canceled',
      error: `approval ${waiting.result.detail.approval_id} was used up by a studio resume of its checkpoint`,
    });
  });

  it('lists pending approvals of every route newest first, per agent too, and 404s an unknown agent', async () => {
    const first = await post('/api/v1/gatekeeper/invoke', { query: 'one', thread_id: 'list-1' });
    const second = await post('/api/v1/gatekeeper/chat', { content: 'two', thread_id: 'list-2' });
    expect([first.status, second.status]).toEqual([202, 202]);
    const all = (await server.request('/api/v1/approvals')).body;
    const ids = all.approvals.map((a: { id: string }) => a.id);
    expect(ids.indexOf(second.body.detail.approval_id)).toBeLessThan(ids.indexOf(first.body.detail.approval_id));
    expect(all.approvals.find((a: { id: string }) => a.id === second.body.detail.approval_id)).toMatchObject({
      source: 'chat',
      task_id: null,
      thread_id: 'list-2',
    });
    expect(all.total).toBe(ids.length);
    const mine = (await server.request('/api/v1/gatekeeper/approvals?limit=1')).body;
    expect(mine).toMatchObject({ count: 1, limit: 1, offset: 0, total: all.total });
    expect(mine.approvals[0].id).toBe(ids[0]);
    expect((await server.request('/api/v1/echo/approvals')).body.approvals).toEqual([]);
    expect((await server.request('/api/v1/ghost/approvals')).status).toBe(404);
    expect((await server.request('/api/v1/approvals?limit=0')).status).toBe(422);
    // The 202 of a plain invoke names the thread and links as well.
    expect(first.body.detail).toMatchObject({ thread_id: 'list-1', links: { approve: '/api/v1/gatekeeper/threads/list-1/approve' } });
  });

  describe('A2A JSON-RPC with the official SDK client', () => {
    let client: Client;
    beforeAll(async () => {
      const factory = new ClientFactory({
        transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
        cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
      });
      client = await factory.createFromUrl(`${server.url}/api/v1/gatekeeper/.well-known/agent.json`, '');
    });

    const textPart = (value: string) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' }) as Part;
    const dataPart = (value: unknown) => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: '' }) as Part;
    const message = (parts: Part[], taskId = '', contextId = ''): Message => ({
      messageId: randomUUID(),
      contextId,
      taskId,
      role: Role.ROLE_USER,
      parts,
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    });
    const send = async (m: Message) =>
      (await client.sendMessage({ message: m, configuration: undefined, metadata: undefined, tenant: '' })) as Task;
    const approvalOf = (task: Task) => {
      const data = task.status!.message!.parts.find((p) => p.content?.$case === 'data')!.content!.value as {
        approval: { approval_id: string; thread_id: string };
      };
      return data.approval;
    };
    const texts = (task: Task) =>
      task.artifacts.flatMap((a) => a.parts).flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));

    it('a reply with the same taskId approves (text) and continues the task to the next approval, then to the end (data)', async () => {
      const waiting = await send(message([textPart('post it')]));
      expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      const prompt = waiting.status!.message!.parts.find((p) => p.content?.$case === 'text')!.content!.value;
      expect(prompt).toBe('Publish it?');
      const approval = approvalOf(waiting);
      expect(approval).toMatchObject({ node_name: 'approve', links: { approve: expect.stringContaining(approval.thread_id) } });

      const next = await send(message([textPart('Yes, ship it')], waiting.id, waiting.contextId));
      expect(next.id).toBe(waiting.id);
      expect(next.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      expect(approvalOf(next).approval_id).not.toBe(approval.approval_id);

      const done = await send(message([dataPart({ approved: true, context: { by: 'rpc' } })], waiting.id));
      expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(texts(done)).toEqual(['published and archived']);
      // A finished task takes no reply: the SDK server's own answer for a terminal task.
      await expect(send(message([textPart('approve')], waiting.id))).rejects.toThrow(/terminal state \(completed\) and cannot be modified/);
    });

    it('a rejecting reply ends the task canceled; a reply that decides nothing is refused and changes nothing', async () => {
      const waiting = await send(message([textPart('post it')]));
      await expect(send(message([textPart('maybe later')], waiting.id))).rejects.toThrow(
        /answer with a data part \{"approved": true\|false\} or text starting with approve\/yes or reject\/no/,
      );
      await expect(send(message([dataPart({ approved: 'sure' })], waiting.id))).rejects.toThrow(/data part must be/);
      await expect(send(message([textPart('yes')], waiting.id, 'another-context'))).rejects.toThrow(/contextId mismatch/);
      expect((await client.getTask({ id: waiting.id, tenant: '' })).status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      const rejected = await send(message([textPart('reject: wrong audience')], waiting.id));
      expect(rejected.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      const board = await server.request(`/api/v1/tasks/${waiting.id}`);
      expect(board.body.error).toBe(`rejected at approval ${approvalOf(waiting).approval_id}: wrong audience`);
    });

    it('a streamed reply follows the continued task to its final status', async () => {
      const waiting = await send(message([textPart('post it')]));
      await send(message([textPart('ok')], waiting.id));
      const states: TaskState[] = [];
      for await (const event of client.sendMessageStream({
        message: message([textPart('approve')], waiting.id),
        configuration: undefined,
        metadata: undefined,
        tenant: '',
      })) {
        const payload = event.payload!;
        if (payload.$case === 'task') states.push(payload.value.status!.state);
        if (payload.$case === 'statusUpdate') states.push(payload.value.status!.state);
      }
      expect(states[0]).toBe(TaskState.TASK_STATE_WORKING);
      expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    });

    it('an unknown task is TaskNotFound', async () => {
      await expect(send(message([textPart('yes')], 'no-such-task'))).rejects.toThrow(/not found/);
    });
  });

  describe('MCP with the official SDK client', () => {
    let mcp: McpClient;
    beforeAll(async () => {
      mcp = new McpClient({ name: 'hangar-test', version: '1.0.0' });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    });
    afterAll(() => mcp.close());

    it('a suspended tool call returns the approval as its result, and hangar.decide_approval decides it', async () => {
      const result = await mcp.callTool({ name: 'gatekeeper', arguments: { message: 'post it' } });
      expect(result.isError).toBeFalsy();
      const content = result.structuredContent as { status: string; approval: { approval_id: string; thread_id: string; message: string } };
      expect(content).toMatchObject({ status: 'input-required', approval: { node_name: 'approve', message: 'Publish it?' } });
      expect((result.content as Array<{ text: string }>)[0]!.text).toContain(content.approval.approval_id);
      const listed = (await server.request('/api/v1/approvals')).body.approvals.find(
        (a: { id: string }) => a.id === content.approval.approval_id,
      );
      expect(listed).toMatchObject({ source: 'mcp' });

      const decide = (args: Record<string, unknown>) =>
        mcp.callTool({
          name: 'hangar.decide_approval',
          arguments: { agent: 'gatekeeper', thread_id: content.approval.thread_id, ...args },
        });
      const next = await decide({ approval_id: content.approval.approval_id, approved: true, context: { by: 'mcp' } });
      const nextContent = next.structuredContent as typeof content;
      expect(nextContent).toMatchObject({ status: 'input-required', approval: { node_name: 'archive_ok' } });
      const done = await decide({ approval_id: nextContent.approval.approval_id, approved: true });
      expect(done.structuredContent).toMatchObject({ response: 'published by mcp and archived' });
      const again = await decide({ approval_id: nextContent.approval.approval_id, approved: false, reason: 'late' });
      expect(again.isError).toBe(true);
      expect((again.content as Array<{ text: string }>)[0]!.text).toMatch(/no pending approval/);
    });
  });

  describe('MCP elicitation, where the client declares it', () => {
    /** A client that answers each approval form with the next of `answers`, recording what it was asked. */
    async function elicitingClient(answers: Array<{ action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> }>) {
      const asked: string[] = [];
      const client = new McpClient({ name: 'hangar-test', version: '1.0.0' }, { capabilities: { elicitation: {} } });
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params.message);
        return answers.shift() ?? { action: 'cancel' };
      });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
      return { client, asked };
    }

    it('asks the person through the client while the call stays open; accepting continues the run to its end', async () => {
      const { client, asked } = await elicitingClient([
        { action: 'accept', content: { approved: true } },
        { action: 'accept', content: { approved: true } },
      ]);
      try {
        const result = await client.callTool({ name: 'gatekeeper', arguments: { message: 'post it' } });
        expect(result.isError).toBeFalsy();
        expect(result.structuredContent).toMatchObject({ response: 'published and archived' });
        expect(asked).toHaveLength(2);
        expect(asked[0]).toMatch(/^Publish it\? \(agent run on thread .+, approval .+\)$/);
      } finally {
        await client.close();
      }
    });

    it('a rejection (accept without approved, or decline) ends the run with the reason; cancel leaves it waiting', async () => {
      const { client } = await elicitingClient([
        { action: 'accept', content: { approved: false, reason: 'not today' } },
        { action: 'decline' },
        { action: 'cancel' },
      ]);
      try {
        const rejected = await client.callTool({ name: 'gatekeeper', arguments: { message: 'post it' } });
        expect(rejected.structuredContent).toMatchObject({ status: 'rejected', reason: 'not today' });
        const declined = await client.callTool({ name: 'gatekeeper', arguments: { message: 'post it' } });
        expect(declined.structuredContent).toMatchObject({ status: 'rejected', reason: 'declined in the MCP client' });
        const waiting = await client.callTool({ name: 'gatekeeper', arguments: { message: 'post it' } });
        expect(waiting.structuredContent).toMatchObject({ status: 'input-required', approval: { node_name: 'approve' } });
      } finally {
        await client.close();
      }
    });

    it('sessions: an unknown session id is a 404, and a new agent is a tool in an open session', async () => {
      // A server that watches its folders, so a saved agent is discovered while the session is open.
      const watching = await startTestServer({ files });
      const client = new McpClient({ name: 'hangar-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${watching.url}/mcp`)));
      try {
        expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('latecomer');
        await watching.write('agents/latecomer.ts', agentSource(`{ run: async () => 'late' }`));
        await eventually(async () => (await client.listTools()).tools.some((t) => t.name === 'latecomer'));
        expect((await client.callTool({ name: 'latecomer', arguments: { message: 'hi' } })).structuredContent).toMatchObject({
          response: 'late',
        });
      } finally {
        await client.close();
        await watching.stop();
      }
      const res = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': 'no-such-session' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(res.status).toBe(404);
    });
  });
});

describe('approvals across a restart', () => {
  it('a task waiting for approval still waits after a restart, and approving it then completes it', async () => {
    const first = await startTestServer({ files, settings: { watch: false } });
    const root = first.root;
    const submitted = await first.request('/api/v1/gatekeeper/invoke/async', { method: 'POST', json: { query: 'survive' } });
    const waiting = await eventually(async () => {
      const r = await first.request(`/api/v1/tasks/${submitted.body.id}`);
      return r.body.status === 'input-required' && r.body;
    });
    await first.close();

    const second = await startTestServer({ root, settings: { watch: false } });
    try {
      // Recovery leaves it alone: nothing was running, it waits for a person.
      expect((await second.request(`/api/v1/tasks/${submitted.body.id}`)).body.status).toBe('input-required');
      const { approval_id, links } = waiting.result.detail;
      const first_ = await second.request(links.approve, { method: 'POST', json: { approval_id } });
      expect(first_.status).toBe(202);
      const done = await second.request(links.approve, { method: 'POST', json: { approval_id: first_.body.detail.approval_id } });
      expect(done.body.response).toBe('published and archived');
      expect((await second.request(`/api/v1/tasks/${submitted.body.id}`)).body.status).toBe('completed');
    } finally {
      await second.stop();
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('approvals of several principals', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false, auth: { tokens: TOKENS } } as never });
  });
  afterAll(() => server.stop());

  const as = (who: keyof typeof TOKENS) => ({
    get: (p: string) => server.request(p, { headers: { authorization: `Bearer ${TOKENS[who]}` } }),
    post: (p: string, json: unknown) => server.request(p, { method: 'POST', json, headers: { authorization: `Bearer ${TOKENS[who]}` } }),
  });

  it('lists only the caller’s approvals, and another principal can neither decide nor continue its task', async () => {
    const alice = as('alice');
    const bob = as('bob');
    const submitted = await alice.post('/api/v1/gatekeeper/invoke/async', { query: 'secret' });
    const waiting = await eventually(async () => {
      const r = await alice.get(`/api/v1/tasks/${submitted.body.id}`);
      return r.body.status === 'input-required' && r.body;
    });
    const { approval_id, thread_id } = waiting.result.detail;
    expect((await alice.get('/api/v1/approvals')).body.approvals.map((a: { id: string }) => a.id)).toContain(approval_id);
    expect((await bob.get('/api/v1/approvals')).body).toMatchObject({ approvals: [], total: 0 });
    expect((await bob.get('/api/v1/gatekeeper/approvals')).body.approvals).toEqual([]);
    expect((await bob.post(`/api/v1/gatekeeper/threads/${thread_id}/approve`, { approval_id })).status).toBe(404);
    const reply = await bob.post('/api/v1/gatekeeper/a2a', {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: {
        message: { kind: 'message', messageId: 'm', role: 'user', taskId: submitted.body.id, parts: [{ kind: 'text', text: 'approve' }] },
      },
    });
    expect(reply.body.error.code).toBe(-32001);
    expect((await alice.get(`/api/v1/tasks/${submitted.body.id}`)).body.status).toBe('input-required');
  });

  it('the host-root A2A card is public, as the discovery document is', async () => {
    expect((await server.request('/.well-known/agent-card.json')).status).toBe(200);
    expect((await server.request('/api/v1/approvals')).status).toBe(401);
  });
});

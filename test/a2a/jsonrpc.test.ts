import { randomUUID } from 'node:crypto';
import { type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';

/**
 * The public A2A protocol binding, driven by the official JS SDK client (v1.0 SDK speaking to our
 * v0.3 JSON-RPC endpoint through its compatibility layer): discovery from the agent's well-known
 * card, send, stream, get, resubscribe and cancel.
 */
const files = {
  'agents/echo.ts': agentSource(`{
    description: 'Echoes the query',
    run: async (input, ctx) => { ctx.step('echoed'); return 'echo: ' + input.query; },
  }`),
  'agents/waiter.ts': agentSource(`{
    description: 'Answers once released, or stops when cancelled',
    // Inline (README "Isolation"): the test reaches this agent through a global of its own process.
    isolation: 'inline',
    run: (input, ctx) => new Promise((resolve, reject) => {
      const g = globalThis as any;
      g.__rpcWaiter = { release: () => resolve('released: ' + input.query) };
      ctx.signal.addEventListener('abort', () => { g.__rpcWaiterAborted = true; reject(new Error('stopped')); });
    }),
  }`),
};

const g = globalThis as { __rpcWaiter?: { release: () => void }; __rpcWaiterAborted?: boolean };

function userMessage(text: string, contextId = ''): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' } as never],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

const textOf = (task: Task): string[] =>
  task.artifacts.flatMap((a) => a.parts).flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));

async function clientFor(server: TestServer, agent: string): Promise<Client> {
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
    cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
  });
  // The agent's own well-known card (the root /.well-known/agent.json is the spec's multi-agent
  // document); a full URL with an empty path, since a leading '/' would resolve from the host root.
  return factory.createFromUrl(`${server.url}/api/v1/${agent}/.well-known/agent.json`, '');
}

describe('A2A JSON-RPC binding with the official SDK client', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false } });
  });
  afterAll(() => server.stop());

  it('serves a standard card that points at the JSON-RPC endpoint, and the Hangar card advertises it', async () => {
    const card = await server.request('/api/v1/echo/.well-known/agent-card.json');
    expect(card.body).toMatchObject({
      protocolVersion: '0.3.0',
      name: 'echo',
      description: 'Echoes the query',
      url: `${server.url}/api/v1/echo/a2a`,
      preferredTransport: 'JSONRPC',
      capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: true },
    });
    const hangarCard = await server.request('/api/v1/echo/card');
    expect(hangarCard.body.endpoints).toMatchObject({
      a2a_jsonrpc: '/api/v1/echo/a2a',
      a2a_card: '/api/v1/echo/.well-known/agent-card.json',
    });
    expect((await server.request('/api/v1/ghost/.well-known/agent-card.json')).status).toBe(404);
  });

  it('discovers the agent and sends a message: the answer comes back as a completed task', async () => {
    const client = await clientFor(server, 'echo');
    const result = (await client.sendMessage({
      message: userMessage('ping'),
      configuration: undefined,
      metadata: undefined,
      tenant: '',
    })) as Task;
    expect(result.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(result)).toEqual(['echo: ping']);
    // The same task is on the shared board and on the spec's A2A routes.
    const board = await server.request(`/api/v1/tasks/${result.id}`);
    expect(board.body).toMatchObject({ kind: 'agent', target: 'echo', status: 'completed' });
    const fetched = await client.getTask({ id: result.id, tenant: '' });
    expect(fetched.id).toBe(result.id);
    expect(fetched.contextId).toBe(result.contextId);
    expect(textOf(fetched)).toEqual(['echo: ping']);
  });

  it('streams a task: task, working, the answer as an artifact, then the final completed status', async () => {
    const client = await clientFor(server, 'echo');
    const kinds: string[] = [];
    let final: unknown;
    let answer: string | undefined;
    for await (const event of client.sendMessageStream({
      message: userMessage('stream me'),
      configuration: undefined,
      metadata: undefined,
      tenant: '',
    })) {
      const payload = event.payload!;
      kinds.push(payload.$case);
      if (payload.$case === 'artifactUpdate') {
        const part = payload.value.artifact?.parts[0]?.content;
        if (part?.$case === 'text') answer = part.value;
      }
      if (payload.$case === 'statusUpdate') final = payload.value.status?.state;
    }
    expect(kinds[0]).toBe('task');
    expect(kinds.at(-1)).toBe('statusUpdate');
    expect(kinds).toContain('artifactUpdate');
    expect(answer).toBe('echo: stream me');
    expect(final).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('resubscribes to a running task and sees it finish; cancel reaches the running agent', async () => {
    const client = await clientFor(server, 'waiter');
    const first = (await client.sendMessage({
      message: userMessage('one'),
      configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
      metadata: undefined,
      tenant: '',
    })) as Task;
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(first.status?.state);
    await eventually(() => g.__rpcWaiter);

    const states: TaskState[] = [];
    const following = (async () => {
      for await (const event of client.resubscribeTask({ id: first.id, tenant: '' })) {
        const payload = event.payload!;
        if (payload.$case === 'statusUpdate') states.push(payload.value.status!.state);
        if (payload.$case === 'task') states.push(payload.value.status!.state);
      }
    })();
    await new Promise((r) => setTimeout(r, 50));
    g.__rpcWaiter!.release();
    await following;
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);

    // A second task, cancelled while the agent works.
    g.__rpcWaiter = undefined;
    const second = (await client.sendMessage({
      message: userMessage('two'),
      configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
      metadata: undefined,
      tenant: '',
    })) as Task;
    await eventually(() => g.__rpcWaiter);
    const canceled = await client.cancelTask({ id: second.id, tenant: '', metadata: undefined } as never);
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(g.__rpcWaiterAborted).toBe(true);
    // Cancelling it again is the protocol's TaskNotCancelable error.
    await expect(client.cancelTask({ id: second.id, tenant: '', metadata: undefined } as never)).rejects.toThrow(/cannot be canceled/);
  });

  it('answers protocol errors: unknown task, another agent’s task, no text, unknown method', async () => {
    const rpc = (agent: string, method: string, params: unknown) =>
      server.request(`/api/v1/${agent}/a2a`, { method: 'POST', json: { jsonrpc: '2.0', id: 7, method, params } });
    expect((await rpc('echo', 'tasks/get', { id: 'nope' })).body).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32001, message: 'task nope not found' },
    });
    const sent = await rpc('echo', 'message/send', {
      message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'hi' }] },
    });
    expect(sent.body.result).toMatchObject({ kind: 'task', status: { state: 'completed' }, history: [{ messageId: 'm1', role: 'user' }] });
    expect((await rpc('waiter', 'tasks/get', { id: sent.body.result.id })).body.error.code).toBe(-32001);
    const empty = await rpc('echo', 'message/send', { message: { role: 'user', parts: [{ kind: 'text', text: ' ' }] } });
    expect(empty.body.error).toMatchObject({ code: -32602, message: 'params.message: no readable text (expected a text part)' });
    expect((await rpc('echo', 'tasks/frobnicate', {})).body.error).toMatchObject({ code: -32601 });
    expect((await rpc('echo', 'tasks/pushNotificationConfig/set', {})).body.error.code).toBe(-32003);
    const invalid = await server.request('/api/v1/echo/a2a', { method: 'POST', json: { id: 3, method: 'message/send' } });
    expect(invalid.body).toMatchObject({ jsonrpc: '2.0', id: 3, error: { code: -32600 } });
  });
});

describe('A2A JSON-RPC without the task subsystem', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false, tasks: { enabled: false } } });
  });
  afterAll(() => server.stop());

  it('message/send answers with a message; task methods say tracking needs a storage backend', async () => {
    const client = await clientFor(server, 'echo');
    const reply = (await client.sendMessage({
      message: userMessage('untracked'),
      configuration: undefined,
      metadata: undefined,
      tenant: '',
    })) as Message;
    const texts = reply.parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));
    expect(texts).toEqual(['echo: untracked']);
    await expect(client.getTask({ id: 'x', tenant: '' })).rejects.toThrow(/task tracking requires a storage backend/);
    const card = await server.request('/api/v1/echo/.well-known/agent-card.json');
    expect(card.body.capabilities.stateTransitionHistory).toBe(false);
  });
});

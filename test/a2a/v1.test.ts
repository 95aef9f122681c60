import { randomUUID } from 'node:crypto';
import { type Message, type Part, Role, type Task, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';

/**
 * Issue #21: A2A v1.0 beside v0.3. The official SDK's client in its default configuration (v1.0
 * JSON-RPC, no legacyCompat) discovers an agent from its well-known card and sends, streams,
 * gets, lists, cancels and continues tasks; a legacyCompat client still speaks v0.3 to the same
 * endpoint and sees the same tasks.
 */
const files = {
  'agents/echo.ts': agentSource(
    `{ description: 'Echoes the query', run: async (input, ctx) => { ctx.step('echoed'); return 'echo: ' + input.query; } }`,
  ),
  'agents/waiter.ts': agentSource(`{
    // Inline (README "Isolation"): the test reaches this agent through a global of its own process.
    isolation: 'inline',
    run: (input, ctx) => new Promise((resolve, reject) => {
      (globalThis as any).__v1Waiter = () => resolve('released');
      ctx.signal.addEventListener('abort', () => reject(new Error('stopped')));
    }),
  }`),
  'agents/gatekeeper.ts': agentSource(`{
    graph: {
      nodes: { draft: () => ({ response: 'drafted' }), approve: { type: 'approval', message: 'Publish it?' }, publish: () => ({ response: 'published' }) },
      edges: [{ from: 'draft', to: 'approve' }, { from: 'approve', to: 'publish' }],
      entry: 'draft',
    },
  }`),
};

const g = globalThis as { __v1Waiter?: () => void };

const text = (value: string) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' }) as Part;
function message(value: string, taskId = '', contextId = ''): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts: [text(value)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}
const request = (m: Message, returnImmediately = false) => ({
  message: m,
  configuration: returnImmediately
    ? { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true }
    : undefined,
  metadata: undefined,
  tenant: '',
});
const answers = (task: Task) =>
  task.artifacts.flatMap((a) => a.parts).flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));

describe('A2A v1.0 with the official SDK client in its default configuration', () => {
  let server: TestServer;
  const defaultClient = (agent: string): Promise<Client> => new ClientFactory().createFromUrl(`${server.url}/api/v1/${agent}/`);

  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false } });
  });
  afterAll(() => server.stop());

  it('serves a v1.0 card listing the JSON-RPC binding in both versions', async () => {
    const card = (await server.request('/api/v1/echo/.well-known/agent-card.json')).body;
    expect(card.supportedInterfaces).toEqual([
      { url: `${server.url}/api/v1/echo/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${server.url}/api/v1/echo/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ]);
    expect(card).toMatchObject({ name: 'echo', capabilities: { streaming: true, pushNotifications: false } });
  });

  it('sends a message and gets the completed task; GetTask and ListTasks find it', async () => {
    const client = await defaultClient('echo');
    const task = (await client.sendMessage(request(message('ping')))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(answers(task)).toEqual(['echo: ping']);
    const fetched = await client.getTask({ id: task.id, tenant: '', historyLength: undefined });
    expect(fetched).toMatchObject({ id: task.id, contextId: task.contextId });
    expect(fetched.history[0]!.role).toBe(Role.ROLE_USER);
    const listed = await client.listTasks({
      tenant: '',
      contextId: task.contextId,
      status: 0,
      pageSize: undefined,
      pageToken: '',
      historyLength: undefined,
      statusTimestampAfter: undefined,
      includeArtifacts: undefined,
    } as never);
    expect(listed.tasks.map((t) => t.id)).toEqual([task.id]);
    expect(listed.totalSize).toBe(1);
  });

  it('streams: the task, working, the answer as an artifact update, then the completed status', async () => {
    const client = await defaultClient('echo');
    const cases: string[] = [];
    let state: TaskState | undefined;
    let answer: string | undefined;
    for await (const event of client.sendMessageStream(request(message('stream me')))) {
      const payload = event.payload!;
      cases.push(payload.$case);
      if (payload.$case === 'statusUpdate') state = payload.value.status?.state;
      if (payload.$case === 'artifactUpdate') {
        const part = payload.value.artifact?.parts[0]?.content;
        if (part?.$case === 'text') answer = part.value;
      }
    }
    expect(cases[0]).toBe('task');
    expect(cases).toContain('artifactUpdate');
    expect(answer).toBe('echo: stream me');
    expect(state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('returns immediately when asked, resubscribes, and cancels a running task', async () => {
    const client = await defaultClient('waiter');
    const started = (await client.sendMessage(request(message('wait'), true))) as Task;
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(started.status?.state);
    await eventually(() => g.__v1Waiter);
    const states: TaskState[] = [];
    const following = (async () => {
      for await (const event of client.resubscribeTask({ id: started.id, tenant: '' })) {
        const payload = event.payload!;
        if (payload.$case === 'task') states.push(payload.value.status!.state);
        if (payload.$case === 'statusUpdate') states.push(payload.value.status!.state);
      }
    })();
    await new Promise((r) => setTimeout(r, 50));
    g.__v1Waiter!();
    await following;
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);

    g.__v1Waiter = undefined;
    const second = (await client.sendMessage(request(message('again'), true))) as Task;
    await eventually(() => g.__v1Waiter);
    const canceled = await client.cancelTask({ id: second.id, tenant: '', metadata: undefined } as never);
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await expect(client.getTask({ id: 'no-such-task', tenant: '', historyLength: undefined })).rejects.toThrow(/not found/);
    // A finished task cannot be subscribed to (v1.0, as the SDK's own server answers).
    const subscribe = async () => {
      for await (const _event of client.resubscribeTask({ id: second.id, tenant: '' })) {
        // nothing arrives
      }
    };
    await expect(subscribe()).rejects.toThrow(/terminal state \(canceled\) and cannot be subscribed to/);
  });

  it('an approval: the task is input-required, and a reply with its taskId continues it', async () => {
    const client = await defaultClient('gatekeeper');
    const waiting = (await client.sendMessage(request(message('post it')))) as Task;
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const parts = waiting.status!.message!.parts;
    expect(parts[0]!.content).toEqual({ $case: 'text', value: 'Publish it?' });
    expect(parts[1]!.content?.$case).toBe('data');
    const done = (await client.sendMessage(request(message('approve', waiting.id, waiting.contextId)))) as Task;
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(answers(done)).toEqual(['published']);
  });

  it('a legacyCompat client speaks v0.3 to the same endpoint and sees the same tasks', async () => {
    const legacy = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
      cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
    });
    // The v0.3 card: the legacy transport is chosen.
    const old = await legacy.createFromUrl(`${server.url}/api/v1/echo/.well-known/agent.json`, '');
    const task = (await old.sendMessage(request(message('old way')))) as Task;
    expect(answers(task)).toEqual(['echo: old way']);
    const viaV1 = await (await defaultClient('echo')).getTask({ id: task.id, tenant: '', historyLength: undefined });
    expect(viaV1.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // The v1.0 card: a legacyCompat client picks 1.0 where both are offered, as the SDK prefers.
    const either = await legacy.createFromUrl(`${server.url}/api/v1/echo/`);
    expect(answers((await either.sendMessage(request(message('either way')))) as Task)).toEqual(['echo: either way']);
  });

  it('serves the workspace card at the host root; the default client created from the host reaches an agent through /a2a by tenant', async () => {
    const card = (await server.request('/.well-known/agent-card.json')).body;
    expect(card.skills.map((s: { id: string }) => s.id).sort()).toEqual(['echo', 'gatekeeper', 'waiter']);
    expect(card.supportedInterfaces).toContainEqual({
      url: `${server.url}/a2a`,
      protocolBinding: 'JSONRPC',
      protocolVersion: '1.0',
      tenant: 'echo',
    });
    // The SDK picks the last 1.0 interface; whichever agent that is answers through the root endpoint.
    const chosen = card.supportedInterfaces.at(-1).tenant as string;
    const client = await new ClientFactory().createFromUrl(server.url);
    const task = (await client.sendMessage(request(message('from the root'), true))) as Task;
    const board = await server.request(`/api/v1/tasks/${task.id}`);
    expect(board.body.target).toBe(chosen);
    await client.cancelTask({ id: task.id, tenant: '', metadata: undefined } as never).catch(() => undefined); // whatever it is, leave nothing running

    const rpc = (params: unknown) =>
      server.request('/a2a', { method: 'POST', json: { jsonrpc: '2.0', id: 5, method: 'SendMessage', params } });
    const viaTenant = await rpc({ tenant: 'echo', message: { messageId: 'r1', role: 'ROLE_USER', parts: [{ text: 'by tenant' }] } });
    expect(viaTenant.body.result.task.artifacts[0].parts[0]).toEqual({ text: 'echo: by tenant' });
    const unknown = await rpc({ tenant: 'ghost', message: { messageId: 'r2', role: 'ROLE_USER', parts: [{ text: 'x' }] } });
    expect(unknown.body).toMatchObject({
      jsonrpc: '2.0',
      id: 5,
      error: { code: -32602, message: expect.stringMatching(/^params\.tenant: no agent "ghost" \(one of: /) },
    });
  });

  it('answers v1.0 and v0.3 method names on the wire in their own shapes', async () => {
    const rpc = (method: string, params: unknown) =>
      server.request('/api/v1/echo/a2a', { method: 'POST', json: { jsonrpc: '2.0', id: 1, method, params } });
    const v1 = await rpc('SendMessage', { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'wire' }] } });
    expect(v1.body.result.task).toMatchObject({
      status: { state: 'TASK_STATE_COMPLETED' },
      history: [{ role: 'ROLE_USER', parts: [{ text: 'wire' }] }],
    });
    expect(v1.body.result.task.kind).toBeUndefined();
    const v03 = await rpc('message/send', {
      message: { kind: 'message', messageId: 'm2', role: 'user', parts: [{ kind: 'text', text: 'wire' }] },
    });
    expect(v03.body.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    expect((await rpc('ListTasks', { status: 'TASK_STATE_NOPE' })).body.error.code).toBe(-32602);
  });
});

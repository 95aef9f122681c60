/**
 * A2A protocol v1.0 beside v0.3, on the same JSON-RPC endpoint: the v1.0 JSON-RPC binding the
 * official JS SDK's default client speaks, translated to and from the v0.3 binding (jsonrpc.ts),
 * which keeps the one implementation of sending, following, cancelling and continuing tasks.
 *
 * Decisions:
 * - One endpoint, two versions: a request is v1.0 when its method is a v1.0 method name
 *   (`SendMessage`, `GetTask`, … — PascalCase, never a v0.3 name), so no header is needed and a
 *   client on either version reaches the same tasks. The agent card lists both in
 *   `supportedInterfaces` (the SDK picks 1.0 when a binding is offered in both).
 * - The wire is ProtoJSON as v1.0 defines it: parts are `{text}` / `{data}` / `{url}` / `{raw}`
 *   without `kind`, roles `ROLE_USER` / `ROLE_AGENT`, states `TASK_STATE_*`, send results
 *   `{task}` / `{message}`, stream frames `{task}` / `{statusUpdate}` / `{artifactUpdate}` (a
 *   stream ends after the update that reaches a terminal or interrupted state, as v1.0 has no
 *   `final` flag). `returnImmediately` is v0.3's `blocking: false`.
 * - `ListTasks` (v1.0 only) lists the caller's tasks of this agent, newest first, filtered by
 *   `contextId` and `status`; `pageToken` is an opaque offset.
 * - Error codes are the same numbers in both versions. `SubscribeToTask` on a finished task is
 *   UnsupportedOperation, as the SDK's server answers (v0.3 resubscribe still sends the final
 *   status at once).
 */
/** v1.0 JSON-RPC method → the v0.3 method that implements it. */
export const V1_METHODS: Readonly<Record<string, string>> = {
  SendMessage: 'message/send',
  SendStreamingMessage: 'message/stream',
  GetTask: 'tasks/get',
  CancelTask: 'tasks/cancel',
  SubscribeToTask: 'tasks/resubscribe',
  ListTasks: 'tasks/list',
  CreateTaskPushNotificationConfig: 'tasks/pushNotificationConfig/set',
  GetTaskPushNotificationConfig: 'tasks/pushNotificationConfig/get',
  ListTaskPushNotificationConfigs: 'tasks/pushNotificationConfig/list',
  DeleteTaskPushNotificationConfig: 'tasks/pushNotificationConfig/delete',
  GetExtendedAgentCard: 'agent/getAuthenticatedExtendedCard',
};

export const isV1Method = (method: string): boolean => Object.hasOwn(V1_METHODS, method);

const STATES: Record<string, string> = {
  submitted: 'TASK_STATE_SUBMITTED',
  working: 'TASK_STATE_WORKING',
  'input-required': 'TASK_STATE_INPUT_REQUIRED',
  'auth-required': 'TASK_STATE_AUTH_REQUIRED',
  completed: 'TASK_STATE_COMPLETED',
  failed: 'TASK_STATE_FAILED',
  canceled: 'TASK_STATE_CANCELED',
  rejected: 'TASK_STATE_REJECTED',
};
const FROM_V1_STATE = Object.fromEntries(Object.entries(STATES).map(([v03, v1]) => [v1, v03]));

/** A v1.0 `TASK_STATE_*` as the board's status, or undefined when it names none. */
export const boardStatusOf = (state: unknown): string | undefined => (typeof state === 'string' ? FROM_V1_STATE[state] : undefined);

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A v1.0 part as v0.3 (`kind` added); parts that are neither text nor data stay, ignored by text reading. */
function partFromV1(part: unknown): unknown {
  if (!isObject(part)) return part;
  if (typeof part.text === 'string') return { ...part, kind: 'text' };
  if ('data' in part) return { ...part, kind: 'data' };
  return { ...part, kind: 'file' };
}

function partToV1(part: unknown): unknown {
  if (!isObject(part)) return part;
  const { kind: _kind, ...rest } = part;
  return rest;
}

const roleFromV1 = (role: unknown) => (role === 'ROLE_AGENT' || role === 2 ? 'agent' : role === 'ROLE_USER' || role === 1 ? 'user' : role);
const roleToV1 = (role: unknown) => (role === 'agent' ? 'ROLE_AGENT' : role === 'user' ? 'ROLE_USER' : role);

function messageFromV1(message: unknown): unknown {
  if (!isObject(message)) return message;
  return {
    ...message,
    kind: 'message',
    role: roleFromV1(message.role),
    parts: Array.isArray(message.parts) ? message.parts.map(partFromV1) : message.parts,
  };
}

function messageToV1(message: unknown): unknown {
  if (!isObject(message)) return message;
  const { kind: _kind, ...rest } = message;
  return { ...rest, role: roleToV1(message.role), parts: Array.isArray(message.parts) ? message.parts.map(partToV1) : [] };
}

function statusToV1(status: unknown): unknown {
  if (!isObject(status)) return status;
  return {
    ...status,
    state: STATES[String(status.state)] ?? 'TASK_STATE_UNSPECIFIED',
    ...(status.message ? { message: messageToV1(status.message) } : {}),
  };
}

function artifactToV1(artifact: unknown): unknown {
  if (!isObject(artifact)) return artifact;
  return { ...artifact, parts: Array.isArray(artifact.parts) ? artifact.parts.map(partToV1) : [] };
}

export function taskToV1(task: unknown): unknown {
  if (!isObject(task)) return task;
  const { kind: _kind, ...rest } = task;
  return {
    ...rest,
    status: statusToV1(task.status),
    artifacts: Array.isArray(task.artifacts) ? task.artifacts.map(artifactToV1) : [],
    history: Array.isArray(task.history) ? task.history.map(messageToV1) : [],
  };
}

/** The params of a v1.0 request in the v0.3 shape its implementation reads. */
export function paramsFromV1(method: string, params: unknown): unknown {
  if (!isObject(params)) return params;
  if (method === 'SendMessage' || method === 'SendStreamingMessage') {
    const configuration = isObject(params.configuration) ? params.configuration : undefined;
    return {
      ...params,
      message: messageFromV1(params.message),
      ...(configuration ? { configuration: { ...configuration, blocking: configuration.returnImmediately !== true } } : {}),
    };
  }
  return params;
}

/** One v0.3 result (a task, a message or a stream event) as v1.0. */
export function resultToV1(method: string, result: unknown): unknown {
  if (!isObject(result)) return result;
  if (method === 'ListTasks') return { ...result, tasks: Array.isArray(result.tasks) ? result.tasks.map(taskToV1) : [] };
  const wrap = method === 'SendMessage' || method === 'SendStreamingMessage' || method === 'SubscribeToTask';
  switch (result.kind) {
    case 'task':
      return wrap ? { task: taskToV1(result) } : taskToV1(result);
    case 'message':
      return { message: messageToV1(result) };
    case 'status-update': {
      const { kind: _kind, final: _final, ...rest } = result;
      return { statusUpdate: { ...rest, status: statusToV1(result.status) } };
    }
    case 'artifact-update': {
      const { kind: _kind, ...rest } = result;
      return { artifactUpdate: { ...rest, artifact: artifactToV1(result.artifact) } };
    }
    default:
      return result;
  }
}

/** Interface entries of an agent card: the binding at `url` in both protocol versions. */
export function supportedInterfaces(url: string, tenant?: string) {
  return ['1.0', '0.3'].map((protocolVersion) => ({ url, protocolBinding: 'JSONRPC', protocolVersion, ...(tenant ? { tenant } : {}) }));
}

/**
 * One agent loop, run inside a piscina worker thread: the model proposes tool calls, the worker
 * runs them (file system and commands stay off the server's thread), and so on until the agent
 * calls `finish`, runs out of steps, or keeps sending malformed calls.
 *
 * Model calls are not made here: they are posted to the server thread over `port`, where the run's
 * `ModelGate` applies the one run-wide `max_parallel` bound, picks the model and owns the HTTP
 * client. Cancellation arrives as a `cancel` message and kills any running command.
 */
import { realpathSync } from 'node:fs';
import type { MessagePort } from 'node:worker_threads';
import type { FenceTeam } from './fence.js';
import type { Message, ModelCall, ModelReply } from './model.js';
import { AGENT_TOOLS, type CommandWrites, runTool } from './tools.js';

export interface AgentJob {
  root: string;
  role: string;
  agent: string;
  rung: number;
  model?: string;
  task: {
    id: string;
    title: string;
    description: string;
    files: string[];
    acceptance: string;
    criteria: Array<{ text: string; command: string }>;
    findings: string[];
  };
  team: FenceTeam;
  teams: FenceTeam[];
  contract: string;
  maxSteps: number;
  commandTimeoutMs: number;
  /** Rough token budget of the conversation (chars / 4); older tool output is trimmed past it. */
  budgetTokens: number;
  malformedRetries: number;
  port: MessagePort;
}

export interface AgentOutcome {
  status: 'finished' | 'malformed' | 'out_of_steps' | 'cancelled' | 'model_error';
  summary: string;
  written: string[];
  steps: number;
  refused_writes: number;
  error: string | null;
}

export type WorkerToMain =
  | { type: 'model'; id: number; call: Omit<ModelCall, 'signal'> }
  | { type: 'tool'; tool: string; ok: boolean; detail: string; path?: string }
  /** A command changed foreign paths: which to revert is the server thread's call (it sees every task). */
  | { type: 'command_writes'; id: number; writes: CommandWrites };

export type MainToWorker =
  | { type: 'model_result'; id: number; reply?: ModelReply; error?: string; cancelled?: boolean }
  | { type: 'command_verdict'; id: number; revert: string[] }
  | { type: 'cancel' };

function systemPrompt(job: AgentJob): string {
  const criteria = job.task.criteria.map((c) => `- ${c.text} (verified by \`${c.command}\`)`).join('\n');
  return [
    `You are ${job.agent}, a ${job.role} in team '${job.team.id}'. You may write only under: ${job.team.owns.join(', ')}.`,
    'Work with the tools: read and search before you write, write whole files, run the tests, then call finish.',
    job.contract ? `Frozen contract between teams (do not change it):\n${job.contract}` : '',
    `Task ${job.task.id}: ${job.task.title}\n${job.task.description}`,
    job.task.files.length ? `Files: ${job.task.files.join(', ')}` : '',
    job.task.acceptance ? `Acceptance: ${job.task.acceptance}` : '',
    criteria ? `Criteria:\n${criteria}` : '',
    job.task.findings.length ? `Reviewer findings to address:\n${job.task.findings.map((f) => `- ${f}`).join('\n')}` : '',
  ]
    .filter(Boolean)
    .join('\n\n');
}

/** Keep the conversation under budget by blanking the oldest tool outputs first. */
function trim(messages: Message[], budgetTokens: number): void {
  const size = () => messages.reduce((n, m) => n + ('content' in m && m.content ? m.content.length : 0), 0) / 4;
  for (let i = 2; i < messages.length - 2 && size() > budgetTokens; i++) {
    const m = messages[i]!;
    if (m.role === 'tool' && m.content.length > 200) messages[i] = { ...m, content: '[output trimmed to fit the context budget]' };
  }
}

export default async function runAgent(job: AgentJob): Promise<AgentOutcome> {
  const controller = new AbortController();
  const pending = new Map<number, { resolve: (r: ModelReply) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const verdicts = new Map<number, (revert: string[]) => void>();
  job.port.on('message', (msg: MainToWorker) => {
    if (msg.type === 'cancel') {
      controller.abort();
      for (const p of pending.values()) p.reject(new Error('cancelled'));
      pending.clear();
      // Nothing is reverted on cancel: the worktree and its uncommitted changes are removed anyway.
      for (const v of verdicts.values()) v([]);
      verdicts.clear();
      return;
    }
    if (msg.type === 'command_verdict') {
      verdicts.get(msg.id)?.(msg.revert);
      verdicts.delete(msg.id);
      return;
    }
    const waiter = pending.get(msg.id);
    if (!waiter) return;
    pending.delete(msg.id);
    if (msg.reply) waiter.resolve(msg.reply);
    else waiter.reject(Object.assign(new Error(msg.error ?? 'model call failed'), { cancelled: msg.cancelled }));
  });
  const ask = (call: Omit<ModelCall, 'signal'>) =>
    new Promise<ModelReply>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      job.port.postMessage({ type: 'model', id, call } satisfies WorkerToMain);
    });

  const judgeCommandWrites = (writes: CommandWrites) =>
    new Promise<string[]>((resolve) => {
      if (controller.signal.aborted) return resolve([]);
      const id = nextId++;
      verdicts.set(id, resolve);
      job.port.postMessage({ type: 'command_writes', id, writes } satisfies WorkerToMain);
    });

  const written = new Set<string>();
  const ctx = {
    root: realpathSync(job.root),
    team: job.team,
    teams: job.teams,
    commandTimeoutMs: job.commandTimeoutMs,
    signal: controller.signal,
    written,
    judgeCommandWrites,
  };
  const messages: Message[] = [
    { role: 'system', content: systemPrompt(job) },
    { role: 'user', content: `Do task ${job.task.id} now.` },
  ];
  let malformedInRow = 0;
  let refused = 0;
  const outcome = (status: AgentOutcome['status'], summary: string, steps: number, error: string | null = null): AgentOutcome => ({
    status,
    summary,
    written: [...written].sort(),
    steps,
    refused_writes: refused,
    error,
  });

  try {
    for (let step = 1; step <= job.maxSteps; step++) {
      if (controller.signal.aborted) return outcome('cancelled', '', step);
      trim(messages, job.budgetTokens);
      let reply: ModelReply;
      try {
        reply = await ask({ role: job.role, messages, tools: AGENT_TOOLS, rung: job.rung, model: job.model });
      } catch (err) {
        if (controller.signal.aborted || (err as { cancelled?: boolean }).cancelled) return outcome('cancelled', '', step);
        return outcome('model_error', '', step, (err as Error).message);
      }
      if (!reply.tool_calls.length) {
        // A plain answer ends the loop: the model considers itself done.
        return outcome('finished', reply.content ?? '', step);
      }
      messages.push({ role: 'assistant', content: reply.content, tool_calls: reply.tool_calls });
      let malformed = false;
      let finished: string | undefined;
      for (const call of reply.tool_calls) {
        let args: Record<string, unknown>;
        try {
          const parsed: unknown = JSON.parse(call.arguments || '{}');
          if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('arguments must be a JSON object');
          args = parsed as Record<string, unknown>;
        } catch (err) {
          malformed = true;
          messages.push({
            role: 'tool',
            tool_call_id: call.id,
            content: `error: malformed arguments for ${call.name}: ${(err as Error).message}`,
          });
          job.port.postMessage({
            type: 'tool',
            tool: call.name,
            ok: false,
            detail: `malformed call to ${call.name}`,
          } satisfies WorkerToMain);
          continue;
        }
        const result = await runTool(call.name, args, ctx);
        if (!result.ok && result.detail.startsWith('unknown tool')) malformed = true;
        if (!result.ok && call.name === 'write_file' && result.content.includes('write refused')) refused++;
        messages.push({ role: 'tool', tool_call_id: call.id, content: result.content });
        job.port.postMessage({
          type: 'tool',
          tool: call.name,
          ok: result.ok,
          detail: result.detail,
          ...(result.wrote ? { path: result.wrote } : {}),
        } satisfies WorkerToMain);
        if (result.finished) finished = result.finished.summary;
      }
      if (finished !== undefined) return outcome('finished', finished, step);
      malformedInRow = malformed ? malformedInRow + 1 : 0;
      if (malformedInRow > job.malformedRetries)
        return outcome('malformed', '', step, `${malformedInRow} malformed tool-call turns in a row`);
    }
    return outcome('out_of_steps', '', job.maxSteps, `no finish within ${job.maxSteps} steps`);
  } finally {
    job.port.close();
  }
}

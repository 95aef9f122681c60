/**
 * The review stage of a task: the tester seat runs the task's criteria commands, then the reviewer
 * seat (a model) reads the change and gives a verdict through the `review` tool. Failing criteria
 * reject without asking the reviewer, and no verdict is never an approval.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { AgentOutcome } from './agent-worker.js';
import { runCommand } from './command.js';
import { jsonFromText, type Message, type ModelGate, type ToolSpec } from './model.js';
import { MALFORMED_RETRIES } from './planner.js';
import type { RunTask } from './schemas.js';

export interface Verdict {
  approve: boolean;
  findings: string[];
}

export interface ReviewSeat {
  /** The reviewer's name, as the model is told. */
  reviewer: string;
  /** The run's worktree, where criteria run and diffs are read. */
  dir: string;
  gate: ModelGate;
  commandTimeoutMs: number;
  signal: AbortSignal;
}

const REVIEW_TOOL: ToolSpec = {
  name: 'review',
  description: 'Give your verdict on the change: approve, or reject with findings the developer must address.',
  parameters: {
    type: 'object',
    properties: { verdict: { type: 'string', enum: ['approve', 'reject'] }, findings: { type: 'array', items: { type: 'string' } } },
    required: ['verdict'],
  },
};

/** Judge the change `outcome` made for `task`. */
export async function reviewTask(task: RunTask, outcome: AgentOutcome, seat: ReviewSeat): Promise<Verdict> {
  const { reviewer, dir, gate, commandTimeoutMs, signal } = seat;
  const failures: string[] = [];
  for (const criterion of task.criteria) {
    const result = await runCommand(criterion.command, { cwd: dir, timeoutMs: commandTimeoutMs, signal });
    if (result.exit_code !== 0)
      failures.push(
        `criterion "${criterion.text}" failed: \`${criterion.command}\` ${result.timed_out ? 'timed out' : `exit ${result.exit_code}`}\n${result.output.split('\n').slice(-15).join('\n')}`,
      );
  }
  if (failures.length) return { approve: false, findings: failures };
  const diffs: string[] = [];
  for (const file of task.changed.slice(0, 10)) {
    const quoted = `'${file.replace(/'/g, `'\\''`)}'`;
    const shown = await runCommand(`git diff --no-color HEAD -- ${quoted}`, { cwd: dir, timeoutMs: 10_000 });
    // A new file has no diff against HEAD: the reviewer reads it whole.
    const text = shown.output.trim()
      ? shown.output
      : `new file ${file}:\n${await readFile(path.join(dir, file), 'utf8').catch(() => '(deleted)')}`;
    diffs.push(text.slice(0, 6000));
  }
  const messages: Message[] = [
    {
      role: 'system',
      content: `You are ${reviewer}, reviewer of team '${task.squad ?? 'none'}'. Review the change for task ${task.id}. Approve only if it does what the task asks. Call review once.`,
    },
    {
      role: 'user',
      content: `Task ${task.id}: ${task.title}\n${task.description}\nAcceptance: ${task.acceptance || '(none)'}\nDeveloper summary: ${outcome.summary}\nFiles changed: ${task.changed.join(', ') || '(none)'}\n\n${diffs.join('\n')}`,
    },
  ];
  let lastError = '';
  for (let attempt = 0; attempt <= MALFORMED_RETRIES; attempt++) {
    let reply;
    try {
      reply = await gate.chat({ role: 'reviewer', messages, tools: [REVIEW_TOOL], rung: task.escalation, signal });
    } catch (err) {
      lastError = (err as Error).message;
      break;
    }
    const call = reply.tool_calls.find((c) => c.name === 'review');
    let args: unknown;
    try {
      args = call ? JSON.parse(call.arguments) : jsonFromText(reply.content);
    } catch {
      args = undefined;
    }
    const verdict = (args as { verdict?: unknown })?.verdict;
    if (verdict === 'approve' || verdict === 'reject') {
      const findings = Array.isArray((args as { findings?: unknown }).findings)
        ? (args as { findings: unknown[] }).findings.map(String)
        : [];
      return {
        approve: verdict === 'approve',
        findings: verdict === 'reject' && !findings.length ? ['rejected without findings'] : findings,
      };
    }
    lastError = 'the reviewer gave no verdict';
    messages.push({ role: 'user', content: 'Call the review tool with verdict "approve" or "reject".' });
  }
  // Decision: no verdict is not an approval — the harness never claims a review it did not get.
  return { approve: false, findings: [`review unavailable: ${lastError}`] };
}

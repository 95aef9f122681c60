/**
 * The planner: one model conversation that turns a request into a plan through the `submit_plan`
 * tool (or a JSON answer, for models without tool calling). A malformed answer is sent back with
 * the validation error and retried; after `MALFORMED_RETRIES` the call steps up the escalation
 * ladder; only when the ladder is exhausted does planning fail, with the last error.
 */
import { z } from 'zod';
import { formatIssues } from '../http/validate.js';
import type { ToolSpec } from '../lib/model-client.js';
import { jsonFromText, type Message, ModelError, type ModelGate } from './model.js';
import { type Plan, PlanSchema } from './schemas.js';
import type { Team } from './team-schema.js';

export const MALFORMED_RETRIES = 2;

export const SUBMIT_PLAN: ToolSpec = {
  name: 'submit_plan',
  description:
    'Submit the plan: tasks (each owned by one team through its files), criteria with verifying commands, and contract clauses between teams.',
  parameters: z.toJSONSchema(PlanSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
};

export function plannerPrompt(request: string, teams: readonly Team[], files: readonly string[]): Message[] {
  const teamLines = teams
    .map((t) => `- ${t.id}: ${t.charter}. Owns ${t.owns.join(', ')}. Acceptance: ${t.acceptance || '(none)'}`)
    .join('\n');
  return [
    {
      role: 'system',
      content:
        'You are the planner of a coding run. Split the request into at most 8 small tasks. Each task lists the files it writes; ' +
        'a task belongs to the team owning its files (set squad to that team id). Give each task criteria: checkable conditions, each ' +
        'with a shell command that verifies it. When one team provides something another consumes (an API, a type, a file format), add ' +
        'a contract clause naming the provider and consumer teams. Call submit_plan exactly once.',
    },
    {
      role: 'user',
      content: `Request: ${request}\n\nTeams:\n${teamLines}\n\nRepository files:\n${files.slice(0, 200).join('\n') || '(empty)'}`,
    },
  ];
}

export interface PlannerOutcome {
  plan: Plan;
  attempts: number;
  rung: number;
  model: string;
}

export async function planWithModel(
  gate: ModelGate,
  request: string,
  teams: readonly Team[],
  files: readonly string[],
  signal?: AbortSignal,
): Promise<PlannerOutcome> {
  let attempts = 0;
  let lastError = 'no answer';
  for (let rung = 0; rung <= gate.ladderLength; rung++) {
    const messages = plannerPrompt(request, teams, files);
    for (let retry = 0; retry <= MALFORMED_RETRIES; retry++) {
      attempts++;
      const reply = await gate.chat({ role: 'planner', messages, tools: [SUBMIT_PLAN], rung, signal });
      const call = reply.tool_calls.find((c) => c.name === 'submit_plan');
      let raw: unknown;
      if (call) {
        try {
          raw = JSON.parse(call.arguments);
        } catch (err) {
          lastError = `submit_plan arguments are not valid JSON: ${(err as Error).message}`;
        }
      } else {
        raw = jsonFromText(reply.content);
        if (raw === undefined) lastError = 'the answer called no submit_plan tool and held no JSON plan';
      }
      if (raw !== undefined) {
        const parsed = PlanSchema.safeParse(raw);
        if (parsed.success) return { plan: parsed.data, attempts, rung, model: reply.model };
        lastError = `the plan is invalid: ${formatIssues(parsed.error.issues, 'plan')}`;
      }
      messages.push(
        { role: 'assistant', content: reply.content, ...(reply.tool_calls.length ? { tool_calls: reply.tool_calls } : {}) } as Message,
        ...reply.tool_calls.map((c) => ({ role: 'tool' as const, tool_call_id: c.id, content: `error: ${lastError}` })),
        { role: 'user', content: `That was not accepted (${lastError}). Call submit_plan again with a valid plan.` },
      );
    }
  }
  throw new ModelError(`planner gave no valid plan after ${attempts} attempts: ${lastError}`, false);
}

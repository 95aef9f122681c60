/**
 * Prompt versions. An agent may declare `prompts: { versions: { v1: '…', v2: '…' }, active }`; a
 * request picks one with `prompt_version`, otherwise the active one is used (`normaliseAgent` in
 * kind.ts resolves `active`).
 *
 * Decision: an agent without prompts has the single implicit version 'v1' with empty text, so
 * `metadata.prompt_version` looks the same for every agent, and asking such an agent for 'v2' is
 * the same 404 as for an agent that lists its versions.
 */
import { fail } from '../kernel/errors.js';
import type { Agent } from './kind.js';

/** The text of the requested (or active) version; unknown → 404 naming the known ones. */
export function resolvePrompt(agent: Pick<Agent, 'name' | 'prompts'>, requested?: string | null): { version: string; text: string } {
  const declared = Object.keys(agent.prompts.versions);
  const known = declared.length ? declared : ['v1'];
  const version = requested ?? agent.prompts.active;
  if (!known.includes(version)) {
    throw fail('HANGAR_AGENT_PROMPT_NOT_FOUND', { version, agent: agent.name, known: known.join(', ') });
  }
  return { version, text: agent.prompts.versions[version] ?? '' };
}

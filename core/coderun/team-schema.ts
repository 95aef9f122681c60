/**
 * The `team` drop-in kind's schema (teams/*.json, project overrides, team edits), apart from the
 * harness's other records (schemas.ts): discovery parses team files at every start, and the rest,
 * ~400 zod schemas for runs, plans, tickets and events, is built only when the coding-run service
 * loads on first use (core/coderun/subsystem.ts).
 */
import { z } from 'zod';

export const TEAM_ID = /^[a-z0-9][a-z0-9_-]{0,39}$/;

export const RosterAgent = z.object({
  name: z.string().min(1),
  /** What the agent can be staffed as: developer, reviewer, tester, corrector, manager, … */
  role: z.string().min(1),
  /** A corrector only takes files of these languages (extensions without dot); empty = any. */
  languages: z.array(z.string()).default([]),
  /** Model name pin for this agent; wins over `model_roles`. */
  model: z.string().optional(),
});
export type RosterAgent = z.output<typeof RosterAgent>;

export const MatchRules = z
  .object({
    keywords: z.array(z.string().min(1)).default([]),
    /** Globs: a request naming a matching path selects the team. */
    files: z.array(z.string().min(1)).default([]),
    /** Extensions (without dot) mentioned in the request. */
    extensions: z.array(z.string().min(1)).default([]),
  })
  .prefault({});

export const TeamSchema = z.object({
  id: z.string().regex(TEAM_ID, 'lowercase letters, digits, - and _ (max 40)'),
  charter: z.string().min(1),
  /** Owned path globs, relative to the repository root. Disjoint across teams. */
  owns: z.array(z.string().min(1)).min(1),
  /** The acceptance command proving this team's half (run once after its lane finishes). */
  acceptance: z.string().default(''),
  /** Project manager agent name; null = the library's default manager. */
  manager: z.string().nullable().default(null),
  /** Open roster: any number of agents with any roles. */
  agents: z.array(RosterAgent).default([]),
  skills: z.array(z.string()).default([]),
  seats: z.object({ reviewer: z.string().nullable().default(null), tester: z.string().nullable().default(null) }).prefault({}),
  match: MatchRules,
});
export type Team = z.output<typeof TeamSchema>;
export type TeamInput = z.input<typeof TeamSchema>;

/** A team edit: every field optional; `null` clears a nullable field. */
export const TeamPatch = TeamSchema.omit({ id: true }).partial();

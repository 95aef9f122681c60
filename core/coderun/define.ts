/**
 * `defineTeam` for drop-ins in teams/: the definition is only tagged here; it is validated at
 * discovery (teams.ts `teamKind`), so a mistake shows as a drop-in error instead of a crash.
 */
import type { TeamInput } from './team-schema.js';

/** A team as written in teams/<id>.ts; `id` defaults to the file name. */
export type TeamDefinition = Omit<TeamInput, 'id'> & { id?: string };

const KIND = Symbol.for('hangar.kind');

/**
 * @example
 * export default defineTeam({
 *   charter: 'HTTP API',
 *   owns: ['src/api/**'],
 *   acceptance: 'npm test -- src/api',
 *   match: { keywords: ['route', 'endpoint'] },
 * });
 */
export function defineTeam(definition: TeamDefinition): TeamDefinition {
  Object.defineProperty(definition, KIND, { value: 'team', enumerable: false });
  return definition;
}

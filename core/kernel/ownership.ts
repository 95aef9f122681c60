/**
 * Who may see a record made on behalf of a principal (threads, checkpoints, approvals, studio
 * runs, feedback, pipeline runs). The rule lives here, not in a storage layout, so it holds
 * whichever backend keeps the records.
 *
 * - Every such record stores the principal it was made for (`principal`).
 * - A principal sees its own records; someone else's answer exactly like an unknown id (404) and
 *   are left out of lists — the same rule as tasks, invoke streams and A2A tasks.
 * - `local`, the principal of a server without tokens, sees every record, as it always has: on
 *   such a server every caller is the one local user.
 * - A record stored before records carried an owner belongs to `local`, so a principal added
 *   later never inherits the conversations of the tokenless days.
 * - `undefined` as the viewer is the platform itself (a studio resume taking a pending approval,
 *   a cleanup after a delete), never a request: routes always pass `req.principal`.
 *
 * @example
 * const mine = (await runs.list()).filter((run) => canSee(principal, run));
 */

/** The principal of every caller of a server with no tokens configured. */
export const LOCAL_PRINCIPAL = 'local';

/**
 * Who a request acts as for record ownership. Without `auth.tokens` the server has one user, so
 * every caller is `local` — also the desktop window and login-link tabs, whose run-time tokens
 * only keep other local programs out (they name `desktop` or `browser` in the logs, but they are
 * the same person who used the server tokenless yesterday and must see those threads).
 */
export function viewerOf(req: { principal: string }, settings: { auth: { tokens: Record<string, string> } }): string {
  return Object.keys(settings.auth.tokens).length === 0 ? LOCAL_PRINCIPAL : req.principal;
}

export interface Owned {
  principal?: string;
}

/** The owner of a record; records from before owners were stored belong to `local`. */
export function ownerOf(record: Owned): string {
  return record.principal ?? LOCAL_PRINCIPAL;
}

/** Whether `viewer` (a request's principal, or undefined for the platform) may see `record`. */
export function canSee(viewer: string | undefined, record: Owned): boolean {
  return viewer === undefined || viewer === LOCAL_PRINCIPAL || ownerOf(record) === viewer;
}

/**
 * `canSee` as a store filter (`Collection.query`'s `where`): nothing for a viewer who sees every
 * record, else exactly the records stored with the viewer's name (records without one are `local`'s).
 */
export function visibleTo(viewer: string | undefined): { principal?: string } {
  return viewer === undefined || viewer === LOCAL_PRINCIPAL ? {} : { principal: viewer };
}

/** The principal a new record is stored with: the caller, or `local` for the platform's own work. */
export function ownerFor(viewer: string | undefined): string {
  return viewer ?? LOCAL_PRINCIPAL;
}

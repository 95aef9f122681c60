/**
 * Pending human approvals (HITL). A run that suspends leaves one record here holding everything
 * needed to resume it — the interrupt checkpoint (state, node, input) and how the run was made —
 * so approvals survive a restart and a resume needs nothing else.
 *
 * Taking a record (approve or reject) deletes it atomically first, so two concurrent approvals of
 * the same id cannot both resume the run: the second one gets the 404 of an unknown id.
 *
 * Ownership: a record belongs to the principal whose run suspended; another principal neither
 * lists it nor takes it (the 404 of an unknown id), see core/kernel/ownership.ts.
 *
 * Every list is read from an index of the collection (a thread's, an agent's, a principal's, all),
 * in the order it answers, so a list costs what it returns however many approvals wait elsewhere.
 */

import { fail } from '../kernel/errors.js';
import { canSee, ownerOf, visibleTo } from '../kernel/ownership.js';
import type { Collection, Store } from '../kernel/store.js';
import { timeOrderedId } from '../storage/ids.js';
import type { PendingApproval } from './types.js';

/** Where a pending approval is decided: its thread's routes (the ids are URL-safe). */
export function approvalLinks(record: Pick<PendingApproval, 'agent' | 'thread_id'>) {
  const base = `/api/v1/${record.agent}/threads/${encodeURIComponent(record.thread_id)}`;
  return { approve: `${base}/approve`, reject: `${base}/reject`, pending: `${base}/pending` };
}

export class ApprovalStore {
  private readonly records: Collection<PendingApproval>;

  constructor(store: Store) {
    // Stryker disable next-line ObjectLiteral: shards and indexes decide how records are laid out and found, never which are found
    this.records = store.collection<PendingApproval>('approvals', {
      shards: 8,
      // Stryker disable next-line ArrayDeclaration: as above
      indexes: [['agent', 'thread_id', 'created_at'], ['agent', 'created_at'], ['principal', 'created_at'], ['created_at']],
    });
  }

  async create(record: Omit<PendingApproval, 'id' | 'created_at'>): Promise<PendingApproval> {
    const full: PendingApproval = { ...record, id: timeOrderedId(), created_at: new Date().toISOString() };
    await this.records.put(full.id, full);
    return full;
  }

  /** Oldest first; only those `principal` may see (all for the platform itself). */
  async list(agent: string, threadId: string, principal?: string): Promise<PendingApproval[]> {
    const { items } = await this.records.query({
      where: { agent, thread_id: threadId, ...visibleTo(principal) },
      // Stryker disable next-line ArrayDeclaration,ObjectLiteral: the test store already returns these rows in the (agent, thread_id, created_at) index's order; a backend without that order needs it
      orderBy: [{ field: 'created_at' }],
    });
    return items;
  }

  /** Across threads (and agents, unless `agent` is given), newest first; only what `principal` may see. */
  async listAll(principal: string | undefined, agent?: string): Promise<PendingApproval[]> {
    const { items } = await this.records.query({
      where: { ...(agent === undefined ? {} : { agent }), ...visibleTo(principal) },
      orderBy: [{ field: 'created_at', desc: true }],
    });
    return items;
  }

  /** Remove and return the record; unknown, or another agent's, thread's or principal's → 404. */
  async take(agent: string, threadId: string, approvalId: string, principal?: string): Promise<PendingApproval> {
    let taken: PendingApproval | undefined;
    await this.records.update(approvalId, (current) => {
      if (!current || current.agent !== agent || current.thread_id !== threadId || !canSee(principal, current)) return current;
      taken = current;
      return undefined;
    });
    if (!taken) throw fail('HANGAR_AGENT_APPROVAL_NOT_FOUND', { approval: approvalId, thread: threadId, agent });
    return taken;
  }

  /** The owner of the thread's pending approvals, if it has any (a suspended stateless invoke has no checkpoints). */
  async owner(agent: string, threadId: string): Promise<string | undefined> {
    const first = (await this.list(agent, threadId))[0];
    return first ? ownerOf(first) : undefined;
  }

  /** Drop every pending approval of the thread (deleting a thread): none can resume it any more. */
  async deleteThread(agent: string, threadId: string): Promise<number> {
    let deleted = 0;
    // Stryker disable next-line UpdateOperator: the count is informational; the thread delete, its only caller, does not read it
    for (const record of await this.list(agent, threadId)) if (await this.records.delete(record.id)) deleted++;
    return deleted;
  }
}

/**
 * Feedback on agent answers: record, list (newest first) and export as JSON Lines for evaluation.
 * Records are keyed by id; each carries its agent, and one agent's list is read from an index on
 * (agent, created_at), so a page never loads the collection. Each also carries the principal
 * that gave it; lists and exports show a principal only its own (core/kernel/ownership.ts).
 */

import { ownerFor, visibleTo } from '../kernel/ownership.js';
import type { Collection, Store } from '../kernel/store.js';
import { timeOrderedId } from '../storage/ids.js';
import type { FeedbackRecord, FeedbackRequest } from './schemas.js';

export class FeedbackService {
  private readonly records: Collection<FeedbackRecord>;

  constructor(store: Store) {
    this.records = store.collection<FeedbackRecord>('feedback', {
      shards: 16,
      indexes: [
        ['agent', 'created_at'],
        ['agent', 'principal', 'created_at'],
      ],
    });
  }

  async record(agent: string, request: FeedbackRequest, principal?: string): Promise<FeedbackRecord> {
    const record: FeedbackRecord = {
      id: timeOrderedId(),
      agent,
      created_at: new Date().toISOString(),
      ...request,
      principal: ownerFor(principal),
    };
    await this.records.put(record.id, record);
    return record;
  }

  /** Newest first, at most `limit` (all when omitted), of what `principal` may see. */
  async list(agent: string, limit?: number, principal?: string): Promise<FeedbackRecord[]> {
    const { items } = await this.records.query({
      where: { agent, ...visibleTo(principal) },
      orderBy: [{ field: 'created_at', desc: true }],
      limit,
    });
    return items;
  }

  /**
   * Every record of the agent as JSON Lines, oldest first (the order an evaluation set is built
   * in). `JSON.stringify` never emits a raw newline, so each line is exactly one record.
   */
  async export(agent: string, principal?: string): Promise<{ agent: string; format: 'jsonl'; data: string; count: number }> {
    const records = (await this.list(agent, undefined, principal)).reverse();
    const data = records.map((r) => JSON.stringify(r)).join('\n');
    return { agent, format: 'jsonl', data: records.length ? `${data}\n` : '', count: records.length };
  }
}

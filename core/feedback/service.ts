/**
 * Feedback on agent answers: record, list (newest first) and export as JSON Lines for evaluation.
 * Records are keyed by id in a sharded collection; each carries its agent, so one agent's list
 * is a filter (feedback is small next to threads and read rarely). Each also carries the principal
 * that gave it; lists and exports show a principal only its own (core/kernel/ownership.ts).
 */

import { canSee, ownerFor } from '../kernel/ownership.js';
import type { Collection, Store } from '../kernel/store.js';
import { timeOrderedId } from '../storage/ids.js';
import type { FeedbackRecord, FeedbackRequest } from './schemas.js';

export class FeedbackService {
  private readonly records: Collection<FeedbackRecord>;

  constructor(store: Store) {
    this.records = store.collection<FeedbackRecord>('feedback', { shards: 16 });
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
    const mine = (await this.records.list())
      .filter((r) => r.agent === agent && canSee(principal, r))
      .sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id));
    return limit === undefined ? mine : mine.slice(0, limit);
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

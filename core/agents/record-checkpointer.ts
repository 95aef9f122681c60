/**
 * Persistent checkpoints on a store that is not the embedded SQLite file (PostgreSQL in team mode):
 * one record per step (`checkpoint_steps`, indexed by chain and step) and a small chain record
 * (owner, next step), through the Store interface every store implements. This was Hangar's layout
 * before checkpoints moved into SQLite tables of their own (`checkpoint-tables.ts`, which stores a
 * step's changed channels only and is synchronous SQLite); here a step holds its whole state, so a
 * step costs its state's size — the price of sharing checkpoints between instances until those
 * tables have a PostgreSQL version.
 */
import { ownerFor } from '../kernel/ownership.js';
import type { Collection, Store } from '../kernel/store.js';
import type { Checkpoint, Checkpointer } from './checkpointer.js';

interface ChainRecord {
  /** The step number the next checkpoint gets. */
  next: number;
  principal?: string;
}

interface StepRecord {
  chain: string;
  seq: number;
  checkpoint: Checkpoint;
}

const key = (agent: string, threadId: string) => `${agent}/${threadId}`;
const stepId = (chain: string, seq: number) => `${chain}#${String(seq).padStart(12, '0')}`;

export class RecordCheckpointer implements Checkpointer {
  private readonly chains: Collection<ChainRecord>;
  private readonly steps: Collection<StepRecord>;

  constructor(
    store: Store,
    /** `checkpoints.keep`: the newest steps kept per thread; undefined keeps all. */
    private readonly keep?: number,
  ) {
    this.chains = store.collection('checkpoint_chains');
    this.steps = store.collection('checkpoint_steps', { indexes: [['chain', 'seq']] });
  }

  async put(agent: string, checkpoint: Checkpoint, principal?: string): Promise<void> {
    const chain = key(agent, checkpoint.thread_id);
    let seq = 0;
    await this.chains.update(chain, (current) => {
      seq = current?.next ?? 0;
      const owner = current ? current.principal : ownerFor(principal);
      return { next: seq + 1, ...(owner !== undefined ? { principal: owner } : {}) };
    });
    await this.steps.put(stepId(chain, seq), { chain, seq, checkpoint });
    if (this.keep !== undefined && seq >= this.keep) await this.steps.delete(stepId(chain, seq - this.keep));
  }

  private async newest(chain: string, limit?: number): Promise<Checkpoint[]> {
    const { items } = await this.steps.query({ where: { chain }, orderBy: [{ field: 'seq', desc: true }], ...(limit ? { limit } : {}) });
    return items.map((step) => step.checkpoint);
  }

  list(agent: string, threadId: string, limit?: number): Promise<Checkpoint[]> {
    return this.newest(key(agent, threadId), limit);
  }

  async get(agent: string, threadId: string, checkpointId: string): Promise<Checkpoint | undefined> {
    return (await this.newest(key(agent, threadId))).find((c) => c.id === checkpointId);
  }

  async latest(agent: string, threadId: string): Promise<Checkpoint | undefined> {
    return (await this.newest(key(agent, threadId), 1))[0];
  }

  async owner(agent: string, threadId: string): Promise<string | undefined> {
    const record = await this.chains.get(key(agent, threadId));
    return record ? ownerFor(record.principal) : undefined;
  }

  async delete(agent: string, threadId: string): Promise<void> {
    const chain = key(agent, threadId);
    const { items } = await this.steps.query({ where: { chain } });
    for (const step of items) await this.steps.delete(stepId(chain, step.seq));
    await this.chains.delete(chain);
  }

  /** Steps hold their own messages, so replacing the thread's messages changes nothing here. */
  async detachMessages(): Promise<void> {}

  async settled(): Promise<void> {}
}

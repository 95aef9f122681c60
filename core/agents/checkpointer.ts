/**
 * Checkpoints: a snapshot of the state after every step of a run, chained by `parent_id`, per
 * agent and thread. The studio lists them (history, newest first), reads the latest as the thread
 * state, and resumes from one; the engine writes them.
 */

import { ownerFor } from '../kernel/ownership.js';
import type { Collection, Store } from '../kernel/store.js';
import type { ToolJournal } from './journal.js';
import type { AgentInput, AgentState } from './types.js';

/** The interrupt a checkpoint is paused at; a resume re-runs `node` with `resume_values`. */
export interface PendingInterrupt {
  node: string;
  message: string;
  payload: Record<string, unknown>;
  /** Values given to earlier `interrupt()` calls of the same node execution, in call order. */
  resume_values: unknown[];
}

export interface CheckpointMetadata {
  run_id: string;
  agent: string;
  /** What wrote it: the run's input, a finished node, a pause, a manual state update, the end. */
  source: 'input' | 'loop' | 'interrupt' | 'breakpoint' | 'update' | 'rejected' | 'tool';
  /** The node whose step produced this checkpoint (null for the input checkpoint). */
  node: string | null;
  /** The node a resume runs next; null when the run is finished. */
  next: string | null;
  /** The request the run was started with, so a resume rebuilds the same run context. */
  input: AgentInput;
  interrupt?: PendingInterrupt;
  /** A `tool` checkpoint's (and an interrupt's) record of the node's model answers and finished tool calls. */
  journal?: ToolJournal;
  [key: string]: unknown;
}

export interface Checkpoint {
  id: string;
  thread_id: string;
  step: number;
  state: AgentState;
  metadata: CheckpointMetadata;
  parent_id: string | null;
  timestamp: string;
}

export interface Checkpointer {
  /** False when nothing is kept: the engine then neither stores nor copies state into checkpoints. */
  readonly retains?: boolean;
  /**
   * Append to the thread's chain. `principal` owns a chain this write starts; an existing chain
   * keeps its owner (see core/kernel/ownership.ts), so a later writer never takes a thread over.
   */
  put(agent: string, checkpoint: Checkpoint, principal?: string): Promise<void>;
  /** Newest step first (the order the studio's history route shows). */
  list(agent: string, threadId: string): Promise<Checkpoint[]>;
  get(agent: string, threadId: string, checkpointId: string): Promise<Checkpoint | undefined>;
  latest(agent: string, threadId: string): Promise<Checkpoint | undefined>;
  /** Who owns the thread's chain; undefined when the thread has no checkpoints. */
  owner(agent: string, threadId: string): Promise<string | undefined>;
  /** Remove the thread's whole chain (deleting a thread). */
  delete(agent: string, threadId: string): Promise<void>;
}

/**
 * The checkpointer the engine writes through for one principal's run: every chain it starts is
 * owned by that principal. The engine itself never learns who is calling.
 */
export function ownedBy(checkpointer: Checkpointer, principal: string | undefined): Checkpointer {
  if (checkpointer.retains === false) return checkpointer;
  return {
    retains: checkpointer.retains,
    put: (agent, checkpoint) => checkpointer.put(agent, checkpoint, principal),
    list: (agent, threadId) => checkpointer.list(agent, threadId),
    get: (agent, threadId, checkpointId) => checkpointer.get(agent, threadId, checkpointId),
    latest: (agent, threadId) => checkpointer.latest(agent, threadId),
    owner: (agent, threadId) => checkpointer.owner(agent, threadId),
    delete: (agent, threadId) => checkpointer.delete(agent, threadId),
  };
}

const key = (agent: string, threadId: string) => `${agent}/${threadId}`;

/**
 * Persistent checkpoints: one record per step (`checkpoint_steps`, keyed by chain and step number)
 * and one small record per chain (`checkpoint_chains`: owner and next step number). A step writes
 * its own record and bumps the chain's counter, so its cost is that of its own state, whatever the
 * thread's length — one record holding the whole chain was rewritten on every step (100 full
 * states at a time). The newest and the history are indexed reads.
 *
 * Only the newest `maxPerThread` steps are kept — a long chat thread would otherwise grow without
 * bound; older steps cannot be resumed from (accepted: the studio shows recent history, and the
 * newest checkpoint is what resume and thread state use). Older steps are pruned every
 * `PRUNE_EVERY` steps, so a step does not pay for a delete.
 *
 * Chains stored by earlier versions as one record per thread (`checkpoints`) are moved to this
 * layout the first time they are touched.
 */
interface ChainRecord {
  /** The step number the next checkpoint gets. */
  next: number;
  /** Absent on chains written before owners were stored: those belong to `local`. */
  principal?: string;
}

interface StepRecord {
  chain: string;
  seq: number;
  checkpoint: Checkpoint;
}

/** The layout before one record per step: the whole chain in one record. */
interface LegacyChain {
  checkpoints: Checkpoint[];
  principal?: string;
}

const PRUNE_EVERY = 20;

export class StoreCheckpointer implements Checkpointer {
  private readonly chains: Collection<ChainRecord>;
  private readonly steps: Collection<StepRecord>;
  private readonly legacy: Collection<LegacyChain>;

  constructor(
    store: Store,
    private readonly maxPerThread = 100,
  ) {
    this.chains = store.collection('checkpoint_chains');
    this.steps = store.collection('checkpoint_steps', { indexes: [['chain', 'seq']] });
    this.legacy = store.collection('checkpoints', { shards: 32 });
  }

  private stepId = (chain: string, seq: number) => `${chain}#${String(seq).padStart(12, '0')}`;

  /** Moves a chain kept in the old one-record layout into this one (once). */
  private async upgrade(chain: string): Promise<void> {
    const old = await this.legacy.get(chain);
    if (!old) return;
    let first = 0;
    await this.chains.update(chain, (current) => {
      first = current?.next ?? 0;
      const owner = current?.principal ?? old.principal;
      return { next: first + old.checkpoints.length, ...(owner !== undefined ? { principal: owner } : {}) };
    });
    for (const [i, checkpoint] of old.checkpoints.entries())
      await this.steps.put(this.stepId(chain, first + i), { chain, seq: first + i, checkpoint });
    await this.legacy.delete(chain);
  }

  async put(agent: string, checkpoint: Checkpoint, principal?: string): Promise<void> {
    const chain = key(agent, checkpoint.thread_id);
    await this.upgrade(chain);
    let seq = 0;
    await this.chains.update(chain, (current) => {
      seq = current?.next ?? 0;
      const owner = current ? current.principal : ownerFor(principal);
      return { next: seq + 1, ...(owner !== undefined ? { principal: owner } : {}) };
    });
    await this.steps.put(this.stepId(chain, seq), { chain, seq, checkpoint });
    if (seq % PRUNE_EVERY === 0 && seq >= this.maxPerThread) await this.prune(chain, seq);
  }

  /** Drops the steps older than the newest `maxPerThread`. */
  private async prune(chain: string, newest: number): Promise<void> {
    const { items } = await this.steps.query({ where: { chain }, orderBy: [{ field: 'seq', desc: true }], offset: this.maxPerThread });
    for (const step of items) if (step.seq <= newest - this.maxPerThread) await this.steps.delete(this.stepId(chain, step.seq));
  }

  /** Newest first, at most the kept number. */
  private async newest(chain: string, limit = this.maxPerThread): Promise<Checkpoint[]> {
    await this.upgrade(chain);
    const { items } = await this.steps.query({ where: { chain }, orderBy: [{ field: 'seq', desc: true }], limit });
    return items.map((step) => step.checkpoint);
  }

  async owner(agent: string, threadId: string): Promise<string | undefined> {
    const chain = key(agent, threadId);
    await this.upgrade(chain);
    const record = await this.chains.get(chain);
    return record ? ownerFor(record.principal) : undefined;
  }

  async delete(agent: string, threadId: string): Promise<void> {
    const chain = key(agent, threadId);
    await this.legacy.delete(chain);
    const { items } = await this.steps.query({ where: { chain } });
    for (const step of items) await this.steps.delete(this.stepId(chain, step.seq));
    await this.chains.delete(chain);
  }

  async list(agent: string, threadId: string): Promise<Checkpoint[]> {
    return this.newest(key(agent, threadId));
  }

  async get(agent: string, threadId: string, checkpointId: string): Promise<Checkpoint | undefined> {
    return (await this.newest(key(agent, threadId))).find((c) => c.id === checkpointId);
  }

  async latest(agent: string, threadId: string): Promise<Checkpoint | undefined> {
    return (await this.newest(key(agent, threadId), 1))[0];
  }
}

/**
 * In-memory checkpoints for runs nobody can come back to (an invoke that named no thread): they
 * still feed the event stream and an in-process resume, without a disk write per request. Bounded
 * by thread count, least recently written evicted first.
 */
/**
 * For runs nobody can address later — stateless invokes (no `thread_id`) and the inner runs of
 * subagent nodes. Each step still gets its checkpoint: the run returns the newest, and a run
 * paused at an interrupt is resumed from the one its approval record holds. None is kept, so
 * none needs a copy of the state either.
 */
export const UNRETAINED: Checkpointer = {
  retains: false,
  put: async () => {},
  list: async () => [],
  get: async () => undefined,
  latest: async () => undefined,
  owner: async () => undefined,
  delete: async () => {},
};

export class MemoryCheckpointer implements Checkpointer {
  private readonly threads = new Map<string, Checkpoint[]>();
  private readonly owners = new Map<string, string>();

  constructor(
    private readonly maxThreads = 1000,
    private readonly maxPerThread = 100,
  ) {}

  async put(agent: string, checkpoint: Checkpoint, principal?: string): Promise<void> {
    const k = key(agent, checkpoint.thread_id);
    const chain = this.threads.get(k) ?? [];
    if (!this.threads.has(k)) this.owners.set(k, ownerFor(principal));
    this.threads.delete(k); // re-insert so Map order is recency order
    chain.push(checkpoint);
    if (chain.length > this.maxPerThread) chain.splice(0, chain.length - this.maxPerThread);
    this.threads.set(k, chain);
    while (this.threads.size > this.maxThreads) {
      const oldest = this.threads.keys().next().value!;
      this.threads.delete(oldest);
      this.owners.delete(oldest);
    }
  }

  async owner(agent: string, threadId: string): Promise<string | undefined> {
    return this.owners.get(key(agent, threadId));
  }

  async delete(agent: string, threadId: string): Promise<void> {
    this.threads.delete(key(agent, threadId));
    this.owners.delete(key(agent, threadId));
  }

  async list(agent: string, threadId: string): Promise<Checkpoint[]> {
    return [...(this.threads.get(key(agent, threadId)) ?? [])].reverse();
  }

  async get(agent: string, threadId: string, checkpointId: string): Promise<Checkpoint | undefined> {
    return this.threads.get(key(agent, threadId))?.find((c) => c.id === checkpointId);
  }

  async latest(agent: string, threadId: string): Promise<Checkpoint | undefined> {
    return this.threads.get(key(agent, threadId))?.at(-1);
  }
}

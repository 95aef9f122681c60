/**
 * Checkpoints: a snapshot of the state after every step of a run, chained by `parent_id`, per
 * agent and thread. The studio lists them (history, newest first), reads the latest as the thread
 * state, and resumes from one; the engine writes them.
 */

import { ownerFor } from '../kernel/ownership.js';
import type { KeyedLog, Store } from '../kernel/store.js';
import type { SqlAccess } from '../storage/sqlite-sql.js';
import { THREAD_MESSAGES_LOG } from '../threads/service.js';
import { CheckpointTables } from './checkpoint-tables.js';
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
  /** Newest step first (the order the studio's history route shows), at most `limit`. */
  list(agent: string, threadId: string, limit?: number): Promise<Checkpoint[]>;
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
    list: (agent, threadId, limit) => checkpointer.list(agent, threadId, limit),
    get: (agent, threadId, checkpointId) => checkpointer.get(agent, threadId, checkpointId),
    latest: (agent, threadId) => checkpointer.latest(agent, threadId),
    owner: (agent, threadId) => checkpointer.owner(agent, threadId),
    delete: (agent, threadId) => checkpointer.delete(agent, threadId),
  };
}

const key = (agent: string, threadId: string) => `${agent}/${threadId}`;

export interface StoreCheckpointerOptions {
  /** The threads' message log, which checkpoints refer to instead of copying messages (default: the store's). */
  threadMessages?: KeyedLog<unknown>;
  /** `checkpoints.keep`: the newest steps kept per thread; undefined (the default) keeps all. */
  keep?: number;
}

/**
 * Persistent checkpoints in the workspace's SQLite database (core/agents/checkpoint-tables.ts):
 * a step stores the channels it changed and refers to messages by their position in the thread's
 * log, so its cost is that of its own change, whatever the conversation's length.
 *
 * Decision (the store issue, #25, says "default: all"): every step is kept unless
 * `checkpoints.keep` names how many per thread, as LangGraph's SQLite checkpointer keeps every
 * checkpoint; older ones are then pruned in the background, never by the put that passed the bound.
 */
export class StoreCheckpointer implements Checkpointer {
  private readonly tables: CheckpointTables;

  constructor(store: Store, options: StoreCheckpointerOptions = {}) {
    this.tables = new CheckpointTables(sqlOf(store), store, {
      threadMessages: options.threadMessages ?? store.appendLog(THREAD_MESSAGES_LOG),
      keep: options.keep,
    });
  }

  put(agent: string, checkpoint: Checkpoint, principal?: string): Promise<void> {
    return this.tables.put(key(agent, checkpoint.thread_id), checkpoint, principal);
  }

  owner(agent: string, threadId: string): Promise<string | undefined> {
    return this.tables.owner(key(agent, threadId));
  }

  delete(agent: string, threadId: string): Promise<void> {
    return this.tables.delete(key(agent, threadId));
  }

  list(agent: string, threadId: string, limit?: number): Promise<Checkpoint[]> {
    return this.tables.list(key(agent, threadId), threadId, limit);
  }

  get(agent: string, threadId: string, checkpointId: string): Promise<Checkpoint | undefined> {
    return this.tables.get(key(agent, threadId), threadId, checkpointId);
  }

  latest(agent: string, threadId: string): Promise<Checkpoint | undefined> {
    return this.tables.latest(key(agent, threadId), threadId);
  }

  /** Before the thread's messages are replaced: checkpoints keep their own copy of what they refer to. */
  detachMessages(agent: string, threadId: string): Promise<void> {
    return this.tables.detachMessages(key(agent, threadId));
  }

  /** Resolves once the background pruning scheduled so far is done. */
  settled(): Promise<void> {
    return this.tables.settled();
  }
}

/** The SQL beneath the store: checkpoints are laid out in tables of their own. */
function sqlOf(store: Store): SqlAccess {
  const sql = store as Partial<SqlAccess>;
  if (typeof sql.statement !== 'function' || typeof sql.transaction !== 'function') {
    throw new Error('persistent checkpoints need the SQLite store');
  }
  return sql as SqlAccess;
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

  async list(agent: string, threadId: string, limit?: number): Promise<Checkpoint[]> {
    return [...(this.threads.get(key(agent, threadId)) ?? [])].reverse().slice(0, limit);
  }

  async get(agent: string, threadId: string, checkpointId: string): Promise<Checkpoint | undefined> {
    return this.threads.get(key(agent, threadId))?.find((c) => c.id === checkpointId);
  }

  async latest(agent: string, threadId: string): Promise<Checkpoint | undefined> {
    return this.threads.get(key(agent, threadId))?.at(-1);
  }
}

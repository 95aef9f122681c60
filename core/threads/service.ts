/**
 * Conversation threads, per agent: records, messages, summaries, forks and lineage.
 *
 * Storage layout: thread records are small and listed often (a collection with an index per list
 * the API serves); messages grow, so they live in the store's keyed log under `agent/thread` — an
 * append adds rows and never reads or rewrites what the thread holds. The thread's `updated_at`
 * follows its conversation without a write to its record: the log's head keeps when the messages
 * last changed, and reads take the later of that and the record's own (see `present`). The
 * summary is cached in its own collection with the messages `version` it was made from, so any
 * change to the messages (append, clear) invalidates it for free.
 *
 * Concurrency: each append is one store transaction, so 50 concurrent appends to one thread all
 * land (in arrival order).
 *
 * Ownership (core/kernel/ownership.ts): a thread belongs to the principal that made it — by
 * creating it, or by the first chat, invoke or studio run that named its id. Every method that
 * reads or changes a thread takes the caller's principal; another principal's thread answers
 * like an unknown one. The thread's record is not its only part: the agent runtime and the
 * studio keep checkpoints, pending approvals and runs under the same id and `attach` themselves
 * here, so the owner is whoever owns any part, and a delete removes every part.
 */

import type { ChatMessage } from '../agents/types.js';
import { fail } from '../kernel/errors.js';
import { canSee, ownerFor, ownerOf, visibleTo } from '../kernel/ownership.js';
import type { Collection, KeyedLog, Store } from '../kernel/store.js';
import { timeOrderedId } from '../storage/ids.js';
import type { CreateThreadRequest, ForkThreadRequest, Message, Thread, UpdateThreadRequest } from './schemas.js';

interface CachedSummary {
  text: string;
  /** The messages version it was made from; valid only while the messages are at that version. */
  version: number;
  method: 'model' | 'extractive';
}

export interface LineageEntry {
  id: string;
  title: string | null;
  parent_thread_id: string | null;
  /** True for an ancestor that was deleted: only its id is known, and the chain ends there. */
  deleted: boolean;
}

/**
 * What another subsystem keeps under a thread's id (checkpoints, approvals, studio runs).
 * `owner` says who owns what it holds (undefined: nothing); `beforeDelete` may refuse a delete
 * (throw) before anything is removed; `delete` removes the part.
 */
export interface ThreadPart {
  name: string;
  owner(agent: string, threadId: string): Promise<string | undefined>;
  beforeDelete?(agent: string, threadId: string): void | Promise<void>;
  /** Before the thread's messages are replaced (clear, a fork onto the id): a part referring to them keeps a copy. */
  beforeMessagesReplaced?(agent: string, threadId: string): Promise<void>;
  delete(agent: string, threadId: string): Promise<void>;
}

/**
 * The model a summary asks, when one is configured: the part of the agent runtime's model provider
 * threads use, so this service does not depend on how agents reach models.
 */
export interface SummaryModel {
  readonly configured: boolean;
  complete(request: { messages: ChatMessage[] }): Promise<string>;
}

/** One page of an agent's threads and how many match in all. */
export interface ThreadPage {
  threads: Thread[];
  total: number;
}

/** How a thread id stands for a caller: nobody's yet, theirs (or visible to them), or someone else's. */
export type ThreadAccess = 'free' | 'visible' | 'hidden';

const key = (agent: string, threadId: string) => `${agent}/${threadId}`;

/** The store's log of every thread's messages, keyed `agent/thread` (checkpoints refer into it). */
export const THREAD_MESSAGES_LOG = 'thread_messages';

export class ThreadService {
  private readonly threads: Collection<Thread>;
  private readonly messageLog: KeyedLog<Message>;
  private readonly summaries: Collection<CachedSummary>;
  private readonly parts: ThreadPart[] = [];

  constructor(
    store: Store,
    private readonly provider: SummaryModel,
    private readonly onModelError: (err: unknown) => void = () => {},
  ) {
    // An index per list the API serves: an agent's threads newest first, of one user, of one
    // principal, and a thread's children (lineage).
    this.threads = store.collection<Thread>('threads', {
      shards: 64,
      indexes: [
        ['agent_name', 'created_at'],
        ['agent_name', 'user_id', 'created_at'],
        ['agent_name', 'principal', 'created_at'],
        ['agent_name', 'parent_thread_id', 'created_at'],
      ],
    });
    this.messageLog = store.appendLog<Message>(THREAD_MESSAGES_LOG);
    this.summaries = store.collection<CachedSummary>('thread_summaries', { shards: 16 });
  }

  /** Register a part kept under thread ids (see `ThreadPart`). */
  attach(part: ThreadPart): void {
    this.parts.push(part);
  }

  /**
   * Who owns the thread id: its record's principal, else the owner of any attached part (a thread
   * the studio or a named-thread invoke started has checkpoints but no record).
   */
  async owner(agent: string, threadId: string): Promise<string | undefined> {
    const record = await this.threads.get(key(agent, threadId));
    if (record) return ownerOf(record);
    for (const part of this.parts) {
      const owner = await part.owner(agent, threadId);
      if (owner !== undefined) return owner;
    }
    return undefined;
  }

  async access(agent: string, threadId: string, principal: string | undefined): Promise<ThreadAccess> {
    const owner = await this.owner(agent, threadId);
    if (owner === undefined) return 'free';
    return canSee(principal, { principal: owner }) ? 'visible' : 'hidden';
  }

  /**
   * Decision: ids are per agent, not per principal, so creating a thread whose id someone else
   * holds answers the same 409 as any taken id — the id is revealed as taken, nothing of it is
   * shown. Generated ids (the default) never collide.
   */
  async create(agent: string, request: CreateThreadRequest, principal?: string): Promise<Thread> {
    const id = request.thread_id ?? timeOrderedId();
    if ((await this.access(agent, id, principal)) === 'hidden') throw fail('HANGAR_THREAD_EXISTS', { thread: id, agent });
    const now = new Date().toISOString();
    const thread: Thread = {
      id,
      user_id: request.user_id,
      agent_name: agent,
      title: request.title ?? null,
      metadata: request.metadata,
      created_at: now,
      updated_at: now,
      principal: ownerFor(principal),
    };
    let existed = false;
    await this.threads.update(key(agent, id), (current) => {
      existed = current !== undefined;
      return current ?? thread;
    });
    if (existed) throw fail('HANGAR_THREAD_EXISTS', { thread: id, agent });
    return thread;
  }

  /**
   * The thread, created on first use (chat with a new or generated thread id). The caller has
   * checked `access` first; a new record is owned by whoever owns the id's other parts, else by
   * the caller, so a chat of `local` on someone's studio thread does not take it over.
   */
  async ensure(agent: string, threadId: string, userId: string, principal?: string): Promise<Thread> {
    const existing = await this.threads.get(key(agent, threadId));
    if (existing) return existing;
    const owner = (await this.owner(agent, threadId)) ?? ownerFor(principal);
    const now = new Date().toISOString();
    const fresh: Thread = {
      id: threadId,
      user_id: userId,
      agent_name: agent,
      title: null,
      metadata: {},
      created_at: now,
      updated_at: now,
      principal: owner,
    };
    // `update` keeps whichever thread won a race between two first messages.
    return (await this.threads.update(key(agent, threadId), (current) => current ?? fresh))!;
  }

  /** The thread record; unknown, or another principal's → the same 404. */
  async get(agent: string, threadId: string, principal?: string): Promise<Thread> {
    return (await this.present([await this.visible(agent, threadId, principal)]))[0]!;
  }

  /** The stored record, as `get` checks it, for the methods that only need the check or its fields (not `updated_at`). */
  private async visible(agent: string, threadId: string, principal?: string): Promise<Thread> {
    const thread = await this.threads.get(key(agent, threadId));
    if (!thread || !canSee(principal, thread)) throw fail('HANGAR_THREAD_NOT_FOUND', { thread: threadId, agent });
    return thread;
  }

  /**
   * Threads as callers see them: `updated_at` is the later of the record's own (created, renamed)
   * and the last change of the thread's messages, read from the message log's heads in one query
   * for a whole page. An append then writes the messages alone: it used to rewrite the thread's
   * record and its four index entries in a second transaction, most of an append's cost and the
   * part that grew with the number of threads (bench/agents.bench.ts).
   */
  private async present(threads: Thread[]): Promise<Thread[]> {
    if (threads.length === 0) return threads;
    const changed = await this.messageLog.changedAt(threads.map((thread) => key(thread.agent_name, thread.id)));
    return threads.map((thread) => {
      const at = changed.get(key(thread.agent_name, thread.id));
      return at !== undefined && at > Date.parse(thread.updated_at) ? { ...thread, updated_at: new Date(at).toISOString() } : thread;
    });
  }

  async exists(agent: string, threadId: string): Promise<boolean> {
    return this.threads.has(key(agent, threadId));
  }

  /**
   * Newest first; only the caller's threads; `userId` keeps only that user's threads. Served from
   * the collection's indexes: a page reads only its rows, however many threads are stored.
   */
  async list(agent: string, userId?: string, principal?: string, page: { limit?: number; offset?: number } = {}): Promise<ThreadPage> {
    const where = { agent_name: agent, ...(userId === undefined ? {} : { user_id: userId }), ...visibleTo(principal) };
    const { items, total } = await this.threads.query({ where, orderBy: [{ field: 'created_at', desc: true }], ...page });
    return { threads: await this.present(items), total };
  }

  /**
   * Decision: like the spec's pydantic-style optional fields, a field that is absent or null is
   * left as it is; a body that changes nothing is the spec's 400 "no fields to update".
   */
  async update(agent: string, threadId: string, request: UpdateThreadRequest, principal?: string): Promise<Thread> {
    if (request.title == null && request.metadata == null) throw fail('HANGAR_THREAD_NO_CHANGES', {});
    let hidden = false;
    const updated = await this.threads.update(key(agent, threadId), (current) => {
      if (!current) return undefined;
      if (!canSee(principal, current)) {
        hidden = true;
        return current;
      }
      return {
        ...current,
        ...(request.title != null ? { title: request.title } : {}),
        ...(request.metadata != null ? { metadata: request.metadata } : {}),
        updated_at: new Date().toISOString(),
      };
    });
    if (!updated || hidden) throw fail('HANGAR_THREAD_NOT_FOUND', { thread: threadId, agent });
    return updated;
  }

  /**
   * Delete the thread and everything kept under its id: messages, summary, and every attached
   * part (checkpoints, pending approvals, studio runs), so nothing of the conversation stays
   * readable. A thread the studio shows but that has no record (a studio run, an invoke that
   * named the id) can be deleted too. Parts may refuse first (a studio run executing on it → 409);
   * the record goes last, so a delete that fails half-way can be repeated.
   */
  async delete(agent: string, threadId: string, principal?: string): Promise<void> {
    if ((await this.access(agent, threadId, principal)) !== 'visible') throw fail('HANGAR_THREAD_NOT_FOUND', { thread: threadId, agent });
    for (const part of this.parts) await part.beforeDelete?.(agent, threadId);
    await this.messageLog.delete(key(agent, threadId));
    await this.summaries.delete(key(agent, threadId));
    for (const part of this.parts) await part.delete(agent, threadId);
    await this.threads.delete(key(agent, threadId));
  }

  async append(agent: string, threadId: string, messages: Array<ChatMessage | Message>): Promise<number> {
    const now = new Date().toISOString();
    const stamped: Message[] = messages.map((m) => ({
      role: m.role,
      content: m.content,
      timestamp: m.timestamp ?? now,
      ...('metadata' in m && m.metadata ? { metadata: m.metadata } : {}),
    }));
    const { length } = await this.messageLog.append(key(agent, threadId), stamped);
    return length;
  }

  private async replacing(agent: string, threadId: string): Promise<void> {
    for (const part of this.parts) await part.beforeMessagesReplaced?.(agent, threadId);
  }

  /** Every message, oldest first (no thread check: a missing thread has none). */
  async allMessages(agent: string, threadId: string): Promise<Message[]> {
    return [...((await this.messageLog.get(key(agent, threadId)))?.items ?? [])];
  }

  /** The newest `max` messages (all when `max` is null), oldest first — chat history. */
  async history(agent: string, threadId: string, max: number | null): Promise<Message[]> {
    if (max === null) return this.allMessages(agent, threadId);
    if (max <= 0) return [];
    // Only the newest `max` are read: a turn on a long thread costs what a turn on a short one does.
    return (await this.messageLog.range(key(agent, threadId), -max, max)).items;
  }

  async messages(agent: string, threadId: string, limit: number, offset: number, principal?: string) {
    await this.visible(agent, threadId, principal);
    const { items: page, total } = await this.messageLog.range(key(agent, threadId), offset, limit);
    return { thread_id: threadId, messages: page, count: page.length, total, limit, offset };
  }

  async clear(agent: string, threadId: string, principal?: string): Promise<void> {
    await this.visible(agent, threadId, principal);
    await this.replacing(agent, threadId);
    await this.messageLog.set(key(agent, threadId), []);
  }

  /**
   * The cached summary while the messages are unchanged; otherwise a new one — from the model when
   * one is configured, else extractive. A model failure falls back to extractive (logged through
   * `onModelError`) and is not cached, so the next request tries the model again.
   */
  async summary(
    agent: string,
    threadId: string,
    principal?: string,
  ): Promise<{ thread_id: string; summary: string; method: 'model' | 'extractive' }> {
    await this.visible(agent, threadId, principal);
    const record = await this.messageLog.get(key(agent, threadId));
    const version = record?.version ?? 0;
    const cached = await this.summaries.get(key(agent, threadId));
    if (cached && cached.version === version) {
      return { thread_id: threadId, summary: cached.text, method: cached.method };
    }
    const messages = [...(record?.items ?? [])];
    let text: string | undefined;
    let method: 'model' | 'extractive' = 'extractive';
    if (this.provider.configured && messages.length > 0) {
      try {
        text = (await this.provider.complete({ messages: summaryPrompt(messages) })).trim();
        method = 'model';
      } catch (err) {
        this.onModelError(err);
      }
    }
    const cache = text !== undefined;
    text ??= extractiveSummary(messages);
    if (cache || !this.provider.configured) {
      // Only cache if nothing changed while the summary was being made.
      if ((await this.messageLog.get(key(agent, threadId)))?.version === version) {
        await this.summaries.put(key(agent, threadId), { text, version, method });
      }
    }
    return { thread_id: threadId, summary: text, method };
  }

  /**
   * A new thread with the messages 0..message_index (inclusive) of the source, remembering its
   * parent and the fork point. Decision: the fork keeps the parent's user and metadata; its title
   * defaults to "<parent title or id> (fork)". The fork belongs to the caller.
   */
  async fork(agent: string, threadId: string, request: ForkThreadRequest, principal?: string): Promise<Thread> {
    const parent = await this.visible(agent, threadId, principal);
    const messages = await this.allMessages(agent, threadId);
    const index = request.message_index;
    if (index < 0 || index >= messages.length) {
      throw fail('HANGAR_THREAD_FORK_OUT_OF_RANGE', {
        index,
        thread: threadId,
        count: messages.length,
        valid: messages.length ? ` (valid: 0-${messages.length - 1})` : '',
      });
    }
    const id = request.new_thread_id ?? timeOrderedId();
    if ((await this.access(agent, id, principal)) === 'hidden') throw fail('HANGAR_THREAD_EXISTS', { thread: id, agent });
    const now = new Date().toISOString();
    const fork: Thread = {
      id,
      user_id: parent.user_id,
      agent_name: agent,
      title: request.title ?? `${parent.title ?? parent.id} (fork)`,
      metadata: { ...parent.metadata },
      created_at: now,
      updated_at: now,
      parent_thread_id: parent.id,
      fork_message_index: index,
      principal: ownerFor(principal),
    };
    let existed = false;
    await this.threads.update(key(agent, id), (current) => {
      existed = current !== undefined;
      return current ?? fork;
    });
    if (existed) throw fail('HANGAR_THREAD_EXISTS', { thread: id, agent });
    await this.replacing(agent, id);
    await this.messageLog.set(key(agent, id), messages.slice(0, index + 1));
    return fork;
  }

  /**
   * Ancestors root-first, and every descendant (breadth-first, so children before grandchildren),
   * of the caller's threads only.
   *
   * Decision: a deleted ancestor is listed as `{id, title: null, parent_thread_id: null, deleted:
   * true}` and ends the chain — its id is all that is left (its own parent went with it). An
   * ancestor the caller may not see (only possible after `local` forked someone's thread) ends the
   * chain without being shown.
   */
  async lineage(
    agent: string,
    threadId: string,
    principal?: string,
  ): Promise<{ thread_id: string; ancestors: LineageEntry[]; descendants: LineageEntry[] }> {
    const thread = await this.visible(agent, threadId, principal);
    const entry = (t: Thread): LineageEntry => ({ id: t.id, title: t.title, parent_thread_id: t.parent_thread_id ?? null, deleted: false });

    const ancestors: LineageEntry[] = [];
    const seen = new Set([thread.id]);
    for (let p = thread.parent_thread_id; p && !seen.has(p); ) {
      seen.add(p);
      const parent = await this.threads.get(key(agent, p));
      if (!parent) {
        ancestors.push({ id: p, title: null, parent_thread_id: null, deleted: true });
        break;
      }
      if (!canSee(principal, parent)) break;
      ancestors.push(entry(parent));
      p = parent.parent_thread_id;
    }
    ancestors.reverse();

    // Children come from the (agent, parent) index, one indexed read per thread of the tree.
    const descendants: LineageEntry[] = [];
    const queue = [thread.id];
    while (queue.length) {
      const { items } = await this.threads.query({
        where: { agent_name: agent, parent_thread_id: queue.shift()! },
        orderBy: [{ field: 'created_at' }],
      });
      for (const kid of items.filter((t) => canSee(principal, t))) {
        if (seen.has(kid.id)) continue;
        seen.add(kid.id);
        descendants.push(entry(kid));
        queue.push(kid.id);
      }
    }
    return { thread_id: threadId, ancestors, descendants };
  }
}

function summaryPrompt(messages: Message[]): ChatMessage[] {
  const transcript = messages
    .map((m) => `${m.role}: ${m.content}`)
    .join('\n')
    .slice(-12_000);
  return [
    {
      role: 'system',
      content: 'Summarise the conversation in at most three sentences. Name the topics and any decisions or open questions.',
    },
    { role: 'user', content: transcript },
  ];
}

const STOP = new Set(
  'a an and are as at be but by can do for from has have how i if in is it its me my no not of on or so that the this to was we what when which who why will with you your'.split(
    ' ',
  ),
);

/**
 * A Luhn-style extractive summary: sentences scored by how many of the conversation's frequent
 * content words they contain; the best three are kept in their original order.
 */
export function extractiveSummary(messages: Message[]): string {
  if (messages.length === 0) return 'This thread has no messages yet.';
  const words = (s: string) =>
    s
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu)
      ?.filter((w) => w.length > 2 && !STOP.has(w)) ?? [];
  const freq = new Map<string, number>();
  for (const m of messages) for (const w of words(m.content)) freq.set(w, (freq.get(w) ?? 0) + 1);
  const sentences = messages.flatMap((m, mi) =>
    m.content
      .split(/(?<=[.!?])\s+/)
      .map((s) => s.trim())
      .filter(Boolean)
      .map((text, si) => ({ text, role: m.role, order: mi * 1000 + si })),
  );
  const scored = sentences.map((s) => {
    const ws = words(s.text);
    const score = ws.reduce((n, w) => n + (freq.get(w) ?? 0), 0) / Math.sqrt(ws.length || 1);
    return { ...s, score };
  });
  const best = [...scored]
    .sort((a, b) => b.score - a.score)
    .slice(0, 3)
    .sort((a, b) => a.order - b.order);
  const users = messages.filter((m) => m.role === 'user').length;
  const topics = [...freq]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([w]) => w);
  const clip = (s: string) => (s.length > 200 ? `${s.slice(0, 197)}...` : s);
  return (
    `${messages.length} messages (${users} from the user)` +
    (topics.length ? `; topics: ${topics.join(', ')}` : '') +
    `. ${best.map((s) => `${s.role}: ${clip(s.text)}`).join(' ')}`
  ).trim();
}

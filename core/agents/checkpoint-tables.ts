/**
 * Checkpoints in the workspace's SQLite database, costing what their step changed rather than
 * what the conversation holds — the layout of LangGraph's checkpoint blobs keyed by channel
 * version, plus messages stored once:
 *
 * - `cp_steps`: one row per checkpoint (id, parent, step, time, source/node/next, other metadata;
 *   its row id is the chain's number and its seq, and an index of the id's first four bytes finds a step by id)
 *   and, per channel (a top-level key of the state, and the run's input as one more), the version
 *   of the value it holds: a small value is written in the row, a larger one once in `cp_blobs`
 *   under the step that wrote it, and a later step that did not change it names that version.
 * - Message lists (`state.messages`, the input's `history`) refer to positions in the thread's
 *   message log (core/threads), which holds every message of a chat once; messages no thread log
 *   holds (a studio conversation, a tool call's answer) go once into `cp_messages`, the chain's
 *   own list. A run's first messages (history + question) are stored as "the input's".
 * - `cp_chains`: per thread, the owner, the next step number, the channel names (rows name
 *   channels by index) and the length of the chain's own message list.
 *
 * So a chat turn writes two short rows and a few small values, whatever the thread's length.
 * Old workspaces' steps (whole states in the records table, one record per step or one per
 * thread) are converted the first time their thread is touched.
 */

import { fail } from '../kernel/errors.js';
import { ownerFor } from '../kernel/ownership.js';
import type { KeyedLog, Store } from '../kernel/store.js';
import type { SqlAccess } from '../storage/sqlite-sql.js';
import {
  applyRunPatch,
  channelsOf,
  type Entry,
  encodeChannel,
  encodeRun,
  initialMessages,
  isInitial,
  isInitialEntry,
  messageLists,
  parentColumn,
  RUN,
  type RunValue,
  runPatch,
  splitMetadata,
  trimNulls,
} from './checkpoint-channels.js';
import {
  isSegments,
  type MessageWindow,
  packId,
  packTime,
  type Segment,
  spans,
  toSegments,
  unpackId,
  unpackTime,
} from './checkpoint-codec.js';
import type { Checkpoint, CheckpointMetadata } from './checkpointer.js';
import type { AgentState } from './types.js';

/** Values whose JSON is at most this long are written in the step's row rather than as a blob. */
const INLINE = 64;
/** Extra positions read around a message list's expected place (appends by concurrent turns). */
const SLACK = 16;

interface ChainRow {
  id: number;
  principal: string | null;
  next: number;
  channels: string;
  messages: number;
}

interface StepRow {
  seq: number;
  id: unknown;
  parent: unknown;
  step: number;
  ts: unknown;
  source: string | null;
  node: string | null;
  next: string | null;
  extra: string | null;
  versions: string;
}

/** The last step this process wrote per chain: unchanged channels are found without encoding them. */
interface Written {
  seq: number;
  raw: Map<string, string>;
}

export interface CheckpointTablesOptions {
  /** The threads' message log (`agent/thread` → messages), which message lists refer into. */
  threadMessages: KeyedLog<unknown>;
  /** Steps kept per thread (`checkpoints.keep`); undefined keeps all. */
  keep?: number;
}

/**
 * A step's row id is its chain's number × STEP_SPAN + its seq (the migration in sqlite-store.ts):
 * a chain's steps are one range of the table's own b-tree, and steps appended at the end of the
 * newest chain fill its pages whole. 2^28 steps a chain; chain numbers below 2^25 keep row ids
 * safe JavaScript integers.
 */
const STEP_SPAN = 2 ** 28;
const MAX_CHAIN = 2 ** 25;
/** The steps of the chain bound as ?1. */
const IN_CHAIN = `k >= ?1 * ${STEP_SPAN} AND k < (?1 + 1) * ${STEP_SPAN}`;
const SELECT_STEP = `SELECT k % ${STEP_SPAN} AS seq, id, parent, step, ts, source, node, next, extra, versions FROM cp_steps`;

export class CheckpointTables {
  private readonly written = new Map<string, Written>();
  /** Chains still in an older layout (found once, on first use); empty once converted. */
  private legacy: Set<string> | undefined;
  private pruning: Promise<void> = Promise.resolve();
  private readonly prunesDue = new Set<number>();

  constructor(
    private readonly sql: SqlAccess,
    private readonly store: Store,
    private readonly options: CheckpointTablesOptions,
  ) {}

  // ——— writing ———

  async put(name: string, checkpoint: Checkpoint, principal?: string): Promise<void> {
    await this.upgrade(name);
    await this.write(name, checkpoint, principal);
  }

  private async write(name: string, checkpoint: Checkpoint, principal: string | undefined, seq?: number): Promise<void> {
    const channels = channelsOf(checkpoint);
    const raw = new Map<string, string>();
    for (const [channel, value] of channels) raw.set(channel, JSON.stringify(value));
    const cached = this.written.get(name);
    const lists = messageLists(channels);
    // The thread's log is read only when a message list may have changed since this chain's last step.
    const longest = Math.max(0, ...lists.filter(([channel]) => cached?.raw.get(channel) !== raw.get(channel)).map(([, l]) => l.length));
    const window = longest > 0 ? await this.threadWindow(name, longest) : undefined;
    const written = this.sql.transaction(
      () => this.insert(name, checkpoint, principal, channels, raw, cached, window, seq),
      `the checkpoints of ${name}`,
    );
    this.remember(name, { seq: written.seq, raw });
    if (this.options.keep !== undefined && written.rows > this.options.keep + pruneSlack(this.options.keep))
      this.schedulePrune(written.chain);
  }

  private remember(name: string, written: Written): void {
    this.written.delete(name);
    this.written.set(name, written);
    if (this.written.size > 512) this.written.delete(this.written.keys().next().value!);
  }

  private async threadWindow(name: string, length: number): Promise<MessageWindow> {
    const { items, total } = await this.options.threadMessages.range(name, -(length + SLACK), length + SLACK);
    return { source: 't', start: total - items.length, texts: items.map((item) => JSON.stringify(item)) };
  }

  /** Inside the write transaction: the step's row, its changed values and its new messages. */
  private insert(
    name: string,
    checkpoint: Checkpoint,
    principal: string | undefined,
    channels: Array<[string, unknown]>,
    raw: Map<string, string>,
    cached: Written | undefined,
    threadWindow: MessageWindow | undefined,
    forcedSeq: number | undefined,
  ): { seq: number; chain: number; rows: number } {
    const chain = this.chain(name) ?? this.createChain(name, principal);
    const seq = forcedSeq ?? chain.next;
    if (seq >= STEP_SPAN || chain.id >= MAX_CHAIN)
      throw fail('HANGAR_STORAGE_WRITE_FAILED', {
        what: `the checkpoints of ${name}`,
        reason: `a thread keeps at most ${STEP_SPAN.toLocaleString('en')} checkpoints and a store ${MAX_CHAIN.toLocaleString('en')} threads with checkpoints`,
      });
    const names = JSON.parse(chain.channels) as string[];
    const latest = this.sql
      .statement(`SELECT k % ${STEP_SPAN} AS seq, id, versions FROM cp_steps WHERE ${IN_CHAIN} ORDER BY k DESC LIMIT 1`)
      .get(chain.id) as { seq: number; id: unknown; versions: string } | undefined;
    const previous = latest ? (JSON.parse(latest.versions) as Entry[]) : [];
    const sameAsCached = cached !== undefined && latest !== undefined && cached.seq === latest.seq;

    let messageCount = chain.messages;
    let chainWindow: MessageWindow | undefined;
    const encodeList = (list: unknown[]): Segment[] => {
      const texts = list.map((m) => JSON.stringify(m) ?? 'null');
      chainWindow ??= this.chainWindow(chain.id, messageCount, texts.length);
      const windows = threadWindow ? [threadWindow, chainWindow] : [chainWindow];
      const { segments, fresh } = toSegments(texts, windows, messageCount);
      const insert = this.sql.statement('INSERT INTO cp_messages (chain, position, value) VALUES (?, ?, ?)');
      for (const text of fresh) {
        insert.run(chain.id, messageCount++, text);
        (chainWindow.texts as string[]).push(text);
      }
      return segments;
    };

    const entries: Entry[] = names.map(() => null);
    const run = channels.find(([channel]) => channel === RUN)?.[1] as CheckpointMetadata | undefined;
    // The run channel first: its history's new messages can then be matched by the state's list.
    const order = [...channels].sort(([a], [b]) => (a === RUN ? -1 : b === RUN ? 1 : 0));
    for (const [channel, value] of order) {
      let index = names.indexOf(channel);
      if (index < 0) index = names.push(channel) - 1;
      const before = previous[index] ?? null;
      if (channel === 'messages' && run && isInitial(value, run.input)) {
        entries[index] = [0];
        continue;
      }
      if (sameAsCached && before !== null && cached.raw.get(channel) === raw.get(channel) && !isInitialEntry(channel, before)) {
        entries[index] = before;
        continue;
      }
      const encoded =
        channel === RUN
          ? this.againstBase(chain.id, index, before, encodeRun(value as Record<string, unknown>, encodeList))
          : encodeChannel(channel, value, encodeList);
      const text = JSON.stringify(encoded);
      if (Array.isArray(before) && JSON.stringify(before[0]) === text) entries[index] = before;
      else if (typeof before === 'number' && this.blobText(chain.id, index, before) === text) entries[index] = before;
      else if (text.length <= INLINE) entries[index] = [encoded];
      else {
        this.sql
          .statement(
            'INSERT INTO cp_blobs (chain, channel, version, value) VALUES (?, ?, ?, ?) ON CONFLICT (chain, channel, version) DO UPDATE SET value = excluded.value',
          )
          .run(chain.id, index, seq, text);
        entries[index] = seq;
      }
    }

    const { source, node, next, extra } = splitMetadata(checkpoint.metadata);
    this.sql
      .statement(
        'INSERT INTO cp_steps (k, id, parent, step, ts, source, node, next, extra, versions) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        chain.id * STEP_SPAN + seq,
        packId(checkpoint.id),
        parentColumn(checkpoint.parent_id, forcedSeq === undefined ? latest?.id : undefined),
        checkpoint.step,
        packTime(checkpoint.timestamp),
        source,
        node,
        next,
        extra,
        JSON.stringify(trimNulls(entries)),
      );
    const nextSeq = Math.max(chain.next, seq + 1);
    this.sql
      .statement('UPDATE cp_chains SET next = ?, channels = ?, messages = ? WHERE id = ?')
      .run(nextSeq, JSON.stringify(names), messageCount, chain.id);
    const first = (this.sql.statement(`SELECT MIN(k) % ${STEP_SPAN} AS s FROM cp_steps WHERE ${IN_CHAIN}`).get(chain.id) as { s: number })
      .s;
    return { seq, chain: chain.id, rows: nextSeq - first };
  }

  /**
   * A run's value as a patch on the chain's last whole run value, when that is shorter: runs of
   * one thread share their agent, user, prompt version and settings, and differ in the question.
   */
  private againstBase(chain: number, channel: number, before: Entry, run: RunValue): RunValue {
    if (typeof before !== 'number') return run;
    const previous = JSON.parse(this.blobText(chain, channel, before) ?? 'null') as RunValue | null;
    if (!previous) return run;
    const baseVersion = previous.b ?? before;
    const base =
      previous.b === undefined ? previous : (JSON.parse(this.blobText(chain, channel, baseVersion) ?? 'null') as RunValue | null);
    if (!base || base.b !== undefined) return run;
    const patch = runPatch(base, run);
    return patch && JSON.stringify(patch).length < JSON.stringify(run).length ? { ...patch, b: baseVersion } : run;
  }

  /** A stored run value, its patch applied to its base. */
  private wholeRun(chain: number, channel: number, stored: RunValue | undefined): RunValue | undefined {
    if (!stored || stored.b === undefined) return stored;
    const base = JSON.parse(this.blobText(chain, channel, stored.b) ?? '{}') as RunValue;
    return applyRunPatch(base, stored);
  }

  private chainWindow(chain: number, length: number, want: number): MessageWindow {
    const start = Math.max(0, length - want - SLACK);
    const rows = this.sql
      .statement('SELECT value FROM cp_messages WHERE chain = ? AND position >= ? ORDER BY position')
      .all(chain, start) as Array<{ value: string }>;
    return { source: 'c', start, texts: rows.map((row) => row.value) };
  }

  private previousId(chain: number, seq: number): unknown {
    const row = this.sql
      .statement(`SELECT id FROM cp_steps WHERE k >= ?1 * ${STEP_SPAN} AND k < ?1 * ${STEP_SPAN} + ?2 ORDER BY k DESC LIMIT 1`)
      .get(chain, seq) as { id: unknown } | undefined;
    return row?.id ?? null;
  }

  private blobText(chain: number, channel: number, version: number): string | undefined {
    const row = this.sql
      .statement('SELECT value FROM cp_blobs WHERE chain = ? AND channel = ? AND version = ?')
      .get(chain, channel, version) as { value: string } | undefined;
    return row?.value;
  }

  private chain(name: string): ChainRow | undefined {
    return this.sql.statement('SELECT id, principal, next, channels, messages FROM cp_chains WHERE chain = ?').get(name) as
      | ChainRow
      | undefined;
  }

  /** A chain this write starts belongs to the writer; an existing one keeps its owner. */
  private createChain(name: string, principal: string | undefined): ChainRow {
    this.sql.statement('INSERT INTO cp_chains (chain, principal, next) VALUES (?, ?, 0)').run(name, ownerFor(principal));
    return this.chain(name)!;
  }

  // ——— reading ———

  /** Newest first; at most `limit`. */
  async list(name: string, threadId: string, limit?: number): Promise<Checkpoint[]> {
    await this.upgrade(name);
    const chain = this.chain(name);
    if (!chain) return [];
    const rows = (limit === undefined
      ? this.sql.statement(`${SELECT_STEP} WHERE ${IN_CHAIN} ORDER BY k DESC`).all(chain.id)
      : this.sql.statement(`${SELECT_STEP} WHERE ${IN_CHAIN} ORDER BY k DESC LIMIT ?2`).all(chain.id, limit)) as unknown as StepRow[];
    return this.decode(name, threadId, chain, rows);
  }

  async get(name: string, threadId: string, id: string): Promise<Checkpoint | undefined> {
    await this.upgrade(name);
    const chain = this.chain(name);
    if (!chain) return undefined;
    // Found by the index of the id's first bytes, within the chain's range of row ids.
    const row = this.sql
      .statement(`${SELECT_STEP} WHERE substr(id, 1, 4) = substr(?2, 1, 4) AND id = ?2 AND ${IN_CHAIN} ORDER BY k DESC LIMIT 1`)
      .get(chain.id, packId(id)) as StepRow | undefined;
    return row ? (await this.decode(name, threadId, chain, [row]))[0] : undefined;
  }

  async latest(name: string, threadId: string): Promise<Checkpoint | undefined> {
    return (await this.list(name, threadId, 1))[0];
  }

  async owner(name: string): Promise<string | undefined> {
    await this.upgrade(name);
    const chain = this.chain(name);
    return chain ? ownerFor(chain.principal ?? undefined) : undefined;
  }

  private async decode(name: string, threadId: string, chain: ChainRow, rows: StepRow[]): Promise<Checkpoint[]> {
    const names = JSON.parse(chain.channels) as string[];
    const blobs = new Map<string, unknown>();
    const stored = (index: number, entry: Entry): unknown => {
      if (entry === null) return undefined;
      if (Array.isArray(entry)) return entry[0];
      const key = `${index}:${entry}`;
      if (!blobs.has(key)) {
        const text = this.blobText(chain.id, index, entry);
        const value = text === undefined ? undefined : JSON.parse(text);
        blobs.set(key, names[index] === RUN ? this.wholeRun(chain.id, index, value) : value);
      }
      return blobs.get(key);
    };
    // A parent stored as "the step before" is the id of the row before it: the next one of a
    // page (pages are consecutive rows, newest first), else read.
    rows.forEach((row, i) => {
      if (typeof row.parent === 'number') row.parent = rows[i + 1]?.id ?? this.previousId(chain.id, row.seq);
    });
    const steps = rows.map((row) => {
      const entries = JSON.parse(row.versions) as Entry[];
      return { row, values: names.map((_, i) => stored(i, entries[i] ?? null)) };
    });
    // Every message the page refers to, read once per source.
    const lists: Segment[][] = [];
    for (const { values } of steps)
      names.forEach((channel, i) => {
        const value = values[i];
        if (channel === RUN && isSegments((value as RunValue | undefined)?.h)) lists.push((value as RunValue).h!);
        else if (channel === 'messages' && isSegments(value)) lists.push(value);
      });
    const span = spans(lists);
    const thread = span.t ? (await this.options.threadMessages.range(name, span.t[0], span.t[1] - span.t[0])).items : [];
    const own = span.c
      ? (
          this.sql
            .statement('SELECT value FROM cp_messages WHERE chain = ? AND position >= ? AND position < ? ORDER BY position')
            .all(chain.id, span.c[0], span.c[1]) as Array<{ value: string }>
        ).map((row) => JSON.parse(row.value))
      : [];
    const materialise = (segments: Segment[]): unknown[] =>
      segments.flatMap(([source, from, to]) =>
        source === 't' ? thread.slice(from - span.t![0], to - span.t![0]) : own.slice(from - span.c![0], to - span.c![0]),
      );

    return steps.map(({ row, values }) => {
      const runIndex = names.indexOf(RUN);
      const run = (runIndex < 0 ? undefined : values[runIndex]) as RunValue | undefined;
      let input: unknown;
      if (run && 'i' in run) input = run.h ? { ...(run.i as object), history: materialise(run.h) } : run.i;
      const state: Record<string, unknown> = {};
      names.forEach((channel, i) => {
        const value = values[i];
        if (channel === RUN || value === undefined) return;
        if (channel !== 'messages') state[channel] = value;
        else if (value === 0) state.messages = initialMessages(input as Record<string, unknown>);
        else if (isSegments(value)) state.messages = materialise(value);
        else state.messages = (value as { v: unknown }).v;
      });
      const metadata: Record<string, unknown> = {};
      if (run && 'r' in run) metadata.run_id = run.r;
      if (run && 'a' in run) metadata.agent = run.a;
      Object.assign(metadata, { source: row.source, node: row.node, next: row.next });
      if (run && 'i' in run) metadata.input = input;
      if (row.extra) Object.assign(metadata, JSON.parse(row.extra));
      return {
        id: unpackId(row.id),
        thread_id: threadId,
        step: row.step,
        state: state as AgentState,
        metadata: metadata as unknown as CheckpointMetadata,
        parent_id: row.parent === null ? null : unpackId(row.parent),
        timestamp: unpackTime(row.ts),
      };
    });
  }

  // ——— removing ———

  async delete(name: string): Promise<void> {
    await this.upgrade(name);
    this.written.delete(name);
    this.sql.transaction(() => {
      const chain = this.chain(name);
      if (!chain) return;
      this.sql.statement(`DELETE FROM cp_steps WHERE ${IN_CHAIN}`).run(chain.id);
      for (const table of ['cp_blobs', 'cp_messages']) this.sql.statement(`DELETE FROM ${table} WHERE chain = ?`).run(chain.id);
      this.sql.statement('DELETE FROM cp_chains WHERE id = ?').run(chain.id);
    }, `the checkpoints of ${name}`);
  }

  /**
   * Before the thread's message log is replaced (cleared, or set by a fork onto this id), the
   * messages its checkpoints refer to are copied into the chain's own list, and the references
   * follow them: an old checkpoint keeps the conversation it had.
   */
  async detachMessages(name: string): Promise<void> {
    if (!this.chain(name)) return;
    const items = (await this.options.threadMessages.get(name))?.items ?? [];
    this.written.delete(name);
    this.sql.transaction(() => {
      const chain = this.chain(name);
      if (!chain) return;
      const base = chain.messages;
      const insert = this.sql.statement('INSERT INTO cp_messages (chain, position, value) VALUES (?, ?, ?)');
      items.forEach((item, i) => insert.run(chain.id, base + i, JSON.stringify(item)));
      this.sql.statement('UPDATE cp_chains SET messages = ? WHERE id = ?').run(base + items.length, chain.id);
      const names = JSON.parse(chain.channels) as string[];
      const moved = (segments: Segment[]): Segment[] =>
        segments.map(([s, from, to]) => (s === 't' ? ['c', base + from, base + to] : [s, from, to]));
      const rewrite = (channel: string, value: unknown): unknown => {
        if (channel === RUN && isSegments((value as RunValue | undefined)?.h))
          return { ...(value as RunValue), h: moved((value as RunValue).h!) };
        if (channel === 'messages' && isSegments(value)) return moved(value);
        return value;
      };
      for (const [index, channel] of names.entries()) {
        if (channel !== RUN && channel !== 'messages') continue;
        const rows = this.sql
          .statement('SELECT version, value FROM cp_blobs WHERE chain = ? AND channel = ?')
          .all(chain.id, index) as Array<{
          version: number;
          value: string;
        }>;
        for (const row of rows)
          this.sql
            .statement('UPDATE cp_blobs SET value = ? WHERE chain = ? AND channel = ? AND version = ?')
            .run(JSON.stringify(rewrite(channel, JSON.parse(row.value))), chain.id, index, row.version);
      }
      const steps = this.sql.statement(`SELECT k % ${STEP_SPAN} AS seq, versions FROM cp_steps WHERE ${IN_CHAIN}`).all(chain.id) as Array<{
        seq: number;
        versions: string;
      }>;
      for (const step of steps) {
        const entries = JSON.parse(step.versions) as Entry[];
        const next = entries.map((entry, i) => (Array.isArray(entry) ? [rewrite(names[i]!, entry[0])] : entry));
        const text = JSON.stringify(next);
        if (text !== step.versions)
          this.sql.statement('UPDATE cp_steps SET versions = ? WHERE k = ?').run(text, chain.id * STEP_SPAN + step.seq);
      }
    }, `the checkpoints of ${name}`);
  }

  /** Resolves once the pruning scheduled so far has run (tests; closing). */
  settled(): Promise<void> {
    return this.pruning;
  }

  /** In the background: a put never waits for it, and a failed prune is retried by a later put. */
  private schedulePrune(chain: number): void {
    if (this.prunesDue.has(chain)) return;
    this.prunesDue.add(chain);
    this.pruning = this.pruning
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => {
        this.prunesDue.delete(chain);
        this.prune(chain);
      })
      .catch(() => {});
  }

  /**
   * Keeps the newest `keep` steps; drops the values and messages only dropped steps referred to.
   * A kept step whose parent went keeps naming it (as LangGraph's pruned history does).
   */
  private prune(chain: number): void {
    const keep = this.options.keep;
    if (keep === undefined) return;
    this.sql.transaction(() => {
      const cutoff = this.sql
        .statement(`SELECT k % ${STEP_SPAN} AS seq FROM cp_steps WHERE ${IN_CHAIN} ORDER BY k DESC LIMIT 1 OFFSET ?2`)
        .get(chain, keep - 1) as { seq: number } | undefined;
      if (!cutoff) return;
      // The oldest kept step names its parent by id once the step before it is gone.
      this.sql
        .statement("UPDATE cp_steps SET parent = ? WHERE k = ? AND typeof(parent) = 'integer'")
        .run(this.previousId(chain, cutoff.seq) as string | null, chain * STEP_SPAN + cutoff.seq);
      this.sql.statement(`DELETE FROM cp_steps WHERE k >= ?1 * ${STEP_SPAN} AND k < ?1 * ${STEP_SPAN} + ?2`).run(chain, cutoff.seq);
      const row = this.sql.statement('SELECT channels FROM cp_chains WHERE id = ?').get(chain) as { channels: string } | undefined;
      if (!row) return;
      const names = JSON.parse(row.channels) as string[];
      // What the kept steps refer to: blob versions (a run patch's base too) and own messages.
      const used = names.map(() => new Set<number>());
      let firstMessage = Number.MAX_SAFE_INTEGER;
      const noteMessages = (channel: string, value: unknown) => {
        const segments = channel === RUN ? (value as RunValue | undefined)?.h : channel === 'messages' ? value : undefined;
        if (isSegments(segments)) for (const [source, from] of segments) if (source === 'c') firstMessage = Math.min(firstMessage, from);
      };
      const kept = this.sql.statement(`SELECT versions FROM cp_steps WHERE ${IN_CHAIN}`).all(chain) as Array<{ versions: string }>;
      for (const step of kept)
        (JSON.parse(step.versions) as Entry[]).forEach((entry, i) => {
          if (typeof entry === 'number') used[i]!.add(entry);
          else if (Array.isArray(entry)) noteMessages(names[i]!, entry[0]);
        });
      const blobs = this.sql.statement('SELECT channel, version, value FROM cp_blobs WHERE chain = ?').all(chain) as Array<{
        channel: number;
        version: number;
        value: string;
      }>;
      for (const blob of blobs) {
        if (!used[blob.channel]?.has(blob.version)) continue;
        const channel = names[blob.channel]!;
        if (channel !== RUN && channel !== 'messages') continue;
        const value = JSON.parse(blob.value) as unknown;
        noteMessages(channel, value);
        const base = channel === RUN ? (value as RunValue).b : undefined;
        if (base !== undefined) used[blob.channel]!.add(base);
      }
      const drop = this.sql.statement('DELETE FROM cp_blobs WHERE chain = ? AND channel = ? AND version = ?');
      for (const blob of blobs) if (!used[blob.channel]?.has(blob.version)) drop.run(chain, blob.channel, blob.version);
      this.sql.statement('DELETE FROM cp_messages WHERE chain = ? AND position < ?').run(chain, firstMessage);
    }, 'pruned checkpoints');
  }

  // ——— older layouts ———

  /**
   * Moves a chain kept in an older layout into this one: first the layout with the whole chain in
   * one record (`checkpoints`), then the one with a record per step (`checkpoint_steps`, keeping
   * their step numbers). Each step is written as a new put would write it.
   */
  private async upgrade(name: string): Promise<void> {
    this.legacy ??= new Set(
      (
        this.sql
          .statement(
            `SELECT json_extract(value, '$.chain') AS chain FROM records WHERE collection = 'checkpoint_steps'
             UNION SELECT id AS chain FROM records WHERE collection = 'checkpoints'`,
          )
          .all() as Array<{ chain: string }>
      ).map((row) => row.chain),
    );
    if (!this.legacy.has(name)) return;
    this.legacy.delete(name);
    const whole = this.store.collection<{ checkpoints: Checkpoint[]; principal?: string }>('checkpoints');
    const steps = this.store.collection<{ chain: string; seq: number; checkpoint: Checkpoint }>('checkpoint_steps');
    const owner = (await this.owner(name)) ?? undefined;
    const old = await whole.get(name);
    if (old) {
      for (const checkpoint of old.checkpoints) await this.write(name, checkpoint, owner ?? old.principal);
      await whole.delete(name);
    }
    const { items } = await steps.query({ where: { chain: name }, orderBy: [{ field: 'seq' }] });
    for (const step of items) {
      await this.write(name, step.checkpoint, owner, step.seq);
      await steps.delete(`${name}#${String(step.seq).padStart(12, '0')}`);
    }
  }
}

/** Prune once this many steps beyond `keep` have gathered, so a put rarely pays for one. */
const pruneSlack = (keep: number) => Math.max(10, Math.ceil(keep / 10));

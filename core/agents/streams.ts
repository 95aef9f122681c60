/**
 * Retained invoke streams: every POST /invoke/stream writes its frames into an `EventLog` kept
 * here, so GET /invoke/stream/{id} can replay them (never re-running the agent).
 *
 * Scoping: a stream is bound to the agent and principal it was produced for. Looking it up as
 * another agent or principal, or after it was evicted, gives the same 404 as an unknown id, so a
 * caller cannot probe which ids exist.
 *
 * Retention (settings `streams.retain`, `streams.ttlSeconds`; defaults 200 and 900 s): a stream
 * that is still running is always kept; a finished one is kept for `ttlSeconds` after it ended,
 * and only the newest `retain` finished streams are kept. Pruning happens on open and lookup,
 * so an idle server holds at most `retain` finished streams.
 *
 * Team mode (`shared`, core/storage/team-streams.ts): every stream's frames are also stored in
 * PostgreSQL as they are produced, so any instance replays and follows it. The instance running a
 * stream serves it from memory as a single instance does; another instance looks it up in the
 * table, with the same scoping and the same retention rules applied there, across the team.
 * Accepted: `retain` counts this instance's streams in memory and the team's in the table, so the
 * instance that ran a stream may still replay it when the team's count has already dropped it.
 */
import { randomUUID } from 'node:crypto';
import { fail } from '../kernel/errors.js';
import { EventLog, type ReplayableSource } from '../lib/event-log.js';
import type { FrameCodec, StoredStreamScope, StreamWriter } from '../storage/team-streams.js';

/** One frame of an invoke stream: every frame carries the response so far and the steps. */
export interface InvokeFrame {
  event: 'start' | 'token' | 'step' | 'tool_start' | 'tool_end' | 'complete' | 'suspended' | 'error';
  response: string;
  steps_taken: string[];
  [key: string]: unknown;
}

interface Retained {
  agent: string;
  principal: string;
  log: EventLog<InvokeFrame>;
  endedAt: number | null;
  /** Team mode: resolves once any instance can look the stream up. */
  stored?: Promise<void>;
}

/** Team mode: where streams are stored for the other instances (`TeamStreams`). */
export interface SharedStreams {
  open<T>(id: string, scope: StoredStreamScope, codec: FrameCodec<T>): StreamWriter<T>;
  find<T>(id: string, scope: StoredStreamScope, codec: FrameCodec<T>): Promise<ReplayableSource<T> | undefined>;
}

/** One stored frame in this many is whole, so a replay from any point decodes at most this many. */
const KEY_EVERY = 100;

const sameSteps = (a: string[], b: string[]) => a === b || (a.length === b.length && a.every((step, i) => step === b[i]));

/**
 * How invoke frames are stored in team mode: a token frame whose answer so far is the previous
 * frame's plus its delta is stored without `response` and `steps_taken` (put back when read), so a
 * stream of n tokens stores O(n) text rather than O(n²). Every other frame is stored whole.
 */
export const INVOKE_FRAME_CODEC: FrameCodec<InvokeFrame> = {
  encode(frame, previous, seq) {
    if (
      frame.event === 'token' &&
      previous &&
      seq % KEY_EVERY !== 0 &&
      typeof frame.delta === 'string' &&
      frame.response === previous.response + frame.delta &&
      sameSteps(frame.steps_taken, previous.steps_taken)
    ) {
      const { response: _response, steps_taken: _steps, ...rest } = frame;
      return { stored: rest, key: false };
    }
    return { stored: frame, key: true };
  },
  decode(stored, previous) {
    // A token frame without the two fields the writer left out (the order of the rest is kept).
    const rest = stored as InvokeFrame & { delta: string };
    return { ...rest, response: (previous?.response ?? '') + rest.delta, steps_taken: previous?.steps_taken ?? [] };
  },
};

export interface StreamRetention {
  retain: number;
  ttlMs: number;
  /** Frames kept per stream (a long answer streamed token by token). */
  framesPerStream?: number;
  now?: () => number;
}

export class InvokeStreams {
  private readonly streams = new Map<string, Retained>();
  private readonly now: () => number;

  constructor(
    private readonly retention: StreamRetention,
    private readonly shared?: SharedStreams,
  ) {
    this.now = retention.now ?? Date.now;
  }

  open(agent: string, principal: string): { id: string; log: EventLog<InvokeFrame> } {
    this.prune();
    const id = randomUUID();
    const log = new EventLog<InvokeFrame>(this.retention.framesPerStream ?? 10_000);
    const entry: Retained = { agent, principal, log, endedAt: null };
    if (this.shared) {
      // The store is one more reader of the log: frames reach it in order, and the log's end ends it.
      const writer = this.shared.open<InvokeFrame>(id, { agent, principal }, INVOKE_FRAME_CODEC);
      log.subscribe(
        (event) => writer.push(event),
        () => writer.end(),
      );
      entry.stored = writer.stored;
    }
    this.streams.set(id, entry);
    return { id, log };
  }

  /** Team mode: resolves once the stream can be looked up from any instance (undefined otherwise). */
  stored(id: string): Promise<void> | undefined {
    return this.streams.get(id)?.stored;
  }

  /** Mark the stream finished (starts its time-to-live) and end its log. */
  finish(id: string): void {
    const entry = this.streams.get(id);
    if (!entry) return;
    entry.log.end();
    entry.endedAt = this.now();
    this.prune();
  }

  get(id: string, agent: string, principal: string): EventLog<InvokeFrame> {
    this.prune();
    const entry = this.streams.get(id);
    if (!entry || entry.agent !== agent || entry.principal !== principal) {
      throw fail('HANGAR_AGENT_STREAM_NOT_FOUND', { stream: id });
    }
    return entry.log;
  }

  /**
   * The stream for replay wherever it ran: this instance's, else (team mode) the one stored by
   * another instance. Unknown, past retention, another agent's or principal's → the same 404.
   */
  async find(id: string, agent: string, principal: string): Promise<ReplayableSource<InvokeFrame>> {
    if (!this.shared || this.streams.has(id)) return this.get(id, agent, principal);
    const stored = await this.shared.find<InvokeFrame>(id, { agent, principal }, INVOKE_FRAME_CODEC);
    if (!stored) throw fail('HANGAR_AGENT_STREAM_NOT_FOUND', { stream: id });
    return stored;
  }

  get size(): number {
    return this.streams.size;
  }

  private prune(): void {
    const now = this.now();
    const finished: string[] = [];
    // Map order is insertion order, so `finished` is oldest first.
    for (const [id, entry] of this.streams) {
      if (entry.endedAt === null) continue;
      if (now - entry.endedAt >= this.retention.ttlMs) this.streams.delete(id);
      else finished.push(id);
    }
    for (const id of finished.slice(0, Math.max(0, finished.length - this.retention.retain))) this.streams.delete(id);
  }
}

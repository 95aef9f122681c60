/**
 * An append-only, bounded log of events with a monotonic sequence (1, 2, 3, …) and live
 * subscribers. It is the in-memory source behind every replayable SSE stream (invoke streams,
 * studio runs); the task subsystem persists its own log but speaks the same `ReplayableSource`
 * interface, so `core/http/sse.ts` serves both the same way.
 *
 * Eviction rule: when more than `capacity` events are held, the oldest are dropped. A reader asking
 * for events after a sequence that was dropped gets what is left plus `truncated: true`.
 */

export interface SequencedEvent<T> {
  seq: number;
  data: T;
}

export interface Replay<T> {
  events: SequencedEvent<T>[];
  /** The resume point was evicted: events between it and `events[0]` are gone. */
  truncated: boolean;
}

export interface ReplayableSource<T> {
  /** Events with `seq > since`, oldest first. */
  replay(since: number): Replay<T> | Promise<Replay<T>>;
  /** Live events after subscription; `onEnd` fires once when the source completes. */
  subscribe(onEvent: (event: SequencedEvent<T>) => void, onEnd: () => void): () => void;
  readonly ended: boolean;
}

type Listener<T> = { onEvent: (event: SequencedEvent<T>) => void; onEnd: () => void };

export class EventLog<T> implements ReplayableSource<T> {
  private readonly events: SequencedEvent<T>[] = [];
  private readonly listeners = new Set<Listener<T>>();
  private nextSeq: number;
  private done = false;

  constructor(
    private readonly capacity = 10_000,
    /** Continue numbering after an existing log (e.g. a resumed run). */
    startAfter = 0,
  ) {
    this.nextSeq = startAfter + 1;
  }

  get ended(): boolean {
    return this.done;
  }

  get lastSeq(): number {
    return this.nextSeq - 1;
  }

  get size(): number {
    return this.events.length;
  }

  append(data: T): SequencedEvent<T> {
    if (this.done) throw new Error('event log already ended');
    const event = { seq: this.nextSeq++, data };
    this.events.push(event);
    if (this.events.length > this.capacity) this.events.splice(0, this.events.length - this.capacity);
    for (const listener of this.listeners) listener.onEvent(event);
    return event;
  }

  end(): void {
    if (this.done) return;
    this.done = true;
    for (const listener of this.listeners) listener.onEnd();
    this.listeners.clear();
  }

  all(): SequencedEvent<T>[] {
    return [...this.events];
  }

  replay(since: number): Replay<T> {
    const first = this.events[0]?.seq ?? this.nextSeq;
    const truncated = since + 1 < first && since < this.lastSeq;
    // Sequences are contiguous, so the start index is arithmetic rather than a search.
    const start = Math.max(0, since + 1 - first);
    return { events: this.events.slice(start), truncated };
  }

  subscribe(onEvent: (event: SequencedEvent<T>) => void, onEnd: () => void): () => void {
    if (this.done) {
      onEnd();
      return () => {};
    }
    const listener = { onEvent, onEnd };
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

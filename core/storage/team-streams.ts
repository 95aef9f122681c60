/**
 * Team mode's invoke streams (`POST /invoke/stream`, replayed by `GET /invoke/stream/{id}`): the
 * frames a stream produces on one instance, stored in PostgreSQL so any instance can replay them
 * and follow the live ones.
 *
 * - The instance running a stream keeps serving it from memory (core/agents/streams.ts); its frames
 *   are written behind, in batches: the first frame after a quiet spell is written at once, later
 *   ones at most every `FLUSH_MS`, so a token-by-token answer costs tens of writes a second, not
 *   one per token, and an idle reader elsewhere waits one round trip, not a timer.
 * - Every stored batch is announced in the statement that stores it (topic `invoke-stream`: the
 *   stream id and its last sequence, never a frame); a reader elsewhere reads what it has not seen
 *   from the table. The end of the stream is written in the same statement as its last frames, so
 *   a reader that sees it ended has every frame.
 * - A token frame is stored as its difference from the one before (`FrameCodec`), so a long answer
 *   costs rows that grow with its length, not with its square.
 * - Retention is the one of `streams.retain` and `streams.ttlSeconds`, across the team: a lookup
 *   treats a stream past it as gone, and a throttled prune deletes such streams (and their frames).
 * - A stream whose instance died before ending it (its row in `hangar_instances` went stale, after
 *   three `team.heartbeatSeconds`) is marked ended by the next prune on any instance (at most
 *   `SWEEP_MS` later); its readers get [DONE] after its last stored frame, with no `complete` or
 *   `error` frame before it — which is how a reader tells that the run did not finish.
 *
 * Why tables of their own, created here under the store's migration lock (as core/storage/team.ts
 * creates its tables), rather than a store migration: the store's migrations are the SQLite store's
 * schema in PostgreSQL, and every collection there is copied by `hangar store copy`; these rows are
 * team-mode traffic that lives for minutes, which a desktop store never holds.
 */
import type { ReplayableSource, SequencedEvent } from '../lib/event-log.js';
import { LOCK_SPACE, MIGRATION_LOCK, type PgAccess } from './postgres-sql.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    /** Team mode only: invoke streams stored for every instance (provided by the composition root). */
    teamStreams: TeamStreams;
  }
}

/** The announcements this module needs (TeamCoordinator provides them). */
export interface StreamAnnouncer {
  readonly instanceId: string;
  announce(topic: string, id: string, seq?: number): Promise<void>;
  notifyArgs(topic: string, id: string, seq?: number): [channel: string, payload: string];
  on(topic: string, handler: (announcement: { id: string; seq?: number }) => void): () => void;
}

export interface StreamRetentionRules {
  retain: number;
  ttlMs: number;
}

export interface StoredStreamScope {
  agent: string;
  principal: string;
}

/**
 * How frames are stored: a frame may be stored as a difference from the one before it (a token
 * frame carries the whole answer so far, so storing each whole makes a long answer's rows grow with
 * the square of its length). A stored frame that needs no predecessor is a key frame; reading from
 * any point starts at the key frame before it.
 */
export interface FrameCodec<T> {
  /** `seq` lets a codec store a key frame now and then, which bounds how far back a reader starts. */
  encode(frame: T, previous: T | undefined, seq: number): { stored: unknown; key: boolean };
  decode(stored: unknown, previous: T | undefined): T;
}

/** Frames stored as they are. */
const WHOLE: FrameCodec<never> = { encode: (frame) => ({ stored: frame, key: true }), decode: (stored) => stored as never };

export interface StreamWriter<T> {
  /** Queue a frame (sequences strictly increasing from 1); written within `FLUSH_MS`. */
  push(event: SequencedEvent<T>): void;
  /** The stream ended: its remaining frames and its end are written now. */
  end(): void;
  /** Resolves once the first write of the stream's row was tried (if it succeeded, any instance finds the stream from then on). */
  readonly stored: Promise<void>;
}

const TOPIC = 'invoke-stream';
const STREAMS = 'hangar_invoke_streams';
const FRAMES = 'hangar_invoke_stream_frames';
/** Written at most this often per stream while frames keep coming. */
export const FLUSH_MS = 20;
/** Prune at most this often per instance (it runs when a stream opens or is looked up). */
const PRUNE_EVERY_MS = 1_000;
/** Prune this often even when no stream is opened or looked up. */
const SWEEP_MS = 10_000;
/** A batch that cannot be written is tried again this often, this many times, then dropped (logged). */
const RETRY_MS = 1_000;
const RETRIES = 10;

export class TeamStreams {
  private lastPrune = 0;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: PgAccess,
    private readonly team: StreamAnnouncer,
    private readonly retention: StreamRetentionRules,
    private readonly log: (level: 'warn', line: string) => void,
  ) {}

  /** Create the tables (once per database: under the store's migration lock, as instances may start together). */
  async start(): Promise<void> {
    await this.db.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_SPACE, MIGRATION_LOCK]);
      await client.query(`CREATE TABLE IF NOT EXISTS ${STREAMS} (
        id TEXT PRIMARY KEY, agent TEXT NOT NULL, principal TEXT NOT NULL, instance TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(), ended_at TIMESTAMPTZ, last_seq INTEGER NOT NULL DEFAULT 0)`);
      await client.query(`CREATE INDEX IF NOT EXISTS ${STREAMS}_ended ON ${STREAMS} (ended_at)`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${FRAMES} (
        stream_id TEXT NOT NULL REFERENCES ${STREAMS} (id) ON DELETE CASCADE, seq INTEGER NOT NULL, frame JSONB NOT NULL,
        key BOOLEAN NOT NULL, PRIMARY KEY (stream_id, seq))`);
    }, 'the invoke stream tables');
    // Also when nothing is opened or looked up: an idle team still drops old streams, and ends the
    // streams of an instance that died for whoever still follows them.
    this.sweeper = setInterval(() => this.prune(), SWEEP_MS);
    this.sweeper.unref();
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  /** Start storing a stream that runs here; its frames are pushed to the writer as they are produced. */
  open<T>(id: string, scope: StoredStreamScope, codec: FrameCodec<T> = WHOLE): StreamWriter<T> {
    this.prune();
    return new BatchedWriter<T>(id, scope, codec, this.db, this.team, this.log);
  }

  /**
   * A stream another instance ran or runs, as a replayable source; undefined when it is unknown,
   * past retention, or another agent's or principal's (the caller answers all of them alike).
   */
  async find<T>(id: string, scope: StoredStreamScope, codec: FrameCodec<T> = WHOLE): Promise<ReplayableSource<T> | undefined> {
    this.prune();
    const { rows } = await this.db.query<{ agent: string; principal: string; ended: boolean }>(
      `SELECT agent, principal, ended_at IS NOT NULL AS ended FROM ${STREAMS} s WHERE id = $1
         AND (ended_at IS NULL OR (ended_at > now() - make_interval(secs => $2)
              AND (SELECT count(*) FROM ${STREAMS} n WHERE n.ended_at > s.ended_at) < $3))`,
      [id, this.retention.ttlMs / 1000, this.retention.retain],
    );
    const row = rows[0];
    if (!row || row.agent !== scope.agent || row.principal !== scope.principal) return undefined;
    return new StoredStream<T>(id, row.ended, codec, this.db, this.team, this.log);
  }

  /** Delete streams past retention; mark ended those whose instance is gone (throttled, never awaited). */
  private prune(): void {
    const now = Date.now();
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    void (async () => {
      await this.db.query(
        `DELETE FROM ${STREAMS} WHERE ended_at <= now() - make_interval(secs => $1)
            OR id IN (SELECT id FROM ${STREAMS} WHERE ended_at IS NOT NULL ORDER BY ended_at DESC, id OFFSET $2)`,
        [this.retention.ttlMs / 1000, this.retention.retain],
      );
      // hangar_instances is core/storage/team.ts's list of live instances (stale rows are deleted by heartbeats).
      const { rows } = await this.db.query<{ id: string; last_seq: number }>(
        `UPDATE ${STREAMS} SET ended_at = now() WHERE ended_at IS NULL
            AND instance NOT IN (SELECT id FROM hangar_instances) RETURNING id, last_seq`,
      );
      for (const row of rows) await this.team.announce(TOPIC, row.id, row.last_seq);
    })().catch((err: unknown) => this.log('warn', `invoke streams: pruning the stored streams failed: ${(err as Error).message}`));
  }
}

class BatchedWriter<T> implements StreamWriter<T> {
  private pending: Array<{ seq: number; stored: string; key: boolean }> = [];
  /** The frame pushed last (what the next one is encoded against). */
  private previous: T | undefined;
  private ended = false;
  private endWritten = false;
  private created = false;
  private writing = false;
  private timer: NodeJS.Timeout | undefined;
  private lastWrite = 0;
  private failures = 0;
  private markStored!: () => void;
  readonly stored = new Promise<void>((resolve) => (this.markStored = resolve));

  constructor(
    private readonly id: string,
    private readonly scope: StoredStreamScope,
    private readonly codec: FrameCodec<T>,
    private readonly db: PgAccess,
    private readonly team: StreamAnnouncer,
    private readonly log: (level: 'warn', line: string) => void,
  ) {
    // The row is written at once (with the frames pushed in the same tick, the stream's `start`),
    // so the stream id the client gets can be looked up anywhere.
    queueMicrotask(() => this.schedule());
  }

  push(event: SequencedEvent<T>): void {
    if (this.ended) return;
    const { stored, key } = this.codec.encode(event.data, this.previous, event.seq);
    this.previous = event.data;
    // Serialised now: the frame's objects may change after it was pushed.
    this.pending.push({ seq: event.seq, stored: JSON.stringify(stored), key });
    this.schedule();
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.schedule(0);
  }

  private get idle(): boolean {
    return this.created && this.pending.length === 0 && (!this.ended || this.endWritten);
  }

  private schedule(delay?: number): void {
    if (this.writing || this.timer || this.idle) return;
    const wait = delay ?? Math.max(0, this.lastWrite + FLUSH_MS - performance.now());
    if (wait === 0) void this.write();
    else this.timer = setTimeout(() => void this.write(), wait);
  }

  private async write(): Promise<void> {
    this.timer = undefined;
    this.writing = true;
    const batch = this.pending;
    this.pending = [];
    const ending = this.ended;
    const lastSeq = batch.at(-1)?.seq;
    let retry = false;
    try {
      // One statement, one round trip and one commit: the frames, the stream's row (which carries
      // the end when it came, so a reader never sees an end without every frame before it) and the
      // announcement, which PostgreSQL delivers once all of it is committed.
      await this.db.query(
        `WITH frames AS (
           INSERT INTO ${FRAMES} (stream_id, seq, frame, key)
             SELECT $1, s, f::jsonb, k FROM unnest($6::int[], $7::text[], $11::boolean[]) AS t(s, f, k)
           ON CONFLICT DO NOTHING),
         stream AS (
           INSERT INTO ${STREAMS} AS s (id, agent, principal, instance, last_seq, ended_at)
             VALUES ($1, $2, $3, $4, $5, CASE WHEN $8::boolean THEN now() END)
           ON CONFLICT (id) DO UPDATE SET last_seq = GREATEST(s.last_seq, excluded.last_seq), ended_at = COALESCE(s.ended_at, excluded.ended_at)
           RETURNING 1)
         SELECT pg_notify($9, $10) FROM stream`,
        [
          this.id,
          this.scope.agent,
          this.scope.principal,
          this.team.instanceId,
          lastSeq ?? 0,
          batch.map((e) => e.seq),
          batch.map((e) => e.stored),
          ending,
          ...this.team.notifyArgs(TOPIC, this.id, lastSeq),
          batch.map((e) => e.key),
        ],
        'an invoke stream',
      );
      this.failures = 0;
      this.created = true;
      if (ending) this.endWritten = true;
    } catch (err) {
      this.pending = [...batch, ...this.pending];
      if (++this.failures <= RETRIES) retry = true;
      else {
        this.log(
          'warn',
          `invoke stream ${this.id}: frames could not be stored (${(err as Error).message}); other instances will not see them`,
        );
        this.pending = [];
        this.endWritten = this.ended;
        this.created = true;
      }
    } finally {
      this.lastWrite = performance.now();
      this.writing = false;
      // After the first attempt either way: a database that cannot answer must not hold up the
      // stream's own client (it still gets every frame from memory); retries go on behind.
      this.markStored();
    }
    if (retry) {
      // Not holding a stopping process up: what is still unwritten then is lost to the other instances only.
      this.timer = setTimeout(() => void this.write(), RETRY_MS);
      this.timer.unref();
    } else this.schedule(this.ended ? 0 : undefined);
  }
}

/**
 * A stream another instance runs: replay reads the stored frames, and a subscriber reads what each
 * announcement says was stored. One statement reads the stream's end and its frames, so "ended"
 * always comes with every frame.
 */
class StoredStream<T> implements ReplayableSource<T> {
  private done: boolean;
  /** The newest frame handed out by replay or to the subscriber. */
  private cursor = 0;
  /** The frame at `cursor`, decoded (what the next stored frame may be a difference from). */
  private atCursor: T | undefined;
  private replayed: Promise<void> | undefined;

  constructor(
    private readonly id: string,
    ended: boolean,
    private readonly codec: FrameCodec<T>,
    private readonly db: PgAccess,
    private readonly team: StreamAnnouncer,
    private readonly log: (level: 'warn', line: string) => void,
  ) {
    this.done = ended;
  }

  get ended(): boolean {
    return this.done;
  }

  /**
   * The stream's end and its frames after `after`, decoded. Unless the frame at `after` is known
   * (`previous`), reading starts at the key frame at or before `after + 1`.
   */
  private async read(
    after: number,
    previous: T | undefined,
  ): Promise<{ ended: boolean; events: SequencedEvent<T>[]; last: T | undefined }> {
    const { rows } = await this.db.query<{ ended: boolean | null; seq: number | null; frame: unknown; key: boolean | null }>(
      `SELECT (SELECT ended_at IS NOT NULL FROM ${STREAMS} WHERE id = $1) AS ended, f.seq, f.frame, f.key
         FROM (SELECT 1) AS one LEFT JOIN ${FRAMES} f ON f.stream_id = $1 AND f.seq > CASE WHEN $3 THEN $2
           ELSE COALESCE((SELECT max(seq) FROM ${FRAMES} WHERE stream_id = $1 AND key AND seq <= $2 + 1), $2 + 1) - 1 END
         ORDER BY f.seq`,
      [this.id, after, previous !== undefined],
    );
    // No row: the stream was pruned meanwhile, which ends it as surely as its end does.
    const ended = rows[0]?.ended !== false;
    const events: SequencedEvent<T>[] = [];
    let last = previous;
    for (const row of rows) {
      if (row.seq === null) continue;
      last = row.key ? (row.frame as T) : this.codec.decode(row.frame, last);
      if (row.seq > after) events.push({ seq: row.seq, data: last });
    }
    return { ended, events, last };
  }

  async replay(since: number) {
    const run = this.read(since, undefined);
    this.replayed = run.then(
      () => {},
      () => {},
    );
    const { ended, events, last } = await run;
    const newest = events.at(-1);
    if (newest && newest.seq > this.cursor) {
      this.cursor = newest.seq;
      this.atCursor = last;
    } else if (since > this.cursor) {
      // Nothing after `since` yet: the next read starts at the key frame before it.
      this.cursor = since;
      this.atCursor = undefined;
    }
    if (ended) this.done = true;
    return { events, truncated: false };
  }

  subscribe(onEvent: (event: SequencedEvent<T>) => void, onEnd: () => void): () => void {
    let stopped = false;
    let checking = Promise.resolve();
    const finish = () => {
      if (stopped) return;
      stopped = true;
      off();
      onEnd();
    };
    const check = (seq?: number) => {
      checking = checking.then(async () => {
        // Replay (which serveSse starts right after subscribing) sets where reading resumes.
        await this.replayed;
        if (stopped || (seq !== undefined && seq <= this.cursor && !this.done)) return;
        try {
          const { ended, events } = await this.read(this.cursor, this.atCursor);
          for (const event of events) {
            if (stopped) return;
            this.cursor = event.seq;
            this.atCursor = event.data;
            onEvent(event);
          }
          if (ended) {
            this.done = true;
            finish();
          }
        } catch (err) {
          this.log('warn', `invoke stream ${this.id}: reading frames stored by another instance failed: ${(err as Error).message}`);
        }
      });
    };
    const off = this.team.on(TOPIC, (announcement) => {
      if (announcement.id === this.id) check(announcement.seq);
    });
    if (this.done) {
      finish();
      return () => {};
    }
    return () => {
      stopped = true;
      off();
    };
  }
}

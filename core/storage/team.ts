/**
 * Team mode's coordination, on the same PostgreSQL as the store: a job queue (pg-boss) that any
 * instance may take work from, announcements between instances (LISTEN/NOTIFY, ids only — readers
 * fetch what changed from the store), and a row per live instance (what `/api/v1/status` lists, so
 * a mixed deploy is visible).
 *
 * Why pg-boss and not a queue of our own: it is the maintained PostgreSQL queue (SKIP LOCKED
 * fetches, retries, expiry, heartbeats, dead letters) and needs nothing besides the database the
 * team already runs. Its failure model is the one Temporal users expect of an activity: a worker
 * sends a heartbeat while it holds a job; a job whose heartbeat stops (its instance was killed) is
 * retried on another instance, `retryLimit` times, then dead-lettered.
 */
import { createHash, randomUUID } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterPostgres } from 'rate-limiter-flexible';
import { LOCK_SPACE, MIGRATION_LOCK } from './postgres-sql.js';
import type { StoreLog } from './sqlite-sql.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    /** Team mode only (`storage.url` on PostgreSQL): provided by the composition root. */
    team: TeamCoordinator;
  }
}

/** One message between instances: a topic and ids, never a record (readers fetch it from the store). */
export interface Announcement {
  topic: string;
  id: string;
  /** A small number that saves a read (an event's sequence). */
  seq?: number;
  /** The instance that sent it. */
  from: string;
}

export interface TeamInstance {
  id: string;
  host: string;
  pid: number;
  url: string | null;
  version: string;
  started_at: string;
  seen_at: string;
}

export interface TeamOptions {
  url: string;
  version: string;
  log: StoreLog;
  /**
   * How often a worker holding a job tells the queue it is alive; a job silent for this long is
   * taken to be orphaned (its instance died) and is retried elsewhere. pg-boss's floor is 10.
   */
  heartbeatSeconds?: number;
  /** How often the queue looks for silent jobs (so failover takes about heartbeat + this). */
  monitorIntervalSeconds?: number;
}

/** The table of the shared rate-limit counters. */
const RATE_TABLE = 'hangar_rate_limits';
/** The one NOTIFY channel of Hangar; announcements carry their topic. */
const CHANNEL = 'hangar_announcements';

/**
 * The advisory-lock space of team-wide exclusive work (`tryLock`): apart from the store's, whose
 * record locks hash `collection/id` into LOCK_SPACE, so a team lock never waits on a record.
 */
const TEAM_LOCK_SPACE = LOCK_SPACE + 1;

/**
 * A job id that names what it is for: pg-boss inserts with ON CONFLICT DO NOTHING on (queue, id),
 * so a second send of the same key is refused while the first job is kept (7 days after it ends).
 */
function jobIdOf(key: string): string {
  const hex = createHash('sha256').update(key).digest('hex');
  // Shaped as a version-5 (name-based) UUID: pg-boss's column is uuid.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** An instance not seen for this many heartbeats is no longer listed. */
const INSTANCE_STALE_BEATS = 3;

export interface JobHandlerOptions {
  /** Jobs this instance runs at once (pg-boss's local concurrency). */
  concurrency: number;
}

export class TeamCoordinator {
  readonly instanceId = randomUUID();
  readonly heartbeatSeconds: number;
  private readonly boss: PgBoss;
  private readonly pool: pg.Pool;
  private listener: pg.Client | undefined;
  private readonly handlers = new Map<string, Set<(announcement: Announcement) => void>>();
  private beat: NodeJS.Timeout | undefined;
  private url: string | null = null;
  private closed = false;
  private readonly startedAt = new Date().toISOString();

  /**
   * pg-boss is loaded here, on the way into team mode: the CLI bundle leaves it (an ES module) in
   * node_modules, where a start without team mode never reads it (scripts/build.mjs says why).
   */
  static async open(options: TeamOptions): Promise<TeamCoordinator> {
    const { PgBoss } = await import('pg-boss');
    return new TeamCoordinator(options, PgBoss);
  }

  private constructor(
    private readonly options: TeamOptions,
    Boss: typeof PgBoss,
  ) {
    this.heartbeatSeconds = Math.max(10, options.heartbeatSeconds ?? 30);
    this.boss = new Boss({
      connectionString: options.url,
      schema: 'hangar_queue',
      application_name: 'hangar-queue',
      useListenNotify: true,
      // The monitor (which fails silent jobs over) runs from the supervise loop, so both run this often.
      monitorIntervalSeconds: options.monitorIntervalSeconds ?? 5,
      superviseIntervalSeconds: options.monitorIntervalSeconds ?? 5,
      instanceHeartbeatSeconds: Math.max(10, options.heartbeatSeconds ?? 30),
      max: 4,
    });
    this.boss.on('error', (err: Error) => options.log('warn', `team queue: ${err.message}`));
    this.pool = new pg.Pool({ connectionString: options.url, max: 2, application_name: 'hangar-team' });
    this.pool.on('error', (err) => options.log('warn', `team: an idle connection failed: ${err.message}`));
  }

  async start(): Promise<void> {
    await this.boss.start();
    // Under the store's migration lock: two instances creating a table together would collide.
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_SPACE, MIGRATION_LOCK]);
      await client.query(`CREATE TABLE IF NOT EXISTS hangar_instances (
        id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, url TEXT, version TEXT NOT NULL,
        started_at TIMESTAMPTZ NOT NULL, seen_at TIMESTAMPTZ NOT NULL)`);
      // rate-limiter-flexible's own table (its statement), made here so no request waits for it.
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${RATE_TABLE} (key varchar(255) PRIMARY KEY, points integer NOT NULL DEFAULT 0, expire bigint)`,
      );
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
    await this.listen();
    await this.heartbeat();
    this.beat = setInterval(() => void this.heartbeat(), (this.heartbeatSeconds * 1000) / 2);
    this.beat.unref();
  }

  /** The URL this instance serves on, once it listens (shown in the instance list). */
  async setUrl(url: string): Promise<void> {
    this.url = url;
    await this.heartbeat();
  }

  private async heartbeat(): Promise<void> {
    if (this.closed) return;
    try {
      await this.pool.query(
        `INSERT INTO hangar_instances (id, host, pid, url, version, started_at, seen_at) VALUES ($1, $2, $3, $4, $5, $6, now())
         ON CONFLICT (id) DO UPDATE SET url = excluded.url, seen_at = now()`,
        [this.instanceId, os.hostname(), process.pid, this.url, this.options.version, this.startedAt],
      );
      await this.pool.query(`DELETE FROM hangar_instances WHERE seen_at < now() - make_interval(secs => $1)`, [
        this.heartbeatSeconds * INSTANCE_STALE_BEATS,
      ]);
    } catch (err) {
      this.options.log('warn', `team: could not record this instance: ${(err as Error).message}`);
    }
  }

  /** The instances seen lately, this one included, oldest first. */
  async instances(): Promise<TeamInstance[]> {
    const { rows } = await this.pool.query<Record<string, unknown>>(
      `SELECT id, host, pid, url, version, started_at, seen_at FROM hangar_instances
        WHERE seen_at >= now() - make_interval(secs => $1) ORDER BY started_at, id`,
      [this.heartbeatSeconds * INSTANCE_STALE_BEATS],
    );
    return rows.map((row) => ({
      id: row.id as string,
      host: row.host as string,
      pid: row.pid as number,
      url: (row.url as string | null) ?? null,
      version: row.version as string,
      started_at: (row.started_at as Date).toISOString(),
      seen_at: (row.seen_at as Date).toISOString(),
    }));
  }

  /** A dedicated connection that LISTENs; reconnected when it drops, so announcements keep coming. */
  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.options.url, application_name: 'hangar-listen' });
    client.on('notification', (message) => {
      if (!message.payload) return;
      let announcement: Announcement;
      try {
        announcement = JSON.parse(message.payload) as Announcement;
      } catch {
        return;
      }
      for (const handler of this.handlers.get(announcement.topic) ?? []) {
        try {
          handler(announcement);
        } catch (err) {
          this.options.log('warn', `team: a ${announcement.topic} handler failed: ${(err as Error).message}`);
        }
      }
    });
    client.on('error', (err) => {
      if (this.closed) return;
      this.options.log('warn', `team: the announcement connection failed (${err.message}); reconnecting`);
      this.listener = undefined;
      client.end().catch(() => {});
      setTimeout(() => void this.listen().catch(() => {}), 1000).unref();
    });
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    this.listener = client;
  }

  /**
   * Counters every instance shares (rate-limiter-flexible's PostgreSQL store), so a principal's
   * limit holds across the team. If the database cannot answer, each instance counts in its own
   * memory meanwhile (the library's insurance limiter) rather than refusing every request.
   */
  rateCounters(limits: { points: number; duration: number }): RateLimiterAbstract {
    return new RateLimiterPostgres({
      ...limits,
      storeClient: this.pool,
      storeType: 'pool',
      tableName: RATE_TABLE,
      tableCreated: true,
      keyPrefix: 'principal',
      clearExpiredByTimeout: false,
      insuranceLimiter: new RateLimiterMemory(limits),
    });
  }

  /** Tell every instance (this one too) that something changed. */
  async announce(topic: string, id: string, seq?: number): Promise<void> {
    await this.pool.query('SELECT pg_notify($1, $2)', this.notifyArgs(topic, id, seq));
  }

  /**
   * An announcement as the arguments of `pg_notify(channel, payload)`, for a writer that announces
   * in the statement storing what changed: one round trip instead of two, and the announcement is
   * delivered exactly when the change is committed (core/storage/team-streams.ts).
   */
  notifyArgs(topic: string, id: string, seq?: number): [channel: string, payload: string] {
    const payload: Announcement = { topic, id, from: this.instanceId, ...(seq === undefined ? {} : { seq }) };
    return [CHANNEL, JSON.stringify(payload)];
  }

  /** Handle the announcements of a topic; returns how to stop. */
  on(topic: string, handler: (announcement: Announcement) => void): () => void {
    let set = this.handlers.get(topic);
    if (!set) this.handlers.set(topic, (set = new Set()));
    set.add(handler);
    return () => set.delete(handler);
  }

  /**
   * A queue whose jobs time out only by a silent heartbeat (a dead instance) or after `expireSeconds`,
   * retried once; a job that fails twice goes to `<name>-dead`, which `onDead` handles.
   */
  async queue(name: string, options: { expireSeconds: number }): Promise<void> {
    const dead = `${name}-dead`;
    await this.boss.createQueue(dead, { notify: true });
    await this.boss.createQueue(name, {
      notify: true,
      retryLimit: 1,
      retryDelay: 0,
      expireInSeconds: options.expireSeconds,
      heartbeatSeconds: this.heartbeatSeconds,
      deadLetter: dead,
    });
  }

  async send(queue: string, data: { id: string }): Promise<void> {
    await this.boss.send(queue, data);
  }

  /**
   * Send a job at most once per `key` (the job's id is derived from it): several instances may send
   * for the same thing — each fired one schedule's slot, or a sweep re-sends a task whose job may
   * exist — and one job results. True when this call created it.
   */
  async sendOnce(queue: string, data: { id: string }, key: string): Promise<boolean> {
    return (await this.boss.send(queue, data, { id: jobIdOf(key) })) !== null;
  }

  /**
   * The state of the job `sendOnce` made for `key` (`created`, `retry`, `active`, `completed`,
   * `cancelled`, `failed`), or undefined when there is none: whether work is still on its way.
   */
  async jobState(queue: string, key: string): Promise<string | undefined> {
    return (await this.boss.getJobById(queue, jobIdOf(key)))?.state;
  }

  /**
   * Hold a team-wide lock on `key` if nobody holds it (a PostgreSQL session advisory lock on a
   * connection of its own): undefined when another instance holds it. The lock goes when `release`
   * is called or when the holder dies (its connection closes), so a killed instance never keeps it.
   */
  async tryLock(key: string): Promise<{ release: () => Promise<void> } | undefined> {
    const client = new pg.Client({ connectionString: this.options.url, application_name: 'hangar-lock' });
    client.on('error', (err) => this.options.log('warn', `team: a lock's connection failed (${key}): ${err.message}`));
    await client.connect();
    try {
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked', [
        TEAM_LOCK_SPACE,
        key,
      ]);
      if (!rows[0]?.locked) {
        await client.end();
        return undefined;
      }
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    // Ending the session releases its advisory locks.
    return { release: () => client.end().catch(() => {}) };
  }

  /** Run the queue's jobs here, `concurrency` at once; `retryCount` says which attempt a job is. */
  async work(
    queue: string,
    options: JobHandlerOptions,
    handler: (job: { data: { id: string }; retryCount: number; signal: AbortSignal }) => Promise<void>,
  ): Promise<void> {
    await this.boss.work<{ id: string }>(
      queue,
      // New jobs wake workers through NOTIFY; a retried one (its instance died) does not, so the
      // poll that finds it runs as often with NOTIFY as without (pg-boss would stretch it to 30 s).
      { localConcurrency: options.concurrency, batchSize: 1, pollingIntervalSeconds: 2, notifyPollingIntervalSeconds: 2 },
      async ([job]) => {
        if (!job) return;
        try {
          await handler(job);
        } finally {
          // With one job a fetch, pg-boss waits out the polling interval after each job unless woken
          // (only a new job's NOTIFY wakes it), so a backlog drained at `concurrency` jobs per 2 s.
          // Waking this queue's busy workers (this one among them) makes each fetch again once its job
          // is done; an empty fetch then waits, and idle ones are left to the next job's NOTIFY.
          for (const worker of this.boss.getWipData()) if (worker.name === queue && worker.count > 0) this.boss.notifyWorker(worker.id);
        }
      },
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.beat);
    // Not graceful: an instance that stops leaves its jobs to the heartbeat, as one that dies does;
    // its own tasks were already stopped by the task subsystem.
    await this.boss.stop({ graceful: false, close: true }).catch(() => {});
    await this.pool.query('DELETE FROM hangar_instances WHERE id = $1', [this.instanceId]).catch(() => {});
    await this.listener?.end().catch(() => {});
    await this.pool.end().catch(() => {});
  }
}

/**
 * The Store over Kysely, one implementation for SQLite and PostgreSQL (the SQL is portable:
 * ON CONFLICT upserts, RETURNING, CASE instead of MAX/GREATEST).
 *
 * Hot paths and how they stay cheap:
 * - recordCheck, count, recordLookup: queued (write-queue.ts) and group-committed, one
 *   transaction per 50 ms or 500 rows: an upsert of the server row (which carries the latest
 *   check, the record and the trend score), the raw check and its hour's rollup row; counters
 *   and look-ups in the same transaction. Never one write per request, never a wait for one.
 * - reads (trends, stats, history) have a 1 s deadline and fall back to their last good
 *   answer (read-fallback.ts). On SQLite every statement runs in the store's worker thread.
 * - trends: trends.ts; stats: statistics.ts, computed at most once per 60 s; history:
 *   uptime-history.ts, a few hundred rows at most.
 * - retention: maintenance.ts, in the background in short steps, never before the instance
 *   listens.
 *
 * Durations (caches, pauses, lifetimes) are measured on the monotonic clock; the wall clock
 * only stamps and places rows, so a clock that steps neither freezes a cache nor moves a
 * check out of its hour.
 */
import { hash } from 'node:crypto';
import DataLoader from 'dataloader';
import type { Kysely } from 'kysely';
import { monotonicTime, type Clock } from '../../core/clock.js';
import { NO_TRACER, type Tracer } from '../../core/tracing.js';
import { serverAddress } from '../../core/types.js';
import { refusedByDatabase, setBatchAside } from './batch-ledger.js';
import { MigratingError, StoreOpenError } from '../errors.js';
import type { HeldBatches } from './held-batches.js';
import { retentionCutoffs, type Maintenance, type Retention, type RetentionReport } from '../maintenance.js';
import { MigrationRunner, MigrationStoppedError, type MigrationEvent, type MigrationSession, type MigrationState, type MigrationSteps } from '../migrations/migration-runner.js';
import { observerMigrations } from '../migrations/migrations.js';
import { ReadFallback, StoreUnavailableError } from './read-fallback.js';
import type { Database, Dialect, PreviousLayout } from '../schema.js';
import { readStatistics } from './statistics.js';
import { TrendReader } from './trends.js';
import type { CheckRecord, CounterIncrements, HistoryStore, Statistics, StoreHealth, TrendPage } from '../types.js';
import { serverHistory, type HistoryRange, type HistoryReader, type HistorySums, type ServerHistory } from './uptime-history.js';
import { WriteQueue, type BatchWriter, type WriteQueueOptions } from './write-queue.js';
import type { SqliteBindingName } from '../sqlite/binding.js';
import type { WriterWork } from '../sqlite/writer-work.js';
import { WatchStore } from '../watches/watch-store.js';

export interface StoreOptions {
  /** How long a computed /stats stays in memory (default 60 s, as long as its HTTP cache). */
  statsCacheMs?: number;
  /** Group commit: window, rows per window, buffer bound (HISTORY_BUFFER_MAX), retry backoff. */
  writes?: Omit<WriteQueueOptions, 'onError' | 'now'>;
  /** Deadline of a /trends, /stats or /history read before the last good answer is served (default 1000 ms). */
  readDeadlineMs?: number;
  /** Retention pass interval (default 1 h). */
  pruneIntervalMs?: number;
  /** Delay of the first retention pass after start (default 10 s). */
  pruneDelayMs?: number;
  /** Failures of background work (flush timer, retention, idle pool clients). */
  onError?: (error: unknown) => void;
  /** A retention pass ended (the service logs it). */
  onRetention?: (report: RetentionReport) => void;
  /** The SQLite binding (default: the one this install has; benchmarks compare both). */
  sqliteBinding?: SqliteBindingName;
  /** Checks copied per step of a resumable migration (default history-layout.ts's); tests make it small. */
  migrationRowsPerStep?: number;
  /** A migration's statements and committed transactions (the service logs them). */
  onMigration?: (event: MigrationEvent) => void;
  /** Spans for rows queued (`history.record`) and batches written (`history.write`); none without it. */
  tracer?: Tracer;
  /** SQLite: each unit of the writer thread's work, timed (metrics). */
  onWriterWork?: (work: WriterWork) => void;
}

const MINUTE = 60_000;
/** The migration that moves the history to its current layout. */
const HISTORY_LAYOUT = '0003_history_layout';
/** History answers kept for the fallback: at most one per this many ms (read-fallback.ts, keepEveryMs). */
const HISTORY_KEPT_EVERY_MS = 10;
/** Longest pause between two tries of applying the held batches. */
const RELEASE_RETRY_MAX_MS = 5_000;
/** Distinct clients are counted over this window; older look-up rows are deleted. */
const LOOKUP_WINDOW_MS = 24 * 60 * MINUTE;
/** Look-ups older than the window are deleted this often (in a group-commit transaction). */
const EXPIRY_INTERVAL_MS = MINUTE;

/** Without an onError option, a failed flush or prune is at least not silent. */
export function reportBackgroundError(error: unknown): void {
  process.emitWarning(error instanceof Error ? error : String(error), { code: 'OBSERVER_STORE' });
}

export { serverAddress };

/** A promise and the functions that settle it (Promise.withResolvers, which Node 20 lacks). */
function settleLater(): { promise: Promise<void>; resolve: () => void; reject: (error: unknown) => void } {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

/** Ids read in one query at most by knowsServer (far below either database's parameter limit). */
const KNOWN_SERVERS_PER_READ = 500;

export interface PreviousLayoutReads {
  /** Statements that only read, on a connection of their own where they never wait for a step of the copy. */
  db: Kysely<Database>;
  /** A server's history; `switched` once the copy's last transaction has committed. */
  readHistory: (serverId: string, range: HistoryRange, now: number) => Promise<HistorySums | null | 'switched'>;
  /** Whether the previous layout is still there (the copy's last transaction has not committed). */
  stands: () => Promise<boolean>;
  /** Its checks table and server key. */
  layout: PreviousLayout;
}

export interface StoreParts {
  db: Kysely<Database>;
  dialect: Dialect;
  /** Where the database is, for messages (a path, or a URL without credentials). */
  location: string;
  retention: Retention;
  writer: BatchWriter;
  maintenance: Maintenance;
  readHistory: HistoryReader;
  /** Reads of the layout before migration 0003, while that migration copies the history into the current one. */
  previousLayout?: PreviousLayoutReads;
  /** Called once the schema is migrated (SQLite: SELECTs go to the reader from then on). */
  migrated?: () => void;
  /** Where the migrations' steps run (SQLite: in its writer's thread); default: on `db`. */
  migrationSteps?: MigrationSteps;
  /** Where the work after the migrations' commits runs (SQLite: a process of its own); default: as the steps. */
  afterCommitSteps?: MigrationSteps;
  /** Where group commits are kept while an upgrade runs (held-batches.ts). */
  held: HeldBatches;
  /** The session the migrations run in, under the lock that instances sharing the database take in turn (PostgreSQL). */
  migrationSession?: MigrationSession;
  /** The watch store (default: a WatchStore on `db`). */
  watches?: (db: Kysely<Database>) => WatchStore;
}

export class KyselyHistoryStore implements HistoryStore {
  private readonly db: Kysely<Database>;
  private readonly queue: WriteQueue;
  private readonly reads: ReadFallback;
  private readonly historyReads: ReadFallback;
  private readonly trendReader: TrendReader;
  private readonly elapsed: () => number;
  private statsCache: { at: number; value: Promise<Statistics>; layout: 'current' | 'previous' } | null = null;
  private timers: NodeJS.Timeout[] = [];
  private pruning: Promise<void> | null = null;
  private readonly stopMaintenance = new AbortController();
  private closing: Promise<void> | null = null;
  /** Run on close after the last write, before the database is let go. */
  private readonly closeSteps: Array<() => Promise<void>> = [];
  /**
   * Whether servers are in the store, asked together: the ids asked for within one turn of the
   * event loop are read in one query (a look-up of a new name asks for each).
   */
  private readonly serversKnown = new DataLoader<string, boolean>(
    async (ids) => {
      const rows = await this.db.selectFrom('servers').select('id').where('id', 'in', ids).execute();
      const found = new Set(rows.map((row) => row.id));
      return ids.map((id) => found.has(id));
    },
    { cache: false, maxBatchSize: KNOWN_SERVERS_PER_READ, batchScheduleFn: (read) => setImmediate(read) },
  );
  private readonly statsCacheMs: number;
  private readonly onError: (error: unknown) => void;
  private readonly runner: MigrationRunner;
  private readonly stopMigration = new AbortController();
  /** Set once the schema is current: reads answer from then on (before, 503 `migrating`). */
  private served = false;
  /**
   * Set while migration 0003 copies the history into the current layout, until its last
   * transaction commits: history, trends and stats are read from the previous layout meanwhile
   * (on PostgreSQL, once the first transaction has set its checks aside; 503 `migrating` before).
   */
  private previousLayout = false;
  /** /trends from the previous layout, made with its first page. */
  private previousTrends: TrendReader | null = null;
  private readonly schemaServed = settleLater();
  /** Set once the tables are current and nothing else writes them (the work after the migrations done): batches are written, not held. */
  private direct = false;
  /** Set once the upgrade is done: the batches held during it applied too. */
  private upgraded = false;
  private upgrading: Promise<void> | null = null;
  /** The group commit's write, or the switch to writing directly: one at a time. */
  private writeTurn: Promise<unknown> = Promise.resolve();
  /** The migration the next run starts with, and where it stands, as checkSchema() found it. */
  private resumed: MigrationState | null = null;
  /** The last migration reported running: the one health names until the upgrade is done. */
  private lastState: MigrationState | null = null;
  private readonly migrationNames: string[];
  /** Watches, their events and delivery log (watch-store.ts). */
  readonly watches: WatchStore;
  private readonly tracer: Tracer;

  constructor(
    private readonly parts: StoreParts,
    private readonly clock: Clock,
    private readonly options: StoreOptions = {},
  ) {
    this.db = parts.db;
    this.elapsed = monotonicTime(clock);
    this.statsCacheMs = options.statsCacheMs ?? MINUTE;
    this.onError = options.onError ?? reportBackgroundError;
    this.watches = parts.watches?.(this.db) ?? new WatchStore(this.db);
    this.tracer = options.tracer ?? NO_TRACER;
    const migrations = observerMigrations(parts.dialect, { rowsPerStep: options.migrationRowsPerStep });
    this.migrationNames = migrations.map((m) => m.name);
    this.runner = new MigrationRunner(this.db as Kysely<unknown>, parts.dialect, migrations, {
      signal: this.stopMigration.signal,
      onState: (state) => {
        if (state) this.lastState = state;
        // The next one to run comes after 0003: its last transaction, the switch, has committed.
        if (state && this.migrationNames.indexOf(state.name) > this.migrationNames.indexOf(HISTORY_LAYOUT)) this.previousLayout = false;
      },
      ...(parts.migrationSteps ? { steps: parts.migrationSteps } : {}),
      ...(parts.afterCommitSteps ? { afterSteps: parts.afterCommitSteps } : {}),
      ...(parts.migrationSession ? { session: parts.migrationSession } : {}),
      ...(options.onMigration ? { onEvent: options.onMigration } : {}),
    });
    // Rejected only when the start stops; migrate() reports it.
    this.schemaServed.promise.catch(() => {});
    // While the tables are upgraded, a batch is held where it survives the process, and
    // written once they are current.
    const writer: BatchWriter = (batch) => this.inTurn(() => (this.direct ? parts.writer(batch) : parts.held.hold(batch)));
    this.queue = new WriteQueue(tracedWriter(writer, this.tracer), {
      ...options.writes,
      onError: this.onError,
      refused: refusedByDatabase,
      setAside: (batch, attempts, error) => setBatchAside(this.db, batch, attempts, error, clock.now()),
    });
    const readFailed = (error: unknown) => this.onError(error);
    this.reads = new ReadFallback({ deadlineMs: options.readDeadlineMs ?? 1000, onFailure: readFailed });
    this.historyReads = new ReadFallback({ deadlineMs: options.readDeadlineMs ?? 1000, keepEveryMs: HISTORY_KEPT_EVERY_MS, onFailure: readFailed });
    this.trendReader = this.newTrendReader(false);
  }

  private newTrendReader(previous: boolean): TrendReader {
    const previousLayout = previous ? this.parts.previousLayout : undefined;
    return new TrendReader({
      db: previousLayout?.db ?? this.db,
      now: () => this.clock.now(),
      elapsed: this.elapsed,
      version: () => this.queue.version,
      flushQueued: async () => {
        if (this.queue.holdsRows) await this.queue.flushOnce();
      },
      ...(previousLayout ? { previousLayout: previousLayout.layout } : {}),
    });
  }

  /** Starts the expiry and retention timers (unref'd: they never keep the process alive). */
  start(): void {
    const expire = setInterval(() => {
      this.queue.expire(this.clock.now() - LOOKUP_WINDOW_MS);
    }, EXPIRY_INTERVAL_MS);
    const pass = () => void this.prune().catch(this.onError);
    const first = setTimeout(() => {
      pass();
      const hourly = setInterval(pass, this.options.pruneIntervalMs ?? 60 * MINUTE);
      hourly.unref();
      this.timers.push(hourly);
    }, this.options.pruneDelayMs ?? 10_000);
    expire.unref();
    first.unref();
    this.timers.push(expire, first);
  }

  /**
   * Refuses a database a newer Observer wrote, before anything is changed, and notes the
   * migrations to apply: none ('current'), all on a database without tables ('new'), or some
   * on one that holds data ('upgrade').
   */
  async checkSchema(): Promise<'current' | 'new' | 'upgrade'> {
    const known = observerMigrations(this.parts.dialect).map((m) => m.name);
    const applied = await this.runner.applied();
    const unknown = applied.filter((name) => !known.includes(name));
    if (unknown.length > 0) {
      throw new StoreOpenError(
        `${this.parts.location} was written by a newer Observer (its migration ${unknown[0]} is unknown to this version); it was left unchanged`,
      );
    }
    this.resumed = await this.runner.resumes();
    if (this.resumed) this.lastState = this.resumed;
    this.previousLayout = this.parts.previousLayout !== undefined && applied.includes(known[0]!) && !applied.includes(HISTORY_LAYOUT);
    if (known.every((name) => applied.includes(name))) return 'current';
    return applied.length === 0 ? 'new' : 'upgrade';
  }

  /**
   * The whole upgrade (checkSchema() first): the migrations; then, reads served, the work after
   * their commits (writes held meanwhile); then writes go to the database again, and the
   * batches held since the upgrade began are applied. Rejects with MigrationStoppedError when
   * close() stops it; a failure of the work after the commits is reported, and left to the
   * next start.
   */
  migrate(): Promise<void> {
    this.upgrading ??= (async () => {
      let afterDue: boolean;
      try {
        await this.checkSchema();
        await this.runner.run();
        this.served = true;
        this.previousLayout = false;
        this.previousTrends = null;
        this.parts.migrated?.();
        afterDue = await this.runner.afterCommitDue();
        // Nothing else in the way: writes go to the database before the schema is called current.
        if (!afterDue) await this.writeDirectly();
        this.schemaServed.resolve();
      } catch (error) {
        this.schemaServed.reject(error);
        throw error;
      }
      if (afterDue) {
        await this.afterCommit();
        await this.writeDirectly();
      }
      await this.releaseHeld();
      this.upgraded = true;
    })();
    return this.upgrading;
  }

  /** The group commit writes to the database from its next batch on; none is being held meanwhile. */
  private writeDirectly(): Promise<void> {
    return this.inTurn(() => {
      this.direct = true;
    });
  }

  /** The work after the migrations' commits; a failure is reported, and left to the next start. */
  private async afterCommit(): Promise<void> {
    await this.runner.runAfterCommit().catch((error: unknown) => {
      if (this.stopMigration.signal.aborted) throw error;
      this.onError(new Error('the work after the migrations failed; the next start does it again', { cause: error }));
    });
  }

  /** Resolves once the schema is current and reads are served (migrate() goes on after it); rejects as migrate() does. */
  schemaCurrent(): Promise<void> {
    return this.schemaServed.promise;
  }

  /**
   * Applies the batches held during the upgrade, by this start or an earlier one (the group
   * commit writes directly by then, so they are all there is). A failure is tried again, with
   * the group commit's backoff.
   */
  private async releaseHeld(): Promise<void> {
    const { held } = this.parts;
    const { signal } = this.stopMigration;
    for (let failures = 0; await held.any(); failures++) {
      try {
        await held.release(signal);
      } catch (error) {
        if (signal.aborted) break;
        if (failures % 10 === 0) this.onError(error);
        await new Promise((resolve) => setTimeout(resolve, Math.min(RELEASE_RETRY_MAX_MS, 100 * 2 ** Math.min(10, failures))));
      }
      if (signal.aborted) break;
    }
    if (signal.aborted) throw new MigrationStoppedError(this.lastState?.name ?? this.migrationNames.at(-1)!);
  }

  /** Runs `write` once the write before it has ended: group commits, and the switch to writing directly. */
  private inTurn<T>(write: () => Promise<T> | T): Promise<T> {
    const turn = this.writeTurn.then(write);
    this.writeTurn = turn.catch(() => {});
    return turn;
  }

  /**
   * The migration running and the fraction of it done; once reads are served, the last one at
   * 1 while the rest of the upgrade runs (the work after it, the held batches applied); null
   * once it is done.
   */
  migration(): MigrationState | null {
    if (this.upgraded) return null;
    return this.runner.state ?? (this.served ? { name: this.lastState?.name ?? this.migrationNames.at(-1)!, progress: 1 } : this.resumed);
  }

  /** Where reads are answered from: the current layout, or the previous one while 0003 copies it (answers marked stale); else 503 `migrating`. */
  private readsFrom(): 'current' | 'previous' {
    if (this.served) return 'current';
    if (this.previousLayout) return 'previous';
    throw new MigratingError();
  }

  /**
   * A read of the previous layout. One that fails because the copy's last transaction renamed
   * the tables between its statements (or because PostgreSQL's first has not yet set the old
   * checks aside) is answered as any read when the previous layout cannot be read: 503 `migrating`.
   */
  private async fromPreviousLayout<T>(read: () => Promise<T>): Promise<T> {
    const { stands } = this.parts.previousLayout!;
    // Asked first: on PostgreSQL a read of the servers before the first transaction commits
    // would wait for its locks.
    if (!(await stands())) throw new MigratingError();
    try {
      return await read();
    } catch (error) {
      if (!this.previousLayout || !(await stands().catch(() => true))) throw new MigratingError();
      throw error;
    }
  }

  recordCheck(check: CheckRecord): void {
    if (!this.tracer.enabled) this.queue.enqueueCheck(check);
    else this.tracer.spanSync('history.record', (span) => {
      span.set('observer.history.row', 'check');
      this.queue.enqueueCheck(check);
    });
  }

  count(increments: CounterIncrements): void {
    this.queue.enqueueCounts(increments);
  }

  recordLookup(serverId: string, clientKey: string): void {
    // Hashed again with the server id: the rows of one client under different servers
    // cannot be linked to each other, nor to the key the caller (or a rate limiter) used.
    const clientHash = hash('sha256', `${serverId}\0${clientKey}`, 'base64url').slice(0, 22);
    const row = { server_id: serverId, client_hash: clientHash, seen_at: this.clock.now() };
    if (!this.tracer.enabled) this.queue.enqueueLookup(row);
    else this.tracer.spanSync('history.record', (span) => {
      span.set('observer.history.row', 'lookup');
      this.queue.enqueueLookup(row);
    });
  }

  knowsServer(serverId: string): Promise<boolean> {
    if (!this.served) return Promise.reject(new MigratingError());
    return this.serversKnown.load(serverId);
  }

  health(): StoreHealth {
    return this.queue.health();
  }

  /** Writes everything queued now, expiring look-ups older than 24 hours on the way. */
  async flush(): Promise<void> {
    this.queue.expire(this.clock.now() - LOOKUP_WINDOW_MS);
    await this.queue.drain();
  }

  async trends(limit: number, cursor: string | null): Promise<TrendPage> {
    const key = `trends:${limit}:${cursor ?? ''}`;
    if (this.readsFrom() === 'current') return this.reads.read(key, () => this.trendReader.page(limit, cursor));
    const reader = (this.previousTrends ??= this.newTrendReader(true));
    const page = await this.reads.read(key, () => this.fromPreviousLayout(() => reader.page(limit, cursor)));
    return { ...page, stale: true };
  }

  async stats(): Promise<Statistics> {
    const layout = this.readsFrom();
    const at = this.elapsed();
    if (this.statsCache && at - this.statsCache.at < this.statsCacheMs && this.statsCache.layout === layout) return this.statsCache.value;
    const value = this.reads.read('stats', async () => {
      // The counters include the requests still queued. This write happens at most once per
      // stats computation, i.e. once a minute, not once per request.
      await this.queue.flushOnce();
      if (layout === 'current') return readStatistics(this.db, this.clock.now());
      const { db, layout: previous } = this.parts.previousLayout!;
      return { ...(await this.fromPreviousLayout(() => readStatistics(db, this.clock.now(), previous))), stale: true as const };
    });
    const entry = { at, value, layout };
    this.statsCache = entry;
    // A failure or a stale answer is not cached: the next call tries again. One of the
    // previous layout is kept as any other: it is what the store has until the switch.
    value.then(
      (stats: Statistics) => {
        if (stats.stale && layout === 'current' && this.statsCache === entry) this.statsCache = null;
      },
      () => {
        if (this.statsCache === entry) this.statsCache = null;
      },
    );
    return value;
  }

  /** With the reads' deadline and fallback: the last good answer marked stale, or 503. Counts queued checks too. */
  async history(serverId: string, range: HistoryRange): Promise<ServerHistory | null> {
    if (this.readsFrom() === 'previous') return this.previousHistory(serverId, range);
    const answer = await this.historyReads.read(`${serverId}:${range}`, async () => {
      // A check of this server still waiting for its group commit (up to 50 ms) is written
      // first: the page that has just looked a server up asks for its history next. One write
      // per such check at most, never one per request.
      if (this.queue.holdsCheck(serverId)) await this.queue.flushOnce();
      // The sums are what is kept for the fallback, not the answer: one typed array instead of
      // a few hundred objects that would outlive the young generation at every read.
      return { read: await this.parts.readHistory(serverId, range, this.clock.now()) };
    });
    if (answer.read === null) {
      // "Not checked yet" is never served in place of a read: the server may have been written since.
      if (answer.stale) throw new StoreUnavailableError();
      return null;
    }
    const history = serverHistory(answer.read.server, answer.read.range, answer.read.window, answer.read.sums);
    return answer.stale ? { ...history, stale: true } : history;
  }

  /**
   * A history from the previous layout, marked stale (the checks since the upgrade began are
   * held until the switch). A server it does not hold may have been checked since: 503
   * `migrating`, not "never checked".
   */
  private async previousHistory(serverId: string, range: HistoryRange): Promise<ServerHistory> {
    const answer = await this.historyReads.read(`${serverId}:${range}`, async () => {
      const read = await this.fromPreviousLayout(() => this.parts.previousLayout!.readHistory(serverId, range, this.clock.now()));
      if (read === 'switched' || read === null) throw new MigratingError();
      return { read };
    });
    if (!answer.read) throw new MigratingError();
    const { server, window, sums } = answer.read;
    return { ...serverHistory(server, range, window, sums), stale: true };
  }

  /** One retention pass now (the timer runs one hourly); a call during a pass shares it. */
  prune(): Promise<void> {
    this.pruning ??= (async () => {
      const now = this.clock.now();
      const started = this.elapsed();
      const removed = await this.parts.maintenance.run(retentionCutoffs(this.parts.retention, now), now, this.stopMaintenance.signal);
      this.options.onRetention?.({ removed, ms: Math.round(this.elapsed() - started) });
    })().finally(() => {
      this.pruning = null;
    });
    return this.pruning;
  }

  /** Adds a step to close(): after the last write, before the database is let go. */
  onClose(step: () => Promise<void>): void {
    this.closeSteps.push(step);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const timer of this.timers) clearTimeout(timer);
      this.stopMaintenance.abort();
      // A migration stops after the transaction in progress; the next start resumes it.
      this.stopMigration.abort();
      try {
        await this.upgrading?.catch(() => {});
        await this.pruning?.catch(() => {});
        // Rows that could not be written (or held) within the stop deadline are reported, not thrown.
        await this.queue.stop().catch((error: unknown) => this.onError(error));
      } finally {
        for (const step of this.closeSteps) await step().catch((error: unknown) => this.onError(error));
        await this.db.destroy();
      }
    })();
    return this.closing;
  }
}

/** The group commit's writer, each batch in its span (`history.write`) when traces are on. */
function tracedWriter(writer: BatchWriter, tracer: Tracer): BatchWriter {
  if (!tracer.enabled) return writer;
  return (batch) =>
    tracer.span(
      'history.write',
      async (span) => {
        span.set('observer.history.checks', batch.checks.length);
        span.set('observer.history.lookups', batch.lookups.length);
        await writer(batch);
      },
      // A batch holds the rows of many look-ups: its own trace, not the first one's.
      { root: true },
    );
}

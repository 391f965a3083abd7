/**
 * Ranking snapshots for /trends: the pages of a cursor chain are cut from one ranking.
 *
 * The cursor is only the `server_id` of the previous page's last item (docs/api.md, "Trends"),
 * so the ranking a chain was cut from cannot travel in it. Instead the store keeps a little of
 * what it ranked, bounded whatever the number of servers and whatever clients ask:
 *
 * - A snapshot is the head of the ranking (fresh online servers, score descending, then id):
 *   the key, id and score of its first `SNAPSHOT_SERVERS` servers, read in one statement from
 *   the index that orders them (a page reads the rest of its own servers' rows).
 * - A first page is cut from the latest snapshot while that snapshot holds every check and
 *   look-up recorded on this instance and is under `lifeMs` old (a second: other instances
 *   write to a shared database too, and their checks show within it); otherwise a new one is
 *   taken, after the queued rows are written, so a check counts as soon as it is made.
 *   Requests that need a new snapshot at the same time share one read.
 * - Every page remembers where its `nextCursor` stands (for `cursorLifeMs`, at most
 *   `maxCursors` of them): in which of the last `keptSnapshots` snapshots, or, past a
 *   snapshot's end, at which score. The next page of the chain continues from there, however
 *   the ranking moved since: from the same snapshot, or past it by score and id in the
 *   ranking as it is now. A cursor the store no longer remembers continues in the latest
 *   snapshot, after its server, or where its current score places it.
 */
/** Servers a snapshot holds at most: 20 pages at the largest limit. */
export const SNAPSHOT_SERVERS = 1_000;

/** A server's place in the ranking: what the `servers_ranking` index holds of it. */
export interface RankedServer {
  sid: number;
  id: string;
  /** The stored integer score (ranking.ts). */
  score: number;
}

let snapshotsTaken = 0;

export class RankingSnapshot {
  private readonly positions = new Map<string, number>();
  /** Names the snapshot in remembered cursors, which must not hold the snapshot itself. */
  readonly serial = ++snapshotsTaken;

  constructor(
    /** When it was read (monotonic clock). */
    readonly takenAt: number,
    /** The write queue's version when it was read: every row of a lower version is in it. */
    readonly version: number,
    readonly servers: readonly RankedServer[],
    /** Whether the ranking ended within the snapshot; if not, it goes on past `servers`. */
    readonly complete: boolean,
  ) {
    servers.forEach((server, i) => this.positions.set(server.id, i));
  }

  /** Index of the first server ranked after `id`; null when `id` is not in this snapshot. */
  after(id: string): number | null {
    const at = this.positions.get(id);
    return at === undefined ? null : at + 1;
  }

  /** Index of the first server ranked after a server with this score and id (score desc, id asc). */
  afterPlace(score: number, id: string): number {
    let low = 0;
    let high = this.servers.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const s = this.servers[mid]!;
      const before = s.score > score || (s.score === score && s.id <= id);
      if (before) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

/** Where a page's `nextCursor` stands: in a snapshot, or past one's end at a score. */
export type CursorPlace = { snapshot: RankingSnapshot } | { score: number };
/** A remembered place: a snapshot by its serial, so a cursor never keeps a snapshot alive. */
type RememberedPlace = { serial: number } | { score: number };

export interface RankingSnapshotsOptions {
  /** Longest a snapshot serves first pages (default 1 s). */
  lifeMs?: number;
  /** How long a page's `nextCursor` leads to where it was cut (default 60 s). */
  cursorLifeMs?: number;
  /** Snapshots kept for chains in progress (default 8); older ones are let go. */
  keptSnapshots?: number;
  /** Cursors remembered at most (default 10,000; least recently issued first out). */
  maxCursors?: number;
}

export class RankingSnapshots {
  private latest: RankingSnapshot | null = null;
  private taking: { version: number; snapshot: Promise<RankingSnapshot> } | null = null;
  private kept: RankingSnapshot[] = [];
  private readonly issued = new Map<string, { place: RememberedPlace; until: number }>();
  private readonly lifeMs: number;
  private readonly cursorLifeMs: number;
  private readonly keptSnapshots: number;
  private readonly maxCursors: number;

  constructor(
    /** Writes what is queued and reads the head of the ranking, stamped with `version`. */
    private readonly take: (version: number) => Promise<RankingSnapshot>,
    /** The write queue's version now. */
    private readonly version: () => number,
    options: RankingSnapshotsOptions = {},
  ) {
    this.lifeMs = options.lifeMs ?? 1_000;
    this.cursorLifeMs = options.cursorLifeMs ?? 60_000;
    this.keptSnapshots = options.keptSnapshots ?? 8;
    this.maxCursors = options.maxCursors ?? 10_000;
  }

  /** Where the page that issued `cursor` ended, while it is remembered (`now`: monotonic). */
  issuedAt(cursor: string, now: number): CursorPlace | null {
    const entry = this.issued.get(cursor);
    if (!entry) return null;
    const { place } = entry;
    const snapshot = 'serial' in place ? this.kept.find((s) => s.serial === place.serial) : undefined;
    if (entry.until <= now || ('serial' in place && !snapshot)) {
      this.issued.delete(cursor);
      return null;
    }
    return snapshot ? { snapshot } : (place as { score: number });
  }

  /** Remembers where a page ending on `cursor` stood. */
  issue(cursor: string, place: CursorPlace, now: number): void {
    this.issued.delete(cursor);
    if (this.issued.size >= this.maxCursors) this.issued.delete(this.issued.keys().next().value!);
    const remembered = 'snapshot' in place ? { serial: place.snapshot.serial } : place;
    this.issued.set(cursor, { place: remembered, until: now + this.cursorLifeMs });
  }

  /** A snapshot holding every row recorded before this call, under `lifeMs` old (`now`: monotonic). */
  async current(now: number): Promise<RankingSnapshot> {
    const wanted = this.version();
    const latest = this.latest;
    if (latest && latest.version === wanted && now - latest.takenAt < this.lifeMs && now >= latest.takenAt) return latest;
    // A read that started after everything this call needs is shared; an older one is waited
    // out, so that at most one ranking read runs at a time.
    if (this.taking && this.taking.version >= wanted) return this.taking.snapshot;
    if (this.taking) await this.taking.snapshot.catch(() => {});
    if (this.taking && this.taking.version >= wanted) return this.taking.snapshot;
    return this.start();
  }

  private start(): Promise<RankingSnapshot> {
    const version = this.version();
    const snapshot = this.take(version).then((taken) => {
      this.latest = taken;
      this.kept.push(taken);
      if (this.kept.length > this.keptSnapshots) this.kept.shift();
      return taken;
    });
    const entry = { version, snapshot };
    this.taking = entry;
    const clear = () => {
      if (this.taking === entry) this.taking = null;
    };
    snapshot.then(clear, clear);
    return snapshot;
  }
}

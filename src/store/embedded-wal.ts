/**
 * The embedded database's files, watched: the sizes of Rampart's SQLite database and of its
 * write-ahead log (WAL), read from the file system every second (the metrics read these figures,
 * never the database), and the log checkpointed and cut to zero bytes whenever it is past its
 * limit.
 *
 * SQLite copies the log's frames into the database (a checkpoint) every ~16 MB of them
 * (`wal_autocheckpoint`), and writes the log from its start again once a checkpoint has copied
 * everything and no reader still reads older frames. A read transaction that stays open keeps
 * checkpoints from copying what was written after it began, and reads that overlap without a
 * pause never let the log start over: it then grows by everything written meanwhile (1.5 GB in
 * 9 minutes of a soak on a machine shared with other work; docs/embedded-database.md). FerretDB
 * reads in short transactions (patch 0010), so this is rare; when the log still passes
 * `limitBytes`, this sends `compact` (patches 0008 and 0010: `wal_checkpoint(TRUNCATE)`, which
 * waits at most half a second for old readers and blocks writers meanwhile), and again after a
 * pause that doubles while readers hold it back (up to 30 s), until it is back under the limit.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from 'mongodb';
import { ENVIRONMENTS } from './environments';

export interface EmbeddedFileSizes {
  /** The SQLite database file (`<name>.sqlite`). */
  databaseBytes: number;
  /** Its write-ahead log (`<name>.sqlite-wal`; 0 when there is none). */
  walBytes: number;
}

export type CheckpointOutcome = 'truncated' | 'busy' | 'failed';

export interface WalGuardOptions {
  /** The primary FerretDB's database (Rampart's own connection). */
  db: Db;
  /** The directory of the SQLite files (`<data dir>/ferretdb`). */
  dir: string;
  /** The database's name (RAMPART_DB_NAME): its file is `<dir>/<name>.sqlite`. */
  dbName: string;
  /** A collection of it that exists, which `compact` names (the checkpoint is the whole file's; default `environments`). */
  collection?: string;
  /** Past this many bytes of log, it is checkpointed and truncated (RAMPART_EMBEDDED_WAL_LIMIT_MB). */
  limitBytes: number;
  /** How often the files are looked at (default 1 s). */
  everyMs?: number;
  /** Longest pause between two checkpoints that readers held back (default 30 s). */
  maxBackoffMs?: number;
  /** Each checkpoint this sent, and how it ended. */
  onCheckpoint?: (outcome: CheckpointOutcome) => void;
  log?: { warn(obj: object, msg: string): void };
}

/** How often a log still past its limit is reported (ms). */
const WARN_EVERY_MS = 60_000;

const sizeOf = async (file: string): Promise<number> => {
  try {
    return (await stat(file)).size;
  } catch {
    return 0;
  }
};

export class WalGuard {
  private readonly database: string;
  private readonly wal: string;
  private readonly everyMs: number;
  private readonly maxBackoffMs: number;
  private latest: EmbeddedFileSizes | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** When a checkpoint may be tried again, and the pause after the next one that is held back. */
  private nextCheckpointAt = 0;
  private backoffMs: number;
  private lastWarnAt = -Infinity;

  constructor(private readonly o: WalGuardOptions) {
    this.database = path.join(o.dir, `${o.dbName}.sqlite`);
    this.wal = `${this.database}-wal`;
    this.everyMs = o.everyMs ?? 1000;
    this.maxBackoffMs = o.maxBackoffMs ?? 30_000;
    this.backoffMs = this.everyMs;
  }

  /** Past this many bytes the log is checkpointed and truncated. */
  get limitBytes(): number {
    return this.o.limitBytes;
  }

  /** The sizes as last read (null before the first look). Memory only: what a scrape reads. */
  sizes(): EmbeddedFileSizes | null {
    return this.latest;
  }

  /** Looks at once, then every `everyMs`. */
  start(): void {
    if (this.timer || this.stopped) return;
    const tick = () => {
      this.timer = null;
      void this.check()
        .catch((err: unknown) =>
          this.o.log?.warn(
            { err: err instanceof Error ? err.message : String(err) },
            "the embedded database's files could not be checked",
          ),
        )
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.everyMs).unref();
        });
    };
    tick();
  }

  /**
   * No further look. A look under way is not awaited: its checkpoint may wait on a database that
   * hangs, and it ends (failed) when the connection is closed.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** One look: the sizes, and a checkpoint if the log is past its limit (exported for the tests and the bench). */
  async check(): Promise<void> {
    await this.measure();
    const walBytes = this.latest?.walBytes ?? 0;
    if (walBytes <= this.o.limitBytes) {
      this.backoffMs = this.everyMs;
      this.nextCheckpointAt = 0;
      return;
    }
    const now = Date.now();
    if (now < this.nextCheckpointAt || this.stopped) return;
    const outcome = await this.checkpoint();
    this.o.onCheckpoint?.(outcome);
    if (outcome === 'truncated') {
      this.backoffMs = this.everyMs;
      this.nextCheckpointAt = 0;
    } else {
      this.nextCheckpointAt = Date.now() + this.backoffMs;
      this.backoffMs = Math.min(this.backoffMs * 2, this.maxBackoffMs);
    }
    await this.measure();
    const after = this.latest?.walBytes ?? 0;
    if (after > this.o.limitBytes && Date.now() - this.lastWarnAt >= WARN_EVERY_MS) {
      this.lastWarnAt = Date.now();
      this.o.log?.warn(
        {
          walMB: Math.round(after / 1048576),
          limitMB: Math.round(this.o.limitBytes / 1048576),
          checkpoint: outcome,
        },
        "the embedded database's write-ahead log is past its limit: a read still holds older frames, so it cannot be truncated yet",
      );
    }
  }

  private async measure(): Promise<void> {
    const [databaseBytes, walBytes] = await Promise.all([sizeOf(this.database), sizeOf(this.wal)]);
    this.latest = { databaseBytes, walBytes };
  }

  private async checkpoint(): Promise<CheckpointOutcome> {
    try {
      await this.o.db.command({ compact: this.o.collection ?? ENVIRONMENTS });
      return 'truncated';
    } catch (err) {
      return /busy/i.test(err instanceof Error ? err.message : String(err)) ? 'busy' : 'failed';
    }
  }
}

/**
 * Packs the overview's settled rollups (see src/store/rollup-docs.ts for why): every hour that
 * ended more than SETTLED_AFTER_MS ago, and every whole UTC day of such hours, gets a packed copy
 * of its dimensions per part (all events, and each verdict), within the environment's last
 * `windowDays` (at most its retention). An hour's copy is made from its dimensions' documents;
 * a day's from its 24 hours' copies, keeping the top `top` values per dimension.
 *
 * A copy records how many events it counts. The reader uses it only while the rollups of counts
 * still say that many, so a late event (timestamped in a packed hour) never yields a wrong answer:
 * that hour is read from its own documents until the next run packs it again. Runs remember what
 * they packed and check the last day's hours again on every run (where late events land); every
 * few hours they check everything again.
 *
 * Every instance runs the compactor; two that pack the same hour write the same copy.
 */
import type { Db } from 'mongodb';
import type { EnvId } from '../core/model';
import {
  DAY,
  HOUR,
  MINUTE,
  PARTS,
  ROLLUPS,
  addPacked,
  addPartDimensions,
  dayId,
  dimensionsId,
  emptyDimensions,
  hourId,
  pack,
  packedId,
  partCount,
  sinceId,
  type PackedDoc,
  type RollupDoc,
  type RollupPart,
} from './rollup-docs';
import { unpackAs } from './state/pack';
import type { StoreDeps } from './deps';

/** Values a day's packed copy names per dimension (the rest are counted as overflow). */
export const PACK_TOP = 5_000;
/** An hour is packed this long after it ends (the rollups push every 5 s; late events). */
const SETTLED_AFTER_MS = 2 * MINUTE;
/** The hours checked again on every run: where late events land. */
const RECHECK_MS = 26 * HOUR;
/** How often everything packed is checked again. */
const FULL_CHECK_MS = 6 * HOUR;

export interface CompactorEnvironment {
  id: EnvId;
  retentionDays: number;
}

export interface CompactionRun {
  /** Packed copies written (hours and days). */
  written: number;
  /** Periods found packed and current. */
  current: number;
}

export interface RollupCompactorDeps extends StoreDeps {
  /** The environments to pack, with their retention. */
  environments: () => Promise<readonly CompactorEnvironment[]>;
  now?: () => number;
  /** How many days back to pack (default 31: the overview's 30-day view), at most the retention. */
  windowDays?: number;
  top?: number;
}

export class RollupCompactor {
  /** Packed copy id → the events it counts, as written or read by this instance. */
  private known = new Map<string, number>();
  private checkedAllAt = 0;
  private stopped = false;

  private readonly db: Db;
  private readonly o: Omit<RollupCompactorDeps, 'db'>;
  constructor({ db, ...o }: RollupCompactorDeps) {
    this.db = db;
    this.o = o;
  }

  private get rollups() {
    return this.db.collection<RollupDoc>(ROLLUPS);
  }

  private get packs() {
    return this.db.collection<PackedDoc>(ROLLUPS);
  }

  stop(): void {
    this.stopped = true;
  }

  async run(): Promise<CompactionRun> {
    this.stopped = false;
    const now = this.o.now?.() ?? Date.now();
    if (now - this.checkedAllAt >= FULL_CHECK_MS) {
      this.known = new Map();
      this.checkedAllAt = now;
    }
    const total: CompactionRun = { written: 0, current: 0 };
    for (const env of await this.o.environments()) {
      if (this.stopped) break;
      const r = await this.compact(env, now);
      total.written += r.written;
      total.current += r.current;
    }
    return total;
  }

  private async compact(env: CompactorEnvironment, now: number): Promise<CompactionRun> {
    const run: CompactionRun = { written: 0, current: 0 };
    const since = (await this.rollups.findOne({ _id: sinceId(env.id) }))?.at;
    if (!(since instanceof Date)) return run;
    const windowMs = Math.min(this.o.windowDays ?? 31, env.retentionDays) * DAY;
    // The first minute counted is the one before the marker (see RollupReader.planFrom).
    const first = Math.max(
      Math.ceil((since.getTime() - MINUTE) / HOUR) * HOUR,
      Math.floor((now - windowMs) / HOUR) * HOUR,
    );
    const end = Math.floor((now - SETTLED_AFTER_MS) / HOUR) * HOUR;
    const hours: number[] = [];
    for (let h = first; h < end; h += HOUR) hours.push(h);
    if (hours.length === 0) return run;

    // The rollups of counts of the hours to check: the last day's, and those not known packed.
    const unknown = (h: number) =>
      now - h < RECHECK_MS || PARTS.some((part) => !this.known.has(packedId(hourId(env.id, h), part)));
    const toCheck = hours.filter(unknown);
    const counts = await this.byId<RollupDoc>(toCheck.map((h) => hourId(env.id, h)));
    const stale: { start: number; part: RollupPart; n: number }[] = [];
    for (const start of toCheck) {
      const doc = counts.get(hourId(env.id, start));
      for (const part of PARTS) {
        const id = packedId(hourId(env.id, start), part);
        const n = partCount(doc, part);
        // No event of the part in that hour: nothing to pack (known as such, for its day).
        if (n === 0) this.known.set(id, 0);
        else if (this.known.get(id) !== n) stale.push({ start, part, n });
      }
    }
    // Copies written earlier (by this instance before a restart, or by another) that are current.
    const existing = await this.byId<PackedDoc>(
      stale.map((s) => packedId(hourId(env.id, s.start), s.part)),
      { n: 1 },
    );
    for (const s of stale) {
      if (this.stopped) return run;
      const hour = hourId(env.id, s.start);
      const id = packedId(hour, s.part);
      if (existing.get(id)?.n === s.n) {
        this.known.set(id, s.n);
        run.current += 1;
        continue;
      }
      const dims = await this.byId<RollupDoc>([dimensionsId(hour, s.part)]);
      const sum = emptyDimensions();
      addPartDimensions(sum, counts.get(hour), s.part, dims.get(dimensionsId(hour, s.part)));
      await this.write(pack(id, env.id, new Date(s.start), s.n, sum, Number.MAX_SAFE_INTEGER));
      run.written += 1;
    }

    // Whole days whose every hour is known: packed from their hours' copies.
    for (let day = Math.ceil(first / DAY) * DAY; day + DAY <= end; day += DAY) {
      for (const part of PARTS) {
        if (this.stopped) return run;
        const id = packedId(dayId(env.id, day), part);
        const ids = Array.from({ length: 24 }, (_, i) => packedId(hourId(env.id, day + i * HOUR), part));
        if (!ids.every((h) => this.known.has(h))) continue;
        const n = ids.reduce((sum, h) => sum + (this.known.get(h) ?? 0), 0);
        if (n === 0 || this.known.get(id) === n) continue;
        if ((await this.byId<PackedDoc>([id], { n: 1 })).get(id)?.n === n) {
          this.known.set(id, n);
          run.current += 1;
          continue;
        }
        const sum = emptyDimensions();
        for (const h of (await this.byId<PackedDoc>(ids)).values()) addPacked(sum, h);
        await this.write(pack(id, env.id, new Date(day), n, sum, this.o.top ?? PACK_TOP));
        run.written += 1;
      }
    }
    return run;
  }

  private async write(doc: PackedDoc): Promise<void> {
    await this.packs.replaceOne({ _id: doc._id }, doc, { upsert: true });
    this.known.set(doc._id, doc.n);
  }

  /** Documents by id, in chunks, keyed by id. */
  private async byId<T extends RollupDoc | PackedDoc>(
    ids: readonly string[],
    projection?: Record<string, 1>,
  ): Promise<Map<string, T>> {
    const found = new Map<string, T>();
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const docs = await this.db
        .collection<T>(ROLLUPS)
        .find({ _id: { $in: chunk } } as never, projection ? { projection } : {})
        .toArray();
      for (const d of docs) found.set(d._id, unpackAs(d as T));
    }
    return found;
  }
}

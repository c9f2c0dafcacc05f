/**
 * The overview's rollups: every stored event is also counted, behind the answer like the velocity
 * counters, in one document per environment and hour and one per environment and minute:
 * events, verdicts by action, signals, and events per address, ASN and country. The overview's
 * 24-hour and 7-day views then read 24 to 168 hour documents and at most 118 minute documents
 * for the partial hours at the range's edges, all by `_id` (the one look-up FerretDB's SQLite
 * backend serves from an index), instead of scanning the events. The counts per address, ASN and
 * country of settled hours and whole days are read from packed copies (store/rollup-compactor.ts).
 *
 * A rollup holds at most `cap` distinct addresses (and ASNs, countries) per instance: past it,
 * further ones are counted under `o` (overflow), so a botnet's million addresses in an hour cannot
 * grow a document past its bound; the top lists stay exact for the largest values, the distinct
 * counts become lower bounds (`overflow` says so).
 *
 * The same three dimensions are also counted per verdict (`x.<action>.<ip|asn|cc>.<value>`, past
 * the cap `xo.<action>.<ip|asn|cc>`, for allow, challenge and deny; the cap holds per action too),
 * so that the overview's "denied from" and "challenged" panels (a time range and an `action`) read
 * rollups as well. Signals are not counted per verdict: a series or a signal list filtered by
 * action is answered from the events.
 *
 * Rollups start when this version first records an event of the environment (`since`, a minute
 * boundary): a range that begins earlier is answered from the events, as before. Rollups written
 * before the per-verdict counts existed lack them, so those have their own marker (`since2`, set
 * the same way by the versions that count them): a range with an action that begins before it is
 * answered from the events. (While instances of an older version still run beside newer ones, in
 * a rolling upgrade, their events miss the per-verdict counts.)
 */
import type { Db } from 'mongodb';
import type { Action, EnvId, StoredEvent } from '../core/model';
import type { IndexSpec } from './database';
import { delta, fieldName, fromFieldName } from './state/delta';
import type { StateLayer } from './state/layer';
import type { AnalystGate } from './analyst-gate';
import {
  ALL,
  DAY,
  HOUR,
  MINUTE,
  NO_ACTION,
  ROLLUPS,
  addPacked,
  addPartDimensions,
  dayId,
  dimensionsId,
  emptyDimensions,
  hourId,
  isPacked,
  minuteId,
  packedId,
  partCount,
  sinceByActionId,
  sinceId,
  type DimensionCounts,
  type PackedDoc,
  type RollupDoc,
  type RollupPart,
} from './rollup-docs';
import { unpackAs } from './state/pack';
import type { StoreDeps } from './deps';

export { ROLLUP_QUERY_FIELDS, ROLLUPS, type RollupDimension } from './rollup-docs';
/**
 * On MongoDB, retention deletes an environment's rollups oldest first (store/retention.ts): this
 * index serves it. Rollups are read by `_id` only, so FerretDB (which would gain nothing from it)
 * does not get it (server-kind.ts: non-unique indexes there only where a read uses them).
 */
export const rollupIndexes: IndexSpec[] = [
  { collection: ROLLUPS, indexes: [{ key: { envId: 1, at: 1 }, name: 'env_at' }] },
];

/** Distinct addresses (ASNs, countries) one instance records per rollup before counting the rest as overflow. */
export const ROLLUP_KEY_CAP = 5_000;

/** Rollups whose sets of admitted values an instance keeps (the newest ones). */
const SEEN_ROLLUPS = 800;

/** A rollup's counts gathered in memory before they are handed to the state layer. */
interface Pending {
  id: string;
  envId: EnvId;
  start: number;
  counts: Map<string, number>;
  /** The ids of its documents of dimensions (`<id>:d:<part>`), made once. */
  parts: Partial<Record<RollupPart, string>>;
}

/** How often a RollupWriter hands its gathered counts to the state layer by default. */
export const PUSH_EVERY_MS = 5_000;
/** How long a RollupReader reuses a rollup it read, by default. */
export const SUM_CACHE_MS = 5 * MINUTE;

/** Adds one to a path of a rollup's gathered counts. */
const bump = (counts: Map<string, number>, path: string) => counts.set(path, (counts.get(path) ?? 0) + 1);

/** The path of each verdict's count (`a.<action>`). */
const ACTION_PATHS: Record<string, string> = {};

/**
 * Counts every stored event into its hour's and its minute's rollup. Counts gather in memory and
 * go to the state layer every `pushEveryMs` (default 5 s) as one delta per rollup, so that a
 * rollup is written a few times a minute, not on every flush (on the embedded database every
 * write is of the whole document, and an hour's rollup holds thousands of addresses). The cost:
 * a `kill -9` loses up to that long of the overview's counts (never an event); `drain()` at
 * shutdown hands everything over first.
 */
export class RollupWriter {
  /** The values recorded per rollup, and per dimension field (and verdict), by this instance (bounded: the newest rollups only). */
  private readonly seen = new Map<string, Map<string, Set<string>>>();
  private readonly started = new Set<EnvId>();
  private pending = new Map<string, Pending>();
  /** The hour and minute rollups the last event counted in (see pendingOf). */
  private lastHour: Pending | null = null;
  private lastMinute: Pending | null = null;
  private readonly signalPaths = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;

  private readonly state: StateLayer;
  private readonly o: { cap?: number; pushEveryMs?: number };
  /** `pushEveryMs`: how often counts go to the state layer (default PUSH_EVERY_MS); `cap`: values kept per rollup field (default ROLLUP_KEY_CAP). */
  constructor({ state, ...o }: { state: StateLayer; cap?: number; pushEveryMs?: number }) {
    this.state = state;
    this.o = o;
    state.addGatherer(() => this.drain());
  }

  record(e: StoredEvent): void {
    if (!this.started.has(e.envId)) {
      this.started.add(e.envId);
      // The first minute this instance counts whole: rollups are complete from there on.
      const since = new Date(Math.ceil(e.receivedAt.getTime() / MINUTE) * MINUTE);
      for (const id of [sinceId(e.envId), sinceByActionId(e.envId)])
        this.state.apply(ROLLUPS, id, delta().setOnInsert(['envId'], e.envId).min(['at'], since));
    }
    const at = e.occurredAt.getTime();
    // What the event adds, named once for both of its rollups (hour and minute).
    const action = e.action ?? NO_ACTION;
    const actionPath = (ACTION_PATHS[action] ??= `a.${action}`);
    const ip = e.ip !== null && e.ip !== '' ? e.ip : null;
    const asn = e.asn === null ? null : String(e.asn);
    const cc = e.country !== null && e.country !== '' ? e.country : null;
    const ipPath = ip === null ? '' : `ip.${fieldName(ip)}`;
    const asnPath = asn === null || asn === '' ? '' : `asn.${fieldName(asn)}`;
    const ccPath = cc === null ? '' : `cc.${fieldName(cc)}`;
    for (let r = 0; r < 2; r++) {
      const p = r === 0 ? this.pendingOf(e.envId, 'h', HOUR, at) : this.pendingOf(e.envId, 'm', MINUTE, at);
      const counts = p.counts;
      bump(counts, 'n');
      bump(counts, actionPath);
      const signals = e.signals;
      for (let i = 0; i < signals.length; i++) {
        const signal = signals[i] as string;
        // Each signal once, however often the event names it.
        if (signals.indexOf(signal) === i) bump(counts, this.signalPath(signal));
      }
      // Where from: in documents of their own, of all events and of the event's verdict.
      for (let k = 0; k < (e.action ? 2 : 1); k++) {
        const part: RollupPart = k === 0 ? ALL : (e.action as Action);
        const partId = (p.parts[part] ??= dimensionsId(p.id, part));
        const partCounts = this.pendingFor(partId, e.envId, p.start).counts;
        bump(partCounts, 'n');
        if (ip !== null) bump(partCounts, this.admitted(partId, 'ip', ip) ? ipPath : 'o.ip');
        if (asnPath !== '') bump(partCounts, this.admitted(partId, 'asn', asn as string) ? asnPath : 'o.asn');
        if (cc !== null) bump(partCounts, this.admitted(partId, 'cc', cc) ? ccPath : 'o.cc');
      }
    }
    this.timer ??= setTimeout(() => this.push(), this.o.pushEveryMs ?? PUSH_EVERY_MS).unref();
  }

  /** The gathered counts of the rollup (`h`: hour, `m`: minute) an event at `at` counts in. */
  private pendingOf(envId: EnvId, kind: 'h' | 'm', period: number, at: number): Pending {
    const start = Math.floor(at / period) * period;
    // The same rollup as the previous event's, nearly always: found without building its id.
    const last = kind === 'h' ? this.lastHour : this.lastMinute;
    if (last && last.envId === envId && last.start === start && this.pending.get(last.id) === last)
      return last;
    const p = this.pendingFor(kind === 'h' ? hourId(envId, start) : minuteId(envId, start), envId, start);
    if (kind === 'h') this.lastHour = p;
    else this.lastMinute = p;
    return p;
  }

  /** A rollup document's gathered counts, made when it has none. */
  private pendingFor(id: string, envId: EnvId, start: number): Pending {
    let p = this.pending.get(id);
    if (!p) {
      p = { id, envId, start, counts: new Map(), parts: {} };
      this.pending.set(id, p);
    }
    return p;
  }

  /** The path of a signal's count (`s.<signal>`): signals are a small vocabulary (bounded all the same). */
  private signalPath(signal: string): string {
    let path = this.signalPaths.get(signal);
    if (path === undefined) {
      path = `s.${fieldName(signal)}`;
      if (this.signalPaths.size >= 1_000) this.signalPaths.clear();
      this.signalPaths.set(signal, path);
    }
    return path;
  }

  /** Hand every gathered count to the state layer now (also on every explicit flush of it). */
  drain(): void {
    this.push();
  }

  private push(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const pending = this.pending;
    this.pending = new Map();
    for (const [id, p] of pending) {
      const d = delta().setOnInsert(['envId'], p.envId).setOnInsert(['at'], new Date(p.start));
      for (const [path, n] of p.counts) d.inc(path.split('.'), n);
      this.state.apply(ROLLUPS, id, d);
    }
  }

  /**
   * Whether this instance records `value` by name in rollup `id` under `field` (a dimension field,
   * or `<action>.<field>` for the per-verdict counts), else it is counted as overflow.
   */
  private admitted(id: string, field: string, value: string): boolean {
    let fields = this.seen.get(id);
    if (!fields) {
      // Keep the sets of the newest rollups only: events arrive in time order, near enough.
      if (this.seen.size >= SEEN_ROLLUPS) this.seen.delete(this.seen.keys().next().value as string);
      fields = new Map();
      this.seen.set(id, fields);
    }
    let values = fields.get(field);
    if (!values) {
      values = new Set();
      fields.set(field, values);
    }
    if (values.has(value)) return true;
    if (values.size >= (this.o.cap ?? ROLLUP_KEY_CAP)) return false;
    values.add(value);
    return true;
  }
}

/**
 * Marks an environment's rollups (and its per-verdict counts) as complete from `since` (kept if
 * earlier): for events loaded through a RollupWriter out of time order (the bench, tests).
 */
export async function markRollupsSince(db: Db, env: EnvId, since: Date): Promise<void> {
  for (const id of [sinceId(env), sinceByActionId(env)]) {
    await db
      .collection<{ _id: string; envId: EnvId; at: Date }>(ROLLUPS)
      .updateOne({ _id: id }, { $setOnInsert: { envId: env }, $min: { at: since } }, { upsert: true });
  }
}

/** What a range of rollups adds up to. */
export interface RollupTotals extends DimensionCounts {
  total: number;
  actions: Map<Action | null, number>;
  signals: Map<string, number>;
}

/** What a range of rollups adds up to for the events of one verdict (no signals: those are not counted per verdict). */
export interface RollupActionTotals extends DimensionCounts {
  total: number;
}

/** One bucket of a series read from rollups. */
export interface RollupBucket {
  start: Date;
  total: number;
  actions: Map<Action | null, number>;
  signals: Map<string, number>;
}

const add = <K>(m: Map<K, number>, k: K, n: number) => m.set(k, (m.get(k) ?? 0) + n);

/** How long after its period ends a rollup is taken as settled (pushes every 5 s, late events). */
const SETTLED_AFTER_MS = 2 * MINUTE;
/** How long a sum over a range is reused by the queries that ask for it again (one GraphQL query's fields). */
const SUM_REUSE_MS = 2_000;
/** Most values (counts) of settled rollups the reader keeps in memory. */
const CACHE_MAX_VALUES = 500_000;

/** A stored rollup: of counts, of dimensions, or a packed copy. */
type Stored = RollupDoc | PackedDoc;
/** A period the reader reads, by the id of its document. */
interface Period {
  id: string;
  start: number;
  ms: number;
}

/** The number of counts a rollup holds: what it weighs in the reader's cache. */
function weightOf(d: RollupDoc | PackedDoc | null): number {
  if (!d) return 1;
  if (isPacked(d)) return 1 + d.k;
  let n = 1;
  const count = (o: unknown): void => {
    if (!o || typeof o !== 'object') return;
    for (const v of Object.values(o)) {
      if (typeof v === 'number') n += 1;
      else count(v);
    }
  };
  count(d);
  return n;
}

/** The analysts' reads of the rollups: through their gate, each stopped at `maxTimeMS`. */
export interface RollupReaderDeps extends StoreDeps {
  gate: AnalystGate;
  maxTimeMS: number;
  now?: () => number;
  /** How long a rollup read is reused (default SUM_CACHE_MS). */
  cacheMs?: number;
  /**
   * The server finds an environment's events by time through an index (MongoDB, Rampart's
   * FerretDB build), so a range that begins before rollups did can be checked for older events:
   * with none, rollups answer it whole (a young environment's 30-day view).
   */
  indexed?: boolean;
}

/**
 * Reads rollups by `_id` lists (the analysts' connection, through their gate). A settled rollup
 * (its period ended SETTLED_AFTER_MS ago) is kept in memory for `cacheMs` (default 5 minutes), up
 * to CACHE_MAX_VALUES counts, so that an overview re-reads only its last minutes: an hour's
 * rollup holds thousands of addresses, and decoding 168 of them is most of a 7-day view. A count
 * that changes in a settled rollup (an event timestamped hours back) shows within `cacheMs`.
 * Reads of the same rollup at once (the fields of one GraphQL query) share one database read.
 */
export class RollupReader {
  private readonly cache = new Map<string, { doc: Stored | null; until: number; weight: number }>();
  private cached = 0;
  private readonly reading = new Map<string, Promise<Stored | null>>();

  private readonly db: Db;
  private readonly gate: AnalystGate;
  private readonly maxTimeMS: number;
  private readonly o: Omit<RollupReaderDeps, 'db' | 'gate' | 'maxTimeMS'>;
  constructor({ db, gate, maxTimeMS, ...o }: RollupReaderDeps) {
    this.db = db;
    this.gate = gate;
    this.maxTimeMS = maxTimeMS;
    this.o = o;
  }

  private readonly emptyBefore = new Map<string, { empty: boolean; until: number }>();

  /** Whether the environment has no event before `at` (checked through the time index, kept 10 minutes). */
  private async noEventsBefore(env: EnvId, at: Date): Promise<boolean> {
    const key = `${env}|${at.getTime()}`;
    const now = this.o.now?.() ?? Date.now();
    const hit = this.emptyBefore.get(key);
    if (hit && hit.until > now) return hit.empty;
    const older = await this.gate.run(() =>
      this.db
        .collection<{ _id: string; envId: string; occurredAt: Date }>('events')
        .findOne(
          { envId: env, occurredAt: { $lt: at } },
          { projection: { _id: 1 }, maxTimeMS: this.maxTimeMS },
        ),
    );
    if (this.emptyBefore.size > 1000) this.emptyBefore.clear();
    this.emptyBefore.set(key, { empty: older === null, until: now + 10 * MINUTE });
    return older === null;
  }

  /**
   * The plan of [from, to) from the marker `markerId` on. The marker is the minute after the one
   * the first counted event arrived in; that minute was counted too, so when the environment has no
   * event before it (a new environment: nothing else to count), a range that begins earlier is
   * planned from there.
   */
  private async planFrom(env: EnvId, markerId: string, from: Date, to: Date): Promise<Period[] | null> {
    const since = await this.since(markerId);
    if (!since) return null;
    const first = new Date(since.getTime() - MINUTE);
    if (
      from.getTime() < first.getTime() &&
      from.getTime() % MINUTE === 0 &&
      to.getTime() % MINUTE === 0 &&
      this.o.indexed &&
      (await this.noEventsBefore(env, first))
    ) {
      return to.getTime() <= first.getTime() ? [] : this.plan(env, first, to, first);
    }
    return this.plan(env, from, to, since);
  }

  /**
   * The rollup ids that cover [from, to) exactly: whole hours by their hour rollup, the minutes of
   * partial hours (and of hours that began before `since`) by their minute rollups. Null when the
   * range is not on minute boundaries, or begins before rollups did.
   */
  private plan(env: EnvId, from: Date, to: Date, since: Date): Period[] | null {
    const f = from.getTime();
    const t = to.getTime();
    if (f % MINUTE !== 0 || t % MINUTE !== 0 || f < since.getTime() || f >= t) return null;
    const parts: Period[] = [];
    for (let m = f; m < t;) {
      const hour = Math.floor(m / HOUR) * HOUR;
      if (m === hour && hour + HOUR <= t && hour >= since.getTime()) {
        parts.push({ id: hourId(env, hour), start: hour, ms: HOUR });
        m += HOUR;
      } else {
        parts.push({ id: minuteId(env, m), start: m, ms: MINUTE });
        m += MINUTE;
      }
    }
    return parts;
  }

  /** When rollups began (`sinceId`), or began counting per verdict (`sinceByActionId`); null: not yet. */
  private async since(id: string): Promise<Date | null> {
    const doc = await this.gate.run(() =>
      this.db
        .collection<{ _id: string; at?: Date }>(ROLLUPS)
        .findOne({ _id: id }, { maxTimeMS: this.maxTimeMS }),
    );
    const at = doc ? unpackAs(doc).at : undefined;
    return at instanceof Date ? at : null;
  }

  /** The documents of `parts` by id (`T`: what those ids hold, rollups of counts unless told). */
  private async docs<T extends Stored = RollupDoc>(parts: readonly Period[]): Promise<Map<string, T>> {
    const now = this.o.now?.() ?? Date.now();
    const cacheMs = this.o.cacheMs ?? SUM_CACHE_MS;
    const found = new Map<string, T>();
    const waits: Promise<void>[] = [];
    const missing: Period[] = [];
    for (const p of parts) {
      const hit = this.cache.get(p.id);
      const pending = this.reading.get(p.id);
      if (hit && hit.until > now) {
        if (hit.doc) found.set(p.id, hit.doc as T);
      } else if (pending) {
        waits.push(pending.then((d) => void (d && found.set(p.id, d as T))));
      } else missing.push(p);
    }
    for (let i = 0; i < missing.length; i += 1000) {
      const chunk = missing.slice(i, i + 1000);
      const read = this.gate.run(() =>
        this.db
          .collection<Stored>(ROLLUPS)
          .find({ _id: { $in: chunk.map((p) => p.id) } }, { maxTimeMS: this.maxTimeMS })
          .toArray(),
      );
      // (Stored packed by an embedded Rampart, or as fields: see ROLLUP_QUERY_FIELDS.)
      const byId = read.then((docs) => new Map(docs.map((d) => [d._id, unpackAs(d)])));
      for (const p of chunk) {
        const one = byId.then((m) => m.get(p.id) ?? null);
        this.reading.set(p.id, one);
        void one
          .catch(() => undefined)
          .finally(() => this.reading.get(p.id) === one && this.reading.delete(p.id));
      }
      const docs = await byId;
      for (const p of chunk) {
        const d = docs.get(p.id) ?? null;
        if (d) found.set(p.id, d as T);
        if (cacheMs > 0 && p.start + p.ms <= now - SETTLED_AFTER_MS) this.keep(p.id, d, now + cacheMs);
      }
    }
    await Promise.all(waits);
    return found;
  }

  private keep(id: string, doc: Stored | null, until: number): void {
    const old = this.cache.get(id);
    if (old) {
      this.cached -= old.weight;
      this.cache.delete(id);
    }
    const weight = weightOf(doc);
    this.cache.set(id, { doc, until, weight });
    this.cached += weight;
    // The oldest kept first (a Map keeps insertion order).
    for (const [k, v] of this.cache) {
      if (this.cached <= CACHE_MAX_VALUES) break;
      this.cache.delete(k);
      this.cached -= v.weight;
    }
  }

  /**
   * Adds the dimensions of `part` over the plan's periods into `sum` (`counts`: the plan's rollups
   * of counts). A whole UTC day of the plan is read from its packed copy, a whole hour from its
   * packed copy, when the copy still counts what the rollups of counts say (a late event makes it
   * stale until the compactor packs it again); every other period from its dimensions' document.
   * A period with no event of `part` is not read at all.
   */
  private async addDimensionsOf(
    sum: DimensionCounts,
    env: EnvId,
    plan: readonly Period[],
    part: RollupPart,
    counts: ReadonlyMap<string, RollupDoc>,
  ): Promise<void> {
    const countOf = (p: Period) => partCount(counts.get(p.id), part);
    const hours = plan.filter((p) => p.ms === HOUR && countOf(p) > 0);
    const byDay = new Map<number, Period[]>();
    for (const h of plan.filter((p) => p.ms === HOUR)) {
      const day = Math.floor(h.start / DAY) * DAY;
      byDay.set(day, [...(byDay.get(day) ?? []), h]);
    }
    const days = [...byDay]
      .filter(([, hs]) => hs.length === 24)
      .map(([start, hs]) => ({
        period: { id: packedId(dayId(env, start), part), start, ms: DAY },
        hours: hs,
      }));
    const packs = await this.docs<PackedDoc>([
      ...days.map((d) => d.period),
      ...hours.map((h) => ({ ...h, id: packedId(h.id, part) })),
    ]);
    const done = new Set<string>();
    for (const d of days) {
      const packed = packs.get(d.period.id);
      if (packed && packed.n === d.hours.reduce((n, h) => n + countOf(h), 0)) {
        addPacked(sum, packed);
        for (const h of d.hours) done.add(h.id);
      }
    }
    for (const h of hours) {
      const packed = packs.get(packedId(h.id, part));
      if (!done.has(h.id) && packed && packed.n === countOf(h)) {
        addPacked(sum, packed);
        done.add(h.id);
      }
    }
    const rest = plan.filter((p) => !done.has(p.id) && countOf(p) > 0);
    const dims = await this.docs(rest.map((p) => ({ ...p, id: dimensionsId(p.id, part) })));
    for (const p of rest) addPartDimensions(sum, counts.get(p.id), part, dims.get(dimensionsId(p.id, part)));
  }

  /**
   * The sums over [from, to), or null when rollups cannot answer for that range exactly. The
   * counts per address, ASN and country only `withDimensions` (they are read apart).
   */
  /**
   * One sum per (range, part) at a time, kept a moment: the fields of one GraphQL query (`total`
   * and each `top`) ask for the same sums, and adding up a day of addresses is most of the work.
   */
  private readonly sums = new Map<string, { at: number; sum: Promise<unknown> }>();

  private shared<T>(key: string, compute: () => Promise<T>): Promise<T> {
    const now = this.o.now?.() ?? Date.now();
    const ttl = this.o.cacheMs === 0 ? 0 : SUM_REUSE_MS;
    const hit = this.sums.get(key);
    if (hit && now - hit.at < ttl) return hit.sum as Promise<T>;
    const sum = compute();
    if (ttl > 0) {
      if (this.sums.size >= 64) this.sums.clear();
      this.sums.set(key, { at: now, sum });
      sum.catch(() => this.sums.delete(key));
    }
    return sum;
  }

  async totals(env: EnvId, from: Date, to: Date, withDimensions = false): Promise<RollupTotals | null> {
    return this.shared(`t|${env}|${from.getTime()}|${to.getTime()}|${withDimensions}`, () =>
      this.sumTotals(env, from, to, withDimensions),
    );
  }

  private async sumTotals(
    env: EnvId,
    from: Date,
    to: Date,
    withDimensions: boolean,
  ): Promise<RollupTotals | null> {
    const plan = await this.planFrom(env, sinceId(env), from, to);
    if (!plan) return null;
    const docs = await this.docs(plan);
    const sum: RollupTotals = { total: 0, actions: new Map(), signals: new Map(), ...emptyDimensions() };
    for (const d of docs.values()) {
      sum.total += d.n ?? 0;
      for (const [k, n] of Object.entries(d.a ?? {}))
        add(sum.actions, k === NO_ACTION ? null : (k as Action), n);
      for (const [k, n] of Object.entries(d.s ?? {})) add(sum.signals, fromFieldName(k), n);
    }
    if (withDimensions) await this.addDimensionsOf(sum, env, plan, ALL, docs);
    return sum;
  }

  /**
   * The sums over [from, to) of the events whose verdict was `action`, or null when rollups cannot
   * answer for that range exactly (as for `totals`, but from when they began counting per verdict).
   */
  async totalsOf(
    env: EnvId,
    action: Action,
    from: Date,
    to: Date,
    withDimensions = false,
  ): Promise<RollupActionTotals | null> {
    return this.shared(`a|${env}|${action}|${from.getTime()}|${to.getTime()}|${withDimensions}`, () =>
      this.sumTotalsOf(env, action, from, to, withDimensions),
    );
  }

  private async sumTotalsOf(
    env: EnvId,
    action: Action,
    from: Date,
    to: Date,
    withDimensions: boolean,
  ): Promise<RollupActionTotals | null> {
    const plan = await this.planFrom(env, sinceByActionId(env), from, to);
    if (!plan) return null;
    const docs = await this.docs(plan);
    const sum: RollupActionTotals = { total: 0, ...emptyDimensions() };
    for (const d of docs.values()) sum.total += d.a?.[action] ?? 0;
    if (withDimensions) await this.addDimensionsOf(sum, env, plan, action, docs);
    return sum;
  }

  /** Buckets of `bucketMs` (an hour or a day, UTC) over [from, to), or null as for `totals`. */
  async series(env: EnvId, from: Date, to: Date, bucketMs: number): Promise<RollupBucket[] | null> {
    const plan = await this.planFrom(env, sinceId(env), from, to);
    if (!plan) return null;
    const docs = await this.docs(plan);
    const buckets = new Map<number, RollupBucket>();
    for (let b = Math.floor(from.getTime() / bucketMs) * bucketMs; b < to.getTime(); b += bucketMs) {
      buckets.set(b, { start: new Date(b), total: 0, actions: new Map(), signals: new Map() });
    }
    for (const p of plan) {
      const d = docs.get(p.id);
      const b = buckets.get(Math.floor(p.start / bucketMs) * bucketMs);
      if (!d || !b) continue;
      b.total += d.n ?? 0;
      for (const [k, n] of Object.entries(d.a ?? {}))
        add(b.actions, k === NO_ACTION ? null : (k as Action), n);
      for (const [k, n] of Object.entries(d.s ?? {})) add(b.signals, fromFieldName(k), n);
    }
    return [...buckets.values()];
  }
}

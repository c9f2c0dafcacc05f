/**
 * Event keys: where the embedded database finds the events of a value shared by many events
 * (a verdict, a signal, a policy, a country, an ASN, an event name).
 *
 * Rampart's FerretDB build serves a non-unique index on top-level fields (patch 0009), and every
 * index costs every event insert: one per dashboard filter would make the hot path pay for ten.
 * The high-cardinality filters (user, device, address, /24, e-mail) get such an index on the
 * events themselves (src/store/queries.ts). The values above instead gather in memory, per value
 * and minute of the event's time, and go to the database every `pushEveryMs` (5 s) as one
 * document per value: a few hundred small inserts a minute at any event rate, on a collection
 * with one index (k, t, _id). The values are pushed a fifth at a time, a fifth of `pushEveryMs`
 * apart (each in its turn, by a hash of its key and minute), so that each still goes every
 * `pushEveryMs` but the database never takes them all in one flush: pushed together, the ~1,300
 * documents of 5 s at ~900 events/s made one flush of ~400 ms, long enough for the verdicts'
 * changes waiting behind it to age past the admission gate's mark, which then held new verdicts.
 * A search by such a value reads these documents newest minute first and fetches the events by
 * `_id` lists.
 *
 * A document holds the event ids with their times (milliseconds), both in arrival order; a minute
 * of a value may span several documents (pushes, instances), which a reader merges. Only ids: no
 * personal data, and a purged or expired event is simply not found any more.
 *
 * Keys start when this version first records an event of the environment (`since`, a minute
 * boundary): older events are searched by time instead (the planner in embedded-search.ts). An
 * environment created by a version that keeps keys has every event's keys: its creation marks it
 * so (`complete`, markKeysComplete), and a search by such a value then reads its keys alone,
 * whatever the events' times, so that a value few events have, or none, is answered from a few
 * key documents instead of reading the events.
 *
 * On MongoDB nothing is written here: its multikey and compound indexes serve these filters.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import type { EnvId, StoredEvent } from '../core/model';
import type { SortKey } from '../core/queries/model';
import type { IndexSpec } from './database';
import { idOf } from './ids';
import { delta } from './state/delta';
import type { StateLayer } from './state/layer';
import type { AnalystGate } from './analyst-gate';
import type { StoreDeps } from './deps';

export const EVENT_KEYS = 'event_keys';
export const eventKeyIndexes: IndexSpec[] = [
  {
    collection: EVENT_KEYS,
    indexes: [],
    embeddedOnly: [{ key: { k: 1, t: -1, _id: -1 }, name: 'q_key_time' }],
  },
];

/** The event fields searched through keys. */
export type KeyDimension = 'name' | 'action' | 'signal' | 'policy' | 'country' | 'asn';

const MINUTE = 60_000;
/** Most ids one document holds: a value past it in one push is split over several documents. */
const MAX_IDS_PER_DOC = 10_000;
/** Key documents read per round of a search (each up to MAX_IDS_PER_DOC ids). */
const DOCS_PER_READ = 16;

export interface EventKeyDoc {
  _id: string;
  envId: EnvId;
  /** The environment, dimension and value (keyOf). */
  k: string;
  /** The minute of the events' times. */
  t: Date;
  /** Event times (ms) and ids, pairwise. */
  at: number[];
  ids: string[];
}

export const keyOf = (env: EnvId, dim: KeyDimension, value: string): string => idOf(env, dim, value);
const sinceId = (env: EnvId) => idOf(env, 'keys-since');
/** Present when every event of the environment went through the key writers (markKeysComplete). */
const completeId = (env: EnvId) => idOf(env, 'keys-complete');

/** The keys an event is found by. */
export function keysOfEvent(e: StoredEvent): [KeyDimension, string][] {
  const keys: [KeyDimension, string][] = [];
  eachKeyOf(e, (dim, value) => keys.push([dim, value]));
  return keys;
}

/** Each key an event is found by, in keysOfEvent's order, without a list of them. */
function eachKeyOf(e: StoredEvent, each: (dim: KeyDimension, value: string) => void): void {
  each('name', e.name);
  if (e.action) each('action', e.action);
  const signals = e.signals;
  // Each signal once (a list of a few: no set for it).
  for (let i = 0; i < signals.length; i++)
    if (signals.indexOf(signals[i] as string) === i) each('signal', signals[i] as string);
  if (e.policy?.id) each('policy', e.policy.id);
  if (e.country) each('country', e.country);
  if (e.asn !== null && e.asn !== undefined) each('asn', String(e.asn));
}

interface Pending {
  envId: EnvId;
  k: string;
  t: number;
  at: number[];
  ids: string[];
  /** Its place in the batch (`<k>|<t>`). */
  slot: string;
  /** Its turn among the batch's SHARDS (see `take`). */
  shard: number;
}

/** How many turns a batch's documents are taken in (see EventKeyWriter). */
export const SHARDS = 5;

/** A slot's turn: FNV-1a of its text, modulo SHARDS (spread evenly, the same in every run). */
function shardOf(slot: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < slot.length; i++) h = Math.imul(h ^ slot.charCodeAt(i), 0x01000193);
  return (h >>> 0) % SHARDS;
}

/**
 * Gathers the keys of a stream of events and turns them into documents: one per value and
 * minute, split past MAX_IDS_PER_DOC. `tag` makes the ids unique per writer.
 */
export class EventKeyBatch {
  private pending = new Map<string, Pending>();
  private seq = 0;
  constructor(private readonly tag: string = randomBytes(5).toString('hex')) {}

  get size(): number {
    return this.pending.size;
  }

  /**
   * The latest pending document of each environment, dimension and value (the values of most
   * events recur: a verdict, a country), found without building its key and slot again. An index
   * into `pending`, which decides: used only while its document is there and of the event's minute.
   */
  private latest = new Map<EnvId, Map<KeyDimension, Map<string, Pending>>>();

  /** Adds the event; returns the documents that reached their bound. */
  add(e: StoredEvent): EventKeyDoc[] {
    const at = e.occurredAt.getTime();
    const minute = Math.floor(at / MINUTE) * MINUTE;
    let full: EventKeyDoc[] | undefined;
    let byDim = this.latest.get(e.envId);
    if (!byDim) {
      byDim = new Map();
      this.latest.set(e.envId, byDim);
    }
    const latest = byDim;
    eachKeyOf(e, (dim, value) => {
      let byValue = latest.get(dim);
      if (!byValue) {
        byValue = new Map();
        latest.set(dim, byValue);
      }
      let p = byValue.get(value);
      if (!p || p.t !== minute || p.ids.length === 0) {
        const k = keyOf(e.envId, dim, value);
        const slot = `${k}|${minute}`;
        p = this.pending.get(slot);
        if (!p) {
          p = { envId: e.envId, k, t: minute, at: [], ids: [], slot, shard: shardOf(slot) };
          this.pending.set(slot, p);
        }
        byValue.set(value, p);
      }
      p.at.push(at);
      p.ids.push(e.id);
      if (p.ids.length >= MAX_IDS_PER_DOC) {
        (full ??= []).push(this.doc(p));
        this.pending.delete(p.slot);
        byValue.delete(value);
      }
    });
    return full ?? [];
  }

  /**
   * The documents gathered so far whose turn is `shard` (0 to SHARDS - 1), or every one (the
   * batch is then empty). A document taken is done: the next event of its value and minute
   * starts another.
   */
  take(shard?: number): EventKeyDoc[] {
    if (shard === undefined) {
      const docs = [...this.pending.values()].map((p) => this.doc(p));
      this.pending = new Map();
      this.latest = new Map();
      return docs;
    }
    const docs: EventKeyDoc[] = [];
    for (const [slot, p] of this.pending) {
      if (p.shard !== shard) continue;
      docs.push(this.doc(p));
      this.pending.delete(slot);
      // `latest` may still point at it: emptied, it sends the next event to a new document.
      p.at = [];
      p.ids = [];
    }
    // The index forgets the values of the last turns (it holds every value seen since).
    if (shard === SHARDS - 1) this.latest = new Map();
    return docs;
  }

  private doc(p: Pending): EventKeyDoc {
    this.seq += 1;
    return {
      _id: `${p.k}:${p.t}:${this.tag}:${this.seq}`,
      envId: p.envId,
      k: p.k,
      t: new Date(p.t),
      at: p.at,
      ids: p.ids,
    };
  }
}

/** How often an EventKeyWriter hands its keys to the state layer by default. */
export const KEYS_PUSH_EVERY_MS = 5_000;

/**
 * Records every stored event's keys, behind the answer: documents go to the state layer's insert
 * queue every `pushEveryMs`, a fifth of them every fifth of it (the batch's turns). A `kill -9`
 * loses up to that long of keys (never an event: those events are still found by time, user,
 * device, address and e-mail); `drain()` at shutdown hands everything over first.
 */
export class EventKeyWriter {
  private readonly batch = new EventKeyBatch();
  private readonly started = new Set<EnvId>();
  private timer: NodeJS.Timeout | null = null;
  /** The batch's turn taken next. */
  private turn = 0;

  private readonly state: StateLayer;
  private readonly pushEveryMs: number;
  /** `pushEveryMs`: how often keys go to the state layer (default KEYS_PUSH_EVERY_MS). */
  constructor({ state, pushEveryMs }: { state: StateLayer; pushEveryMs?: number }) {
    this.state = state;
    this.pushEveryMs = pushEveryMs ?? KEYS_PUSH_EVERY_MS;
    state.addGatherer(() => this.drain());
  }

  record(e: StoredEvent): void {
    if (!this.started.has(e.envId)) {
      this.started.add(e.envId);
      // The first whole minute this instance records: keys are complete from there on.
      const since = new Date(Math.ceil(e.receivedAt.getTime() / MINUTE) * MINUTE);
      this.state.apply(
        EVENT_KEYS,
        sinceId(e.envId),
        delta().setOnInsert(['envId'], e.envId).min(['since'], since),
      );
    }
    for (const d of this.batch.add(e)) this.state.insert(EVENT_KEYS, d);
    this.timer ??= this.schedule();
  }

  private schedule(): NodeJS.Timeout {
    return setTimeout(() => this.push(), this.pushEveryMs / SHARDS).unref();
  }

  /** Hand one turn of the gathered keys to the state layer; the next turn follows while any are left. */
  private push(): void {
    for (const d of this.batch.take(this.turn)) this.state.insert(EVENT_KEYS, d);
    this.turn = (this.turn + 1) % SHARDS;
    this.timer = this.batch.size > 0 ? this.schedule() : null;
  }

  /** Hand every gathered key to the state layer now (also on every explicit flush of it). */
  drain(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const d of this.batch.take()) this.state.insert(EVENT_KEYS, d);
  }
}

/** Marks `since` for an environment whose events were loaded directly (the bench). */
export async function markKeysSince(db: Db, env: EnvId, since: Date): Promise<void> {
  await db
    .collection<{ _id: string; envId: EnvId; since: Date }>(EVENT_KEYS)
    .updateOne({ _id: sinceId(env) }, { $setOnInsert: { envId: env }, $min: { since } }, { upsert: true });
}

/**
 * Marks that every event of an environment has its keys: written when the environment is created
 * (before any of its events), or by a loader that fed all of them to the key writers (the bench).
 */
export async function markKeysComplete(db: Db, env: EnvId): Promise<void> {
  await db
    .collection<{ _id: string; envId: EnvId }>(EVENT_KEYS)
    .updateOne({ _id: completeId(env) }, { $setOnInsert: { envId: env } }, { upsert: true });
}

/** Which of an environment's events have keys. */
export interface KeyCoverage {
  /** Events received from then on have keys (null: none recorded yet). */
  since: Date | null;
  /** Every event of the environment has keys, whenever it happened. */
  complete: boolean;
}

/** One event found through its keys: its time and id. */
export interface KeyedEvent {
  at: number;
  id: string;
}

/** Newest first: (time desc, id desc), the events' keyset order. */
const newestFirst = (a: KeyedEvent, b: KeyedEvent): number =>
  b.at - a.at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/** Reads the key documents (the analysts' connection, through their gate). */
export class EventKeyReader {
  private readonly db: Db;
  private readonly gate: AnalystGate;
  private readonly maxTimeMS: number;
  constructor({ db, gate, maxTimeMS }: StoreDeps & { gate: AnalystGate; maxTimeMS: number }) {
    this.db = db;
    this.gate = gate;
    this.maxTimeMS = maxTimeMS;
  }

  private get col() {
    return this.db.collection<EventKeyDoc>(EVENT_KEYS);
  }

  /** When keys began for the environment, and whether every one of its events has them (one read by `_id`). */
  async coverage(env: EnvId): Promise<KeyCoverage> {
    const ids = [sinceId(env), completeId(env)];
    const docs = await this.gate.run(() =>
      this.db
        .collection<{ _id: string; since?: Date }>(EVENT_KEYS)
        .find({ _id: { $in: ids } }, { maxTimeMS: this.maxTimeMS })
        .toArray(),
    );
    const since = docs.find((d) => d._id === ids[0])?.since;
    return { since: since instanceof Date ? since : null, complete: docs.some((d) => d._id === ids[1]) };
  }

  /**
   * The events of a value, newest first, strictly after `after` in keyset order and within
   * [from, to), one minute at a time: each yield is a whole minute's events, sorted.
   */
  async *events(
    env: EnvId,
    dim: KeyDimension,
    value: string,
    range: { from?: Date; to?: Date },
    after: SortKey | null,
  ): AsyncGenerator<KeyedEvent[]> {
    const k = keyOf(env, dim, value);
    const before = Math.min(
      after ? after.at.getTime() + 1 : Infinity,
      range.to ? range.to.getTime() : Infinity,
    );
    const from = range.from ? range.from.getTime() : -Infinity;
    const t: { $lte?: Date; $gte?: Date } = {};
    if (Number.isFinite(before)) t.$lte = new Date(Math.floor((before - 1) / MINUTE) * MINUTE);
    if (Number.isFinite(from)) t.$gte = new Date(Math.floor(from / MINUTE) * MINUTE);
    const keep = (e: KeyedEvent) =>
      e.at >= from &&
      (range.to === undefined || e.at < range.to.getTime()) &&
      (!after || e.at < after.at.getTime() || (e.at === after.at.getTime() && e.id < after.id));
    let minute: number | null = null;
    let gathered: KeyedEvent[] = [];
    let cursor: { t: Date; id: string } | null = null;
    const finish = () => gathered.filter(keep).sort(newestFirst);
    for (;;) {
      const filter = {
        k,
        ...(Object.keys(t).length > 0 ? { t } : {}),
        ...(cursor ? { $or: [{ t: { $lt: cursor.t } }, { t: cursor.t, _id: { $lt: cursor.id } }] } : {}),
      };
      const docs = await this.gate.run(() =>
        this.col
          .find(filter)
          .sort({ t: -1, _id: -1 })
          .limit(DOCS_PER_READ)
          .maxTimeMS(this.maxTimeMS)
          .toArray(),
      );
      for (const d of docs) {
        const m = d.t.getTime();
        if (minute !== null && m !== minute) {
          const done = finish();
          gathered = [];
          if (done.length > 0) yield done;
        }
        minute = m;
        for (let i = 0; i < d.ids.length; i++)
          gathered.push({ at: d.at[i] as number, id: d.ids[i] as string });
      }
      if (docs.length < DOCS_PER_READ) break;
      const last = docs[docs.length - 1] as EventKeyDoc;
      cursor = { t: last.t, id: last._id };
    }
    const done = finish();
    if (done.length > 0) yield done;
  }
}

/**
 * Stored events and the track debugger. Writes are queued on the state layer and written behind
 * in batches; `append` resolves once the document is written, so callers on the hot path need
 * not wait.
 */
import type { Db } from 'mongodb';
import type { EventContext, RejectedPayload, Signals, StoredEvent } from '../core/model';
import type { DebuggerStore, EventStore } from '../core/ports';
import type { IndexSpec } from './database';
import { fromJson, toJson } from './ids';
import type { StateLayer } from './state/layer';
import type { RollupWriter } from './rollups';
import type { EventKeyWriter } from './event-keys';
import type { StateStoreDeps } from './deps';

/** The /24 prefix of an IPv4 address ("81.2.69."), or null. */
export function netOf(ip: string | null): string | null {
  if (ip === null) return null;
  const m = /^(\d{1,3}\.\d{1,3}\.\d{1,3}\.)\d{1,3}$/.exec(ip);
  return m ? (m[1] as string) : null;
}

export interface EventDoc extends Omit<
  StoredEvent,
  'id' | 'context' | 'userTraits' | 'properties' | 'signalDetails'
> {
  _id: string;
  /** The /24 of an IPv4 address ("81.2.69."), which the embedded database's network index reads. */
  net?: string;
  context: string;
  userTraits: string;
  properties: string;
  signalDetails: string;
}
export interface DebugDoc extends Omit<RejectedPayload, 'id' | 'fields'> {
  _id: string;
  fields: string;
}

export const eventIndexes: IndexSpec[] = [
  {
    collection: 'events',
    // The (env, …, time, _id) indexes that serve these reads are declared with the dashboard
    // queries in src/store/queries.ts.
    indexes: [],
  },
];

/**
 * The stored form of an event. Its context is kept without the address and the user agent, which
 * the event holds already (every stored byte is paid on every event: about a tenth less to write).
 */
export const toEventDoc = (e: StoredEvent): EventDoc => {
  const { id, context, userTraits, properties, signalDetails, ...rest } = e;
  const { ip: _ip, userAgent: _ua, ...ctx } = context;
  const net = netOf(rest.ip);
  return {
    _id: id,
    ...rest,
    ...(net !== null ? { net } : {}),
    context: toJson(ctx),
    userTraits: toJson(userTraits),
    properties: toJson(properties),
    signalDetails: toJson(signalDetails),
  };
};
export const fromEventDoc = (d: EventDoc): StoredEvent => {
  const { _id, context, userTraits, properties, signalDetails, net: _net, ...rest } = d;
  const ctx = fromJson<Partial<EventContext>>(context, {});
  return {
    id: _id,
    ...rest,
    degraded: rest.degraded === true,
    context: {
      headers: ctx.headers ?? {},
      fingerprint: ctx.fingerprint ?? null,
      extra: ctx.extra ?? {},
      ip: ctx.ip ?? rest.ip,
      userAgent: ctx.userAgent ?? rest.userAgent,
    },
    userTraits: fromJson(userTraits, {}),
    properties: fromJson(properties, {}),
    signalDetails: fromJson<Signals>(signalDetails, {}),
  };
};

export const EVENTS = 'events';
export const DEBUGGER = 'debugger';

export interface EventStoreDeps extends StateStoreDeps {
  /** Counts every event into the overview's rollups too (src/store/rollups.ts). */
  rollups?: RollupWriter;
  /** Records its keys for the embedded database's searches (src/store/event-keys.ts). */
  keys?: EventKeyWriter;
}

/**
 * Events are written behind the answer through the state layer's insert queue (batched
 * `insertMany`, retried until written); `append` resolves once the event is in the database.
 */
export class MongoEventStore implements EventStore {
  private readonly db: Db;
  private readonly state: StateLayer;
  private readonly rollups?: RollupWriter;
  private readonly keys?: EventKeyWriter;
  constructor(deps: EventStoreDeps) {
    this.db = deps.db;
    this.state = deps.state;
    this.rollups = deps.rollups;
    this.keys = deps.keys;
  }

  private get col() {
    return this.db.collection<EventDoc>(EVENTS);
  }

  append(event: StoredEvent): Promise<void> {
    this.rollups?.record(event);
    this.keys?.record(event);
    return new Promise((resolve) => this.state.insert(EVENTS, toEventDoc(event), () => resolve()));
  }
}

export const rejectedFromDoc = ({ _id, fields, ...rest }: DebugDoc): RejectedPayload => ({
  id: _id,
  ...rest,
  fields: fromJson(fields, []),
});

export class MongoDebuggerStore implements DebuggerStore {
  private readonly db: Db;
  private readonly state: StateLayer;
  constructor({ db, state }: StateStoreDeps) {
    this.db = db;
    this.state = state;
  }
  private get col() {
    return this.db.collection<DebugDoc>(DEBUGGER);
  }
  /** Queued behind the answer like events; resolves once written. */
  append(e: RejectedPayload): Promise<void> {
    const { id, fields, ...rest } = e;
    return new Promise((resolve) =>
      this.state.insert(DEBUGGER, { _id: id, ...rest, fields: toJson(fields) }, () => resolve()),
    );
  }
}

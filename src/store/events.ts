/**
 * Stored events and the track debugger. Event writes are batched: `append` queues a document and
 * resolves once the batch holding it is written, so callers on the hot path need not wait.
 */
import type { Db } from 'mongodb';
import type { EnvId, EventContext, RejectedPayload, Signals, StoredEvent } from '../core/model';
import type { DebuggerStore, EventStore } from '../core/ports';
import type { IndexSpec } from './database';
import { fromJson, toJson } from './ids';

export interface EventDoc extends Omit<StoredEvent, 'id' | 'context' | 'userTraits' | 'properties' | 'signalDetails'> {
  _id: string;
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

export const toEventDoc = (e: StoredEvent): EventDoc => {
  const { id, context, userTraits, properties, signalDetails, ...rest } = e;
  return { _id: id, ...rest, context: toJson(context), userTraits: toJson(userTraits), properties: toJson(properties), signalDetails: toJson(signalDetails) };
};
export const fromEventDoc = (d: EventDoc): StoredEvent => {
  const { _id, context, userTraits, properties, signalDetails, ...rest } = d;
  return {
    id: _id,
    ...rest,
    context: fromJson<EventContext>(context, { ip: null, headers: {}, userAgent: '', fingerprint: null, extra: {} }),
    userTraits: fromJson(userTraits, {}),
    properties: fromJson(properties, {}),
    signalDetails: fromJson<Signals>(signalDetails, {}),
  };
};

interface Pending {
  doc: EventDoc;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class MongoEventStore implements EventStore {
  private buffer: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private inflight: Promise<void> = Promise.resolve();

  constructor(private readonly db: Db, private readonly opts: { maxBatch: number; maxDelayMs: number } = { maxBatch: 500, maxDelayMs: 20 }) {}

  private get col() {
    return this.db.collection<EventDoc>('events');
  }

  append(event: StoredEvent): Promise<void> {
    return new Promise((resolve, reject) => {
      this.buffer.push({ doc: toEventDoc(event), resolve, reject });
      if (this.buffer.length >= this.opts.maxBatch) void this.flush();
      else if (!this.timer) this.timer = setTimeout(() => void this.flush(), this.opts.maxDelayMs);
    });
  }

  /** Write everything queued so far; resolves when it is written. */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const batch = this.buffer;
    this.buffer = [];
    const write = this.inflight.then(async () => {
      if (batch.length === 0) return;
      try {
        await this.col.insertMany(batch.map((p) => p.doc), { ordered: false });
        batch.forEach((p) => p.resolve());
      } catch (err) {
        batch.forEach((p) => p.reject(err));
      }
    });
    this.inflight = write;
    return write;
  }

  async listForUser(env: EnvId, userId: string, limit: number): Promise<StoredEvent[]> {
    const docs = await this.col.find({ envId: env, userId }).sort({ occurredAt: -1 }).limit(limit).toArray();
    return docs.map(fromEventDoc);
  }
}

export const rejectedFromDoc = ({ _id, fields, ...rest }: DebugDoc): RejectedPayload => ({ id: _id, ...rest, fields: fromJson(fields, []) });

export class MongoDebuggerStore implements DebuggerStore {
  constructor(private readonly db: Db) {}
  private get col() {
    return this.db.collection<DebugDoc>('debugger');
  }
  async append(e: RejectedPayload): Promise<void> {
    const { id, fields, ...rest } = e;
    await this.col.insertOne({ _id: id, ...rest, fields: toJson(fields) });
  }
  async list(env: EnvId, limit: number): Promise<RejectedPayload[]> {
    const docs = await this.col.find({ envId: env }).sort({ receivedAt: -1 }).limit(limit).toArray();
    return docs.map(rejectedFromDoc);
  }
}

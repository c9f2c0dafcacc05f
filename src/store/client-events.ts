/**
 * App events (core/client/events.ts): one document per event, written behind, kept a week for
 * investigation and swept (FerretDB 1.24 has no TTL indexes), exported and purged with their user.
 */
import type { Db } from 'mongodb';
import type { ClientEvent, ClientEventSink } from '../core/client/events';
import { CLIENT_EVENT_KEEP_MS } from '../core/client/events';
import { sweepExpired, type IndexSpec } from './database';
import type { StateLayer } from './state/layer';
import type { StateStoreDeps } from './deps';

export const CLIENT_EVENTS = 'client_events';

export interface ClientEventDoc extends Omit<ClientEvent, 'id'> {
  _id: string;
  expiresAt: Date;
}

export const clientEventIndexes: IndexSpec[] = [
  {
    collection: CLIENT_EVENTS,
    indexes: [
      { key: { expiresAt: 1 }, name: 'expires' },
      { key: { envId: 1, userId: 1, at: 1 }, name: 'user' },
    ],
  },
];

export class StateClientEventStore implements ClientEventSink {
  private readonly db: Db;
  private readonly state: StateLayer;
  constructor({ db, state }: StateStoreDeps) {
    this.db = db;
    this.state = state;
  }

  append(events: readonly ClientEvent[]): void {
    for (const { id, ...rest } of events)
      this.state.insert(CLIENT_EVENTS, {
        _id: id,
        ...rest,
        expiresAt: new Date(rest.receivedAt.getTime() + CLIENT_EVENT_KEEP_MS),
      });
  }

  /** Delete app events older than a week (all tenants: a maintenance task). */
  async sweep(now: Date): Promise<number> {
    return sweepExpired(this.db, CLIENT_EVENTS, now);
  }
}

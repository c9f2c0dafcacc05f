/**
 * What a test reads back from the database, and how it seeds events: reads of the events and
 * the rejected-payload debugger straight from their collections (production reads them through
 * the dashboards' queries, never by user like this), and the event write path (the events, their
 * rollups and keys, written behind through the state layer) for seeding.
 */
import type { Db } from 'mongodb';
import type { EnvId, RejectedPayload, StoredEvent } from '../../src/core/model';
import type { EventStore } from '../../src/core/ports';
import {
  DEBUGGER,
  EVENTS,
  fromEventDoc,
  MongoEventStore,
  rejectedFromDoc,
  type DebugDoc,
  type EventDoc,
} from '../../src/store/events';
import { RollupWriter } from '../../src/store/rollups';
import { EventKeyWriter } from '../../src/store/event-keys';
import { serverKind } from '../../src/store/server-kind';
import type { StateLayer } from '../../src/store/state/layer';

/** A user's stored events, newest first. */
export async function eventsOfUser(
  db: Db,
  env: EnvId,
  userId: string,
  limit: number,
): Promise<StoredEvent[]> {
  const docs = await db
    .collection<EventDoc>(EVENTS)
    .find({ envId: env, userId })
    .sort({ occurredAt: -1 })
    .limit(limit)
    .toArray();
  return docs.map(fromEventDoc);
}

/** The environment's rejected payloads (the debugger), newest first. */
export async function debuggerEntries(db: Db, env: EnvId, limit: number): Promise<RejectedPayload[]> {
  const docs = await db
    .collection<DebugDoc>(DEBUGGER)
    .find({ envId: env })
    .sort({ receivedAt: -1 })
    .limit(limit)
    .toArray();
  return docs.map(rejectedFromDoc);
}

/**
 * Reads of a running app's stored events and debugger (`flush` first writes everything queued,
 * as an acknowledged request has it written within the state layer's bound).
 */
export function storedOf(app: { built: { state: StateLayer }; database: { db: Db } }) {
  const db = app.database.db;
  return {
    flush: () => app.built.state.flush(),
    eventsOfUser: (env: EnvId, userId: string, limit: number) => eventsOfUser(db, env, userId, limit),
    debugger: (env: EnvId, limit: number) => debuggerEntries(db, env, limit),
  };
}

/**
 * The event write path on `state` as the service builds it (rollups, and event keys on
 * Rampart's FerretDB build), as a second instance would write: for seeding events a test did
 * not send.
 */
export async function eventWriter(db: Db, state: StateLayer): Promise<EventStore> {
  const kind = await serverKind(db);
  return new MongoEventStore({
    db,
    state,
    rollups: new RollupWriter({ state }),
    keys: kind.indexPushdown ? new EventKeyWriter({ state }) : undefined,
  });
}

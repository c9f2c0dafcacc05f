/**
 * What browsers showed the collector (core/client), one document per token issued, written
 * behind and kept for a week for investigation, then swept (FerretDB 1.24 has no TTL indexes).
 */
import type { Db } from 'mongodb';
import type { ClientObservation, ClientObservationSink } from '../core/client/service';
import { sweepExpired, type IndexSpec } from './database';
import type { StateLayer } from './state/layer';
import type { StateStoreDeps } from './deps';

export const CLIENT_OBSERVATIONS = 'client_observations';
const KEEP_MS = 7 * 86_400_000;

export const clientObservationIndexes: IndexSpec[] = [
  { collection: CLIENT_OBSERVATIONS, indexes: [{ key: { expiresAt: 1 }, name: 'expires' }] },
];

export class StateClientObservationStore implements ClientObservationSink {
  private readonly db: Db;
  private readonly state: StateLayer;
  constructor({ db, state }: StateStoreDeps) {
    this.db = db;
    this.state = state;
  }

  record(o: ClientObservation): void {
    const { id, ...rest } = o;
    this.state.insert(CLIENT_OBSERVATIONS, {
      _id: id,
      ...rest,
      expiresAt: new Date(o.at.getTime() + KEEP_MS),
    });
  }

  /** Delete observations older than a week (all tenants: a maintenance task). */
  async sweep(now: Date): Promise<number> {
    return sweepExpired(this.db, CLIENT_OBSERVATIONS, now);
  }
}

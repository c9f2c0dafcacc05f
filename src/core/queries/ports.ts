/**
 * What the read side needs from storage: searches with keyset pages, and batched look-ups that
 * answer many parents in one round trip (so a dashboard page costs a constant number of queries).
 * Users and their devices come from the user state (UserStateStore), not from here.
 * No driver types; every method takes the EnvId first.
 */
import type { Action, Device, EnvId, RejectedPayload, StoredEvent } from '../model';
import type { DeviceFilter, EventFilter, Found, RejectedFilter, SortKey } from './model';

/** Per-user counts of events by verdict and by signal. */
export interface UserActivity {
  total: number;
  /** The counts are of the newest events only (the store reads a bounded number). */
  partial?: boolean;
  actions: { action: Action | null; count: number }[];
  signals: { signal: string; count: number }[];
}

export interface QueryStore {
  /**
   * Events matching `filter`, newest first, strictly after `after`, at most `limit`. A search may
   * stop early (Found.stoppedAt) rather than read without bound; a filter no index of the store
   * serves is refused (InvalidParameters naming the filters that are).
   */
  searchEvents(
    env: EnvId,
    filter: EventFilter,
    limit: number,
    after: SortKey | null,
  ): Promise<Found<StoredEvent>>;
  eventById(env: EnvId, id: string): Promise<StoredEvent | null>;
  /** Devices matching `filter`, most recently seen first, strictly after `after`, at most `limit`. */
  searchDevices(
    env: EnvId,
    filter: DeviceFilter,
    limit: number,
    after: SortKey | null,
  ): Promise<Found<Device>>;
  /** Rejected payloads, newest first. */
  searchRejected(
    env: EnvId,
    filter: RejectedFilter,
    limit: number,
    after: SortKey | null,
  ): Promise<RejectedPayload[]>;
  /** The newest `perKey` events of each key (device token or user id), newest first. */
  latestEvents(
    env: EnvId,
    by: 'deviceToken' | 'userId',
    keys: readonly string[],
    perKey: number,
  ): Promise<Map<string, StoredEvent[]>>;
  /** Counts of each user's events by verdict and signal. */
  activityOfUsers(env: EnvId, userIds: readonly string[]): Promise<Map<string, UserActivity>>;
}

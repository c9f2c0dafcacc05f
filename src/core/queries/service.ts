/**
 * Read-side use cases for dashboards: event, device and debugger searches with keyset pages, and
 * the batched look-ups a dashboard walks (users, a user's devices, latest events, risk
 * summaries), each answering many parents with a constant number of store calls.
 */
import type { Device, EnvId, RejectedPayload, RiskLevel, StoredEvent, UserProfile } from '../model';
import { riskLevel } from '../scoring/signals';
import { reviewState } from '../devices/service';
import type { DeviceFilter, EventFilter, Page, PageRequest, RejectedFilter } from './model';
import { decodeCursor, encodeCursor, pageSize, toFoundPage, toPage } from './pagination';
import type { QueryStore, UserActivity } from './ports';
import type { UserStateStore } from '../ports';
import { validateDeviceFilter, validateEventFilter, validateRejectedFilter } from './validate';

export const DEFAULT_PAGE_SIZE = 20;
/** Most devices listed per user (as the REST device list). */
export const MAX_DEVICES_PER_USER = 1000;

export interface UserRiskSummary {
  deviceCount: number;
  approvedDevices: number;
  reportedDevices: number;
  unreviewedDevices: number;
  /** 0-100; reported devices are at 100. */
  highestDeviceRisk: number;
  level: RiskLevel;
  eventCount: number;
  /** The counts are of the user's newest events only. */
  countsPartial: boolean;
  actions: UserActivity['actions'];
  /** Most frequent first, at most 10. */
  topSignals: UserActivity['signals'];
}

export const eventCursor = (e: StoredEvent): string => encodeCursor('event', { at: e.occurredAt, id: e.id });
export const deviceCursor = (d: Device): string => encodeCursor('device', { at: d.lastSeenAt, id: d.token });
export const rejectedCursor = (r: RejectedPayload): string =>
  encodeCursor('rejected', { at: r.receivedAt, id: r.id });

/** Summarise a user's risk from their devices and event counts (pure). */
export function summariseRisk(
  devices: readonly Device[],
  activity: UserActivity | undefined,
): UserRiskSummary {
  const states = devices.map(reviewState);
  const highest = devices.reduce((m, d) => Math.max(m, d.riskScore), 0);
  return {
    deviceCount: devices.length,
    approvedDevices: states.filter((s) => s === 'approved').length,
    reportedDevices: states.filter((s) => s === 'reported').length,
    unreviewedDevices: states.filter((s) => s === 'unreviewed').length,
    highestDeviceRisk: highest,
    level: riskLevel(highest / 100),
    eventCount: activity?.total ?? 0,
    countsPartial: activity?.partial === true,
    actions: activity?.actions ?? [],
    topSignals: (activity?.signals ?? []).slice(0, 10),
  };
}

export interface QueryDeps {
  /** The analysts' reads of events, devices and rejected requests. */
  store: QueryStore;
  /** Users' states, for the summaries beside events and devices. */
  userStates: UserStateStore;
}

export class QueryService {
  private readonly store: QueryStore;
  private readonly userStates: UserStateStore;

  constructor(deps: QueryDeps) {
    this.store = deps.store;
    this.userStates = deps.userStates;
  }

  /** Events matching `filter`, newest first. */
  async events(env: EnvId, filter: EventFilter, req: PageRequest): Promise<Page<StoredEvent>> {
    validateEventFilter(filter);
    const first = pageSize(req.first, DEFAULT_PAGE_SIZE);
    const found = await this.store.searchEvents(env, filter, first + 1, decodeCursor('event', req.after));
    return toFoundPage(found, first, 'event', eventCursor);
  }

  event(env: EnvId, id: string): Promise<StoredEvent | null> {
    return this.store.eventById(env, id);
  }

  /** Devices matching `filter`, most recently seen first. */
  async devices(env: EnvId, filter: DeviceFilter, req: PageRequest): Promise<Page<Device>> {
    validateDeviceFilter(filter);
    const first = pageSize(req.first, DEFAULT_PAGE_SIZE);
    const found = await this.store.searchDevices(env, filter, first + 1, decodeCursor('device', req.after));
    // The search runs on the dashboard copy (refreshed behind the hot path, at least every ten
    // minutes); each device is shown as its user's state has it now.
    // Cursors stay those of the copy, so that paging follows the order searched.
    const page = toFoundPage(found, first, 'device', deviceCursor);
    const states = await this.userStates.loadMany(env, [...new Set(page.edges.map((e) => e.node.userId))]);
    const live = (d: Device) =>
      states.get(d.userId)?.devices.find((x) => x.fingerprintKey === d.fingerprintKey) ?? d;
    return { ...page, edges: page.edges.map((e) => ({ ...e, node: live(e.node) })) };
  }

  /** The debugger: rejected payloads, newest first. */
  async rejected(env: EnvId, filter: RejectedFilter, req: PageRequest): Promise<Page<RejectedPayload>> {
    validateRejectedFilter(filter);
    const first = pageSize(req.first, DEFAULT_PAGE_SIZE);
    const rows = await this.store.searchRejected(env, filter, first + 1, decodeCursor('rejected', req.after));
    return toPage(rows, first, rejectedCursor);
  }

  /** Profiles in the order of `userIds` (null where unknown). */
  async users(env: EnvId, userIds: readonly string[]): Promise<(UserProfile | null)[]> {
    const found = await this.userStates.loadMany(env, userIds);
    return userIds.map((id) => found.get(id)?.profile ?? null);
  }

  /** Each user's devices, most recently seen first, at most `first` each. */
  async devicesOfUsers(
    env: EnvId,
    userIds: readonly string[],
    first: number | null | undefined,
    includeRemoved: boolean,
  ): Promise<Device[][]> {
    const n = pageSize(first, 50, 'first', MAX_DEVICES_PER_USER);
    const found = await this.userStates.loadMany(env, userIds);
    return userIds.map((id) =>
      (found.get(id)?.devices ?? []).filter((d) => includeRemoved || !d.removedAt).slice(0, n),
    );
  }

  /** Each device's `first` newest events. */
  async latestEventsOfDevices(
    env: EnvId,
    tokens: readonly string[],
    first: number | null | undefined,
  ): Promise<StoredEvent[][]> {
    const n = pageSize(first, 10);
    const found = await this.store.latestEvents(env, 'deviceToken', tokens, n);
    return tokens.map((t) => found.get(t) ?? []);
  }

  /** The first page of each user's events (what `events` with a `userId` filter answers first). */
  async firstEventPageOfUsers(
    env: EnvId,
    userIds: readonly string[],
    first: number | null | undefined,
  ): Promise<Page<StoredEvent>[]> {
    const n = pageSize(first, DEFAULT_PAGE_SIZE);
    const found = await this.store.latestEvents(env, 'userId', userIds, n + 1);
    return userIds.map((id) => toPage(found.get(id) ?? [], n, eventCursor));
  }

  /** Risk summaries in the order of `userIds`. */
  async riskSummaries(env: EnvId, userIds: readonly string[]): Promise<UserRiskSummary[]> {
    const [states, activity] = await Promise.all([
      this.userStates.loadMany(env, userIds),
      this.store.activityOfUsers(env, userIds),
    ]);
    return userIds.map((id) =>
      summariseRisk(
        (states.get(id)?.devices ?? []).filter((d) => !d.removedAt),
        activity.get(id),
      ),
    );
  }
}

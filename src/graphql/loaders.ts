/**
 * DataLoaders for every relation a dashboard walks: device → user, user → devices, device →
 * latest events, user → first page of events, user → risk summary, event → device, policy →
 * revisions, policy ref → current policy. Created per request in the context factory and bound to
 * the caller's environment, so no cache outlives a request or crosses tenants.
 */
import DataLoader from 'dataloader';
import type { Device, EnvId, StoredEvent, UserProfile } from '../core/model';
import type { Policy, PolicyRevision } from '../core/policies/model';
import type { Page } from '../core/queries/model';
import type { UserRiskSummary } from '../core/queries/service';
import type { Services } from '../core/services';

export interface Loaders {
  user: DataLoader<string, UserProfile | null>;
  device: DataLoader<string, Device | null>;
  policy: DataLoader<string, Policy | null>;
  policyRevisions: DataLoader<string, PolicyRevision[]>;
  riskSummary: DataLoader<string, UserRiskSummary>;
  /** A user's devices, at most `first`. */
  userDevices(first: number | null | undefined, includeRemoved: boolean): DataLoader<string, Device[]>;
  /** A device's `first` newest events. */
  deviceEvents(first: number | null | undefined): DataLoader<string, StoredEvent[]>;
  /** The first page (of `first`) of a user's events. */
  userEventPage(first: number | null | undefined): DataLoader<string, Page<StoredEvent>>;
}

/** One loader per distinct argument set, created on first use. */
function family<A extends unknown[], K, V>(
  make: (...args: A) => DataLoader<K, V>,
): (...args: A) => DataLoader<K, V> {
  const loaders = new Map<string, DataLoader<K, V>>();
  return (...args: A) => {
    const key = JSON.stringify(args);
    let l = loaders.get(key);
    if (!l) {
      l = make(...args);
      loaders.set(key, l);
    }
    return l;
  };
}

const byKey = <T>(keys: readonly string[], items: readonly T[], keyOf: (t: T) => string): (T | null)[] => {
  const m = new Map(items.map((i) => [keyOf(i), i]));
  return keys.map((k) => m.get(k) ?? null);
};

export function createLoaders(env: EnvId, services: Services): Loaders {
  return {
    user: new DataLoader((ids: readonly string[]) => services.queries.users(env, ids)),
    // Any token a device was issued resolves to it (its first token is the one it shows).
    device: new DataLoader((tokens: readonly string[]) =>
      Promise.all(tokens.map((t) => services.read.users.byToken(env, t))),
    ),
    policy: new DataLoader(async (ids: readonly string[]) =>
      byKey(ids, await services.policies.list(env, true), (p) => p.id),
    ),
    policyRevisions: new DataLoader(async (ids: readonly string[]) => {
      const all = await services.policies.revisions(env, ids);
      return ids.map((id) => all.filter((r) => r.policyId === id));
    }),
    riskSummary: new DataLoader((ids: readonly string[]) => services.queries.riskSummaries(env, ids)),
    userDevices: family(
      (first: number | null | undefined, includeRemoved: boolean) =>
        new DataLoader((ids: readonly string[]) =>
          services.queries.devicesOfUsers(env, ids, first, includeRemoved),
        ),
    ),
    deviceEvents: family(
      (first: number | null | undefined) =>
        new DataLoader((tokens: readonly string[]) =>
          services.queries.latestEventsOfDevices(env, tokens, first),
        ),
    ),
    userEventPage: family(
      (first: number | null | undefined) =>
        new DataLoader((ids: readonly string[]) => services.queries.firstEventPageOfUsers(env, ids, first)),
    ),
  };
}

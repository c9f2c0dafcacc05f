/**
 * A large environment for the console's end-to-end test: older events of many users, written in
 * bulk (`insertMany` of a few thousand at a time, as the bench loads its environments), their keys
 * and rollups through the store's own writers on a state layer of their own that pushes in large
 * batches, then the rollups and keys marked complete from the oldest one (every event went through
 * their writers). Bulk writes keep the load's cost to a few large writes, so that it finishes in
 * a bounded number of round trips however busy the machine is. Addresses (100.64.0.0/10), users
 * (`vol-…`) and times (before the last 25 hours) are kept apart from what a test seeds itself.
 */
import type { EnvId, StoredEvent } from '../../src/core/model';
import { storedEvent } from './events';
import { EVENTS, toEventDoc, type EventDoc } from '../../src/store/events';
import { EventKeyWriter, markKeysSince } from '../../src/store/event-keys';
import { markRollupsSince, RollupWriter } from '../../src/store/rollups';
import { StateLayer } from '../../src/store/state/layer';
import type { TestApp } from './app';

const SIGNALS = [
  'new_device',
  'new_country',
  'proxy_ip',
  'multiple_accounts_per_device',
  'impossible_travel',
];
/** Events per `insertMany`. */
const CHUNK = 5_000;

/** `busyUser` (optional) is the user of 3% of the events. */
export async function appendVolume(
  app: TestApp,
  env: EnvId,
  count: number,
  o: { users?: number; busyUser?: string } = {},
): Promise<void> {
  const users = o.users ?? 5_000;
  let s = 12345;
  const r = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const now = Date.now();
  const oldest = now - 7 * 86_400_000;
  const newest = now - 25 * 3_600_000;
  const events: StoredEvent[] = [];
  for (let i = 0; i < count; i++) {
    const at = oldest + Math.floor(r() * (newest - oldest));
    const ip = `100.${64 + Math.floor(r() * 4)}.${Math.floor(r() * 256)}.${1 + Math.floor(r() * 254)}`;
    const signals = SIGNALS.filter(() => r() < 0.08);
    const action = signals.length > 1 ? 'challenge' : r() < 0.02 ? 'deny' : 'allow';
    const user = o.busyUser && r() < 0.03 ? o.busyUser : `vol-${Math.floor(r() * users)}`;
    events.push(
      storedEvent({
        id: `vol-${i}`,
        envId: env,
        userId: user,
        email: `${user}@volume.example`,
        deviceToken: `vol-dev-${user}`,
        ip,
        country: ['US', 'DE', 'FR', 'GB', 'BR'][Math.floor(r() * 5)] as string,
        asn: 64500 + Math.floor(r() * 20),
        action,
        risk: action === 'allow' ? 0.1 : 0.7,
        signals,
        occurredAt: new Date(at),
      }),
    );
  }
  // In time order, as the live path would have seen them: each rollup and key minute is then
  // gathered once.
  events.sort((a, b) => a.occurredAt.getTime() - b.occurredAt.getTime());
  const db = app.database.db;
  for (let first = 0; first < events.length; first += CHUNK) {
    await db
      .collection<EventDoc>(EVENTS)
      .insertMany(events.slice(first, first + CHUNK).map(toEventDoc), { ordered: false });
  }
  // Deltas (increments), not snapshots: the app's own state layer may hold some of the same
  // documents (the environment's markers), and increments from both add up.
  await app.built.state.flush();
  const errors: unknown[] = [];
  const state = new StateLayer(db, {
    writeMode: 'deltas',
    maxEntries: 50_000,
    maxBatch: 1000,
    queueLimit: 100_000_000,
    maxUnwrittenMs: 3_600_000,
    flushIntervalMs: 1000,
    onError: (err) => errors.push(err),
  });
  const rollups = new RollupWriter({ state, pushEveryMs: 3_600_000 });
  const keys = new EventKeyWriter({ state, pushEveryMs: 3_600_000 });
  for (const e of events) {
    rollups.record(e);
    keys.record(e);
  }
  rollups.drain();
  await state.flush();
  await state.close(600_000);
  if (errors.length > 0) throw new Error(`writing the volume's rollups and keys: ${String(errors[0])}`);
  const since = new Date(Math.floor(oldest / 60_000) * 60_000);
  await markRollupsSince(db, env, since);
  await markKeysSince(db, env, since);
}

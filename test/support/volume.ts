/**
 * A large environment for the console's end-to-end test: older events of many users, appended
 * through the store's own write path (events, their keys and rollups, written behind in
 * batches), then the rollups and keys marked complete from the oldest one (every event went
 * through their writers). Addresses (100.64.0.0/10), users (`vol-…`) and times (before the last
 * 25 hours) are kept apart from what a test seeds itself.
 */
import type { EnvId } from '../../src/core/model';
import { storedEvent } from './events';
import { markKeysSince } from '../../src/store/event-keys';
import { markRollupsSince } from '../../src/store/rollups';
import type { TestApp } from './app';
import { eventWriter } from './stored';

const SIGNALS = ['new_device', 'new_country', 'proxy_ip', 'multiple_accounts_per_device', 'impossible_travel'];

/** `busyUser` (optional) is the user of 3% of the events. */
export async function appendVolume(app: TestApp, env: EnvId, count: number, o: { users?: number; busyUser?: string } = {}): Promise<void> {
  const users = o.users ?? 5_000;
  let s = 12345;
  const r = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const now = Date.now();
  const oldest = now - 7 * 86_400_000;
  const newest = now - 25 * 3_600_000;
  const CHUNK = 5_000;
  const events = await eventWriter(app.database.db, app.built.state);
  for (let first = 0; first < count; first += CHUNK) {
    const written: Promise<void>[] = [];
    for (let i = first; i < Math.min(count, first + CHUNK); i++) {
      const at = oldest + Math.floor(r() * (newest - oldest));
      const ip = `100.${64 + Math.floor(r() * 4)}.${Math.floor(r() * 256)}.${1 + Math.floor(r() * 254)}`;
      const signals = SIGNALS.filter(() => r() < 0.08);
      const action = signals.length > 1 ? 'challenge' : r() < 0.02 ? 'deny' : 'allow';
      const user = o.busyUser && r() < 0.03 ? o.busyUser : `vol-${Math.floor(r() * users)}`;
      const e = storedEvent({
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
      });
      written.push(events.append(e));
    }
    await app.built.state.flush();
    await Promise.all(written);
  }
  const since = new Date(Math.floor(oldest / 60_000) * 60_000);
  await markRollupsSince(app.database.db, env, since);
  await markKeysSince(app.database.db, env, since);
}

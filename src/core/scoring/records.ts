/**
 * Counter documents about one thing each, not a population: what a native app's install reported
 * of itself, the uses of one client token (single use), and the account an e-mail belongs to.
 *
 * Pure: reads snapshots of counter documents (counters.ts) and says what to add.
 */
import type { CounterBump, CounterSnapshot } from '../ports';
import {
  ACTIVITY_KEEP_MS,
  activityKey,
  emailKey,
  POPULATION_KEEP_MS,
  SET_CAP,
  snap,
  tokenKey,
  TOKEN_USES_KEEP_MS,
  type Snapshots,
} from './counters';
import { TOKEN_FLOW_MS, TOKEN_MAX_USES } from './weights';

/** What an install reported of itself (null: nothing: it never sent an app event, or not within a week). */
export interface AppActivity {
  installs: number;
  opens: number;
  screens: number;
  events: number;
  /** Distinct accounts that used it (identified in the app, or named by a verdict with its token). */
  accounts: number;
  /** Its first event (epoch ms). */
  first: number | null;
}

export function appActivity(s: Snapshots, deviceKey: string): AppActivity | null {
  const a = s.get(activityKey(deviceKey));
  if (!a) return null;
  const c = a.counts;
  return {
    installs: c.n ?? 0,
    opens: c.o ?? 0,
    screens: c.s ?? 0,
    events: c.e ?? 0,
    accounts: a.sets.u?.length ?? 0,
    first: c.first ?? null,
  };
}

/** Whether an install's activity shows it announced itself (an install or an open). */
export const announced = (a: AppActivity | null) => a !== null && a.installs + a.opens > 0;

/** An app event, as the activity counts it. */
export interface ActivityEvent {
  type: string;
  at: number;
  /** The user an identify named. */
  userId: string | null;
}

/** The counter changes a batch of an install's events makes (`snapshot`: its document as read, for the set's cap). */
export function activityBump(
  deviceKey: string,
  snapshot: CounterSnapshot | undefined,
  events: readonly ActivityEvent[],
): CounterBump[] {
  const key = activityKey(deviceKey);
  const inc: Record<string, number> = { e: events.length };
  const count = (field: string) => (inc[field] = (inc[field] ?? 0) + 1);
  let first = Infinity;
  for (const e of events) {
    first = Math.min(first, e.at);
    if (e.type === 'app_installed') count('n');
    else if (e.type === 'app_opened') count('o');
    else if (e.type === 'screen') count('s');
    else if (e.type === 'app_closed') count('c');
  }
  const bumps: CounterBump[] = [{ key, inc, min: { first }, keepMs: ACTIVITY_KEEP_MS }];
  const members = new Set(snapshot?.sets.u ?? []);
  for (const e of events) {
    if (!e.userId || members.has(e.userId) || members.size >= SET_CAP) continue;
    members.add(e.userId);
    bumps.push({ key, add: { u: e.userId }, keepMs: ACTIVITY_KEEP_MS });
  }
  return bumps;
}

/**
 * Whether this use of a client token is a replay: a token serves one login flow (the pre-auth
 * check, the verdict after the password, a track call), so more than TOKEN_MAX_USES calls, a
 * call more than a minute after its first, or a call from another address is a replay.
 */
export function tokenReplayed(s: Snapshots, tokenId: string, now: number, ip: string | null): boolean {
  const t = snap(s, tokenKey(tokenId));
  const uses = t.counts.n ?? 0;
  if (uses === 0) return false;
  const first = t.counts.first ?? now;
  const ips = t.sets.ip ?? [];
  return (
    uses >= TOKEN_MAX_USES ||
    now - first > TOKEN_FLOW_MS ||
    (ip !== null && ips.length > 0 && !ips.includes(ip))
  );
}

/** Record one use of a client token. */
export function tokenBump(tokenId: string, now: number, ip: string | null): CounterBump {
  return {
    key: tokenKey(tokenId),
    inc: { n: 1 },
    min: { first: now },
    ...(ip ? { add: { ip } } : {}),
    keepMs: TOKEN_USES_KEEP_MS,
  };
}

/** The account an e-mail belongs to, as far as Rampart has seen it. */
export function accountOfEmail(s: Snapshots, emailHash: string | null): string | null {
  if (!emailHash) return null;
  return snap(s, emailKey(emailHash)).sets.u?.[0] ?? null;
}

/** Record which account an e-mail belongs to (written when it is new or changed). */
export function emailBump(s: Snapshots, emailHash: string, account: string): CounterBump | null {
  if (accountOfEmail(s, emailHash) === account) return null;
  return { key: emailKey(emailHash), replaceSet: { u: [account] }, keepMs: POPULATION_KEEP_MS };
}

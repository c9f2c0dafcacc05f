/**
 * The verdict use case behind POST /v1/authenticate, /v1/risk and /v1/filter and their gRPC
 * twins, in the order it runs: validate the command, enrich the event, read the state it needs,
 * score, decide (the first matching policy), and record what the event taught (device registry,
 * profile, velocity counters, the stored event and, for challenge/deny on a known user, a
 * webhook) as changes written behind the answer. The helpers it shares with track (enrich, the
 * state read, what an event teaches) are in observe.ts; the engine is scoring/model.ts.
 *
 * The answer waits only for the reads (cache hits in the common case), and never longer than the
 * verdict budget: state that is not read in time is treated as unknown, and the answer says so
 * (`degraded`). Between the reads and the recording nothing awaits, so concurrent requests for
 * one user never interleave there.
 */
import type {
  Action,
  Device,
  Environment,
  EventInput,
  MobileClient,
  PolicyRef,
  Principal,
  Signals,
} from '../model';
import {
  monotonicMs,
  type ClientTokens,
  type Clock,
  type CounterStore,
  type EventStore,
  type Intel,
  type UserStateStore,
  type WriteQueue,
} from '../ports';
import type { EventCommand } from '../events/command';
import { validateEvent } from '../events/parse';
import { isRegistration } from '../events/catalog';
import {
  buildContext,
  deviceTokenFor,
  recognise,
  reviewState,
  sightedDevice,
  sightingChange,
} from '../devices/service';
import { riskLevel } from '../scoring/signals';
import { FEEDBACK_REPORTED_MIN } from '../scoring/weights';
import { LEVEL } from '../scoring/features';
import { assess, lesson, type AssessInput, type Assessment } from '../scoring/model';
import type { ClientEvidence, MobileEvidence } from '../scoring/evidence';
import { tokenlessHabit } from '../scoring/user-evidence';
import {
  activityHabit,
  activityKey,
  appActivity,
  appFingerprintShare,
  emailAccount,
  environmentStats,
  headerHabits,
  machineOf,
  languageCounts,
  NO_SNAPSHOTS,
  populationCounts,
  proofHabit,
  readWindow,
  tokenReplayed,
  WINDOW_KINDS,
  type Snapshots,
  type TokenHabit,
} from '../scoring/population';
import { randomKey, shortHash, timeOrderedUuid } from '../crypto';
import type { PolicyService } from '../policies/service';
import type { WebhookSink } from '../webhooks/ports';
import {
  enrich,
  eventEmail,
  profileChange,
  readEventState,
  recordCounters,
  resolveDevice,
  toStoredEvent,
  type Enriched,
  type EventState,
} from './observe';
import { TEST_TOKEN_POLICIES, type Policy, type PolicySet } from '../policies/model';
import type { ListService } from '../lists/service';
import { matchLists, NO_MATCHES, type ListMatch } from '../lists/matcher';
import { eventValues, listSignal, NO_LISTS } from './list-evidence';
import type { Caller, WorkLimiter } from '../work-limiter';

export type VerdictEndpoint = 'authenticate' | 'risk' | 'filter';

export interface Verdict {
  action: Action;
  risk: number;
  signals: Signals;
  policy: PolicyRef;
  userId: string | null;
  /** The device the event came from (null when no user was given). */
  device: Device | null;
  event: EventInput;
  /**
   * True when the state the verdict needs could not be read within the verdict budget: the
   * answer was computed from what was at hand (and the reason logged).
   */
  degraded: boolean;
}

export interface VerdictLog {
  warn(obj: object, msg: string): void;
}

/** Hook for metrics: one call per verdict answered. */
export interface VerdictObserver {
  verdict(endpoint: VerdictEndpoint, action: Action, degraded: boolean, seconds: number): void;
}

export interface VerdictDeps {
  users: UserStateStore;
  events: EventStore;
  counters: CounterStore;
  writes: WriteQueue;
  policies: PolicyService;
  /** The environment's lists, matched on every verdict (absent: no lists). */
  lists?: ListService;
  webhooks: WebhookSink;
  clock: Clock;
  /** Reference data events are enriched with. */
  intel: Intel;
  log: VerdictLog;
  /** Reads Rampart's client tokens (absent: tokens are opaque fingerprints). */
  clientTokens?: ClientTokens;
  /** How long a verdict may wait for its state (default 150 ms). */
  budgetMs?: number;
  /**
   * Oldest event time a verdict accepts (default 365 days): an older `timestamp` is scored as now
   * and named in the `stale_timestamp` signal (see staleAt). History goes through track and log.
   */
  maxEventAgeMs?: number;
  observer?: VerdictObserver;
  /**
   * The key new devices' tokens are derived under (deviceTokenFor); instances that share a
   * database must share it. Default: a random key of this process.
   */
  deviceTokenKey?: Buffer;
  /** How many verdicts compute at once; the rest wait their turn or are refused (absent: no bound). */
  limiter?: WorkLimiter;
}

export const DEFAULT_VERDICT_BUDGET_MS = 150;
/**
 * A year: a `timestamp` is the event's time (docs/decisions.md), so an application replaying or
 * importing weeks of history through the verdict endpoints teaches the profile as it happened.
 */
export const DEFAULT_MAX_EVENT_AGE_MS = 365 * 86_400_000;

/**
 * The sent time of an event too old for a verdict, or null. A verdict is about something
 * happening now: an old `timestamp` on one would file its evidence under hours long past (where
 * velocity windows no longer look) and move the user's profile back in time. Such an event is
 * answered as if it happened now, counted in the windows of now, stored, and teaches the
 * profile nothing, since when it really happened is unknown; the answer never fails (a 422 would
 * send Castle's SDKs to their failover, usually `allow`).
 */
export function staleAt(event: EventInput, maxAgeMs: number): Date | null {
  return event.receivedAt.getTime() - event.occurredAt.getTime() > maxAgeMs ? event.occurredAt : null;
}

const policyRef = (p: Policy): PolicyRef => ({
  id: p.id,
  revision: p.revision,
  name: p.name,
  action: p.action,
});

export class VerdictService {
  private readonly budgetMs: number;
  private readonly maxEventAgeMs: number;

  private readonly deviceTokenKey: Buffer;
  constructor(private readonly d: VerdictDeps) {
    this.deviceTokenKey = d.deviceTokenKey ?? randomKey();
    this.budgetMs = d.budgetMs ?? DEFAULT_VERDICT_BUDGET_MS;
    this.maxEventAgeMs = d.maxEventAgeMs ?? DEFAULT_MAX_EVENT_AGE_MS;
  }

  /** The verdicts computing now, the bound on them and those waiting their turn (for the metrics). */
  get work(): { inFlight: number; limit: number; waiting: number } {
    const l = this.d.limiter;
    return l
      ? { inFlight: l.inFlight, limit: l.limit, waiting: l.waiting }
      : { inFlight: 0, limit: 0, waiting: 0 };
  }

  /**
   * The verdict on one event, from the command a door built. `caller`: the connection or call it
   * answers, so that a verdict whose caller left while it waited its turn is never computed.
   */
  async evaluate(
    principal: Principal,
    endpoint: VerdictEndpoint,
    command: EventCommand,
    caller?: Caller,
  ): Promise<Verdict> {
    // 0. A turn: at most so many verdicts compute at once (the rest wait, or are refused early).
    const release = this.d.limiter ? await this.d.limiter.acquire(caller) : null;
    try {
      return await this.decideAndRecord(principal, endpoint, command);
    } finally {
      release?.();
    }
  }

  private async decideAndRecord(
    principal: Principal,
    endpoint: VerdictEndpoint,
    command: EventCommand,
  ): Promise<Verdict> {
    const started = monotonicMs(this.d.clock);
    const env = principal.env;
    const now = this.d.clock.now();

    // 1. Validate: the command becomes an event, or the call fails with every offending field.
    const { event, sentAt } = this.validate(env, endpoint, command, now);
    const deadline = now.getTime() + this.budgetMs;
    // While the database is behind, wait (within the budget) rather than pile up unwritten state.
    await this.d.writes.admit(deadline);

    // 2. Enrich: everything known before any read (IP, user agent, device key, features).
    const enriched = enrich(event, this.d.intel);

    // 3. State: the policies in force, the user and the counters, what is not read in time unknown.
    const [set, read, lists] = await Promise.all([
      this.d.policies.forVerdicts(env.id),
      readEventState(this.d, env.id, enriched, deadline),
      this.d.lists ? this.d.lists.forVerdicts(env.id) : NO_LISTS,
    ]);
    // A browser profile on one of the user's own machines is that device (core/devices/machine.ts).
    const { x, link } = resolveDevice(enriched, read);
    // From here on nothing awaits: what was read and what is recorded cannot interleave with
    // another request's.
    const degraded = this.degraded(env, read);

    // 4. Score: the engine's risk and signals (a sandbox test token may force the risk).
    const existing = recognise(read.state, x.key.key);
    const scored = this.score(env, x, read, existing, sentAt);
    const risk = scored.risk;
    // The lists the event is in (from memory; expiry checked now): a signal, and what policies match.
    const matches = lists.size ? matchLists(lists, eventValues(x, existing), now.getTime()) : NO_MATCHES;
    const signals = matches.length ? { ...scored.signals, in_list: listSignal(matches) } : scored.signals;

    // 5. Decide: the first matching policy (a sandbox test token may force the action).
    const { action, policy } = this.decide(set, x, risk, signals, existing, matches);

    // 6. Record what the event taught, written behind the answer, and notify. Not if the writes
    // fell a second behind while this verdict read (it would be lost in a crash past the bound).
    this.d.writes.check();
    const device = this.record(env, endpoint, x, read, existing, {
      action,
      risk,
      signals,
      policy,
      degraded,
      stale: sentAt !== null,
      link,
    });
    if (event.userId && action !== 'allow') this.notify(env, event.userId, x, device, action, policy);

    this.d.observer?.verdict(endpoint, action, degraded, (monotonicMs(this.d.clock) - started) / 1000);
    return { action, risk, signals, policy, userId: event.userId, device, event, degraded };
  }

  /**
   * The validated event, its client token read; an event too old for a verdict (staleAt) is
   * scored as happening now, with when it was sent.
   */
  private validate(
    env: Environment,
    endpoint: VerdictEndpoint,
    command: EventCommand,
    now: Date,
  ): { event: EventInput; sentAt: Date | null } {
    const parsed = validateEvent(endpoint, command, { sandbox: env.sandbox, now });
    const sentAt = staleAt(parsed, this.maxEventAgeMs);
    const timed = sentAt ? { ...parsed, occurredAt: parsed.receivedAt } : parsed;
    return { event: this.d.clientTokens ? this.d.clientTokens.attach(env, timed) : timed, sentAt };
  }

  /** Whether state the verdict needs was not read within the budget (logged when so). */
  private degraded(env: Environment, read: EventState): boolean {
    if (read.state !== undefined && read.counters !== undefined && !read.partial) return false;
    const missing = [
      ...(read.state === undefined ? ['user'] : []),
      ...(read.counters === undefined
        ? ['population and velocity counters']
        : read.partial
          ? ['counters not held in memory']
          : []),
    ];
    this.d.log.warn(
      { env: env.id, missing, budgetMs: this.budgetMs },
      'verdict degraded: state not read within the verdict budget',
    );
    return true;
  }

  private score(
    env: Environment,
    x: Enriched,
    read: EventState,
    existing: Device | null,
    sentAt: Date | null,
  ): { risk: number; signals: Signals } {
    const assessed = assessEvent(x, read, existing, { appsDeclared: (env.clientApps?.length ?? 0) > 0 });
    const signals = sentAt
      ? {
          ...assessed.signals,
          stale_timestamp: {
            score: 0,
            timestamp: sentAt.toISOString(),
            max_age_days: Math.round(this.maxEventAgeMs / 86_400_000),
          },
        }
      : assessed.signals;
    const forced = x.event.testToken?.risk;
    return { risk: forced !== null && forced !== undefined ? forced : assessed.risk, signals };
  }

  private decide(
    set: PolicySet,
    x: Enriched,
    risk: number,
    signals: Signals,
    existing: Device | null,
    lists: readonly ListMatch[],
  ): { action: Action; policy: PolicyRef } {
    // A sandbox test token's action is decided by its own test policy, never by one of the environment's.
    const forced = x.event.testToken?.action ?? null;
    if (forced) return { action: forced, policy: TEST_TOKEN_POLICIES[forced] };
    const matched = this.d.policies.match(set, {
      event: x.event.name,
      risk,
      level: riskLevel(risk),
      signals: Object.keys(signals),
      country: x.ip?.location?.country_code ?? null,
      deviceState: reviewState(existing),
      lists,
    });
    return { action: matched.action, policy: policyRef(matched) };
  }

  /**
   * Record what the event taught (device sighting, profile, behaviour, counters, the stored
   * event) as changes written behind; answer the event's device as it now is.
   */
  private record(
    env: Environment,
    endpoint: VerdictEndpoint,
    x: Enriched,
    read: EventState,
    existing: Device | null,
    v: {
      action: Action;
      risk: number;
      signals: Signals;
      policy: PolicyRef;
      degraded: boolean;
      stale: boolean;
      link: string | null;
    },
  ): Device | null {
    const event = x.event;
    const state = read.state;
    const eventId = timeOrderedUuid();
    const learnt = lesson({
      event,
      userId: read.userId,
      kind: x.kind,
      features: x.features,
      behaviour: state?.behaviour ?? null,
      action: v.action,
      unknownAccount: read.unknownAccount,
      feedbackReported: read.counters
        ? environmentStats(read.counters, event.occurredAt.getTime()).feedback >= FEEDBACK_REPORTED_MIN
        : false,
      ip: x.ip,
      eventId,
      foreignLanguage: 'language_country_mismatch' in v.signals,
    });
    // A stale event still counts in the windows of now; its behaviour is not the user's of now.
    const taught = v.stale
      ? { ...learnt, behaviour: null, outcome: { ...learnt.outcome, success: false } }
      : learnt;
    let device: Device | null = null;
    const userId = event.userId;
    if (userId) {
      const change = sightingChange({
        key: x.key,
        existing,
        context: buildContext(event, x.ip, x.ua, x.key.identity),
        at: event.occurredAt,
        risk: v.risk,
        machine: x.features.machine,
        // A new profile is linked to the device by a login let in (never by one challenged or denied).
        link: v.action === 'allow' && !v.stale ? v.link : null,
        registeredAt: event.registeredAt ?? state?.profile.registeredAt ?? null,
        registration: isRegistration(event.name) && endpoint !== 'filter',
        denied: v.action === 'deny',
        stateKnown: state !== undefined,
        newToken: () => deviceTokenFor(this.deviceTokenKey, env.id, userId, x.key.key),
      });
      this.d.users.record(env.id, userId, {
        profile: profileChange(x, taught.outcome.success),
        devices: [change],
        ...(taught.behaviour ? { behaviour: taught.behaviour } : {}),
      });
      device = sightedDevice(env.id, userId, change, this.d.users.cachedDevice(env.id, userId, x.key.key));
    } else if (read.userId && taught.behaviour) {
      // An event naming the account only by its e-mail still teaches that account.
      this.d.users.record(env.id, read.userId, { behaviour: taught.behaviour });
    }
    recordCounters(this.d.counters, env.id, x, read, taught.outcome);
    void this.d.events.append(
      toStoredEvent(env.id, x, {
        id: eventId,
        action: v.action,
        risk: v.risk,
        signals: v.signals,
        policy: v.policy,
        deviceToken: device?.token ?? null,
        degraded: v.degraded,
      }),
    );
    return device;
  }

  /** A challenge or a denial of a known user: `$incident.confirmed` (and `$review.opened` for a challenge). */
  private notify(
    env: Environment,
    userId: string,
    x: Enriched,
    device: Device | null,
    action: Action,
    policy: PolicyRef,
  ): void {
    const event = x.event;
    const notice = {
      env,
      userId,
      device,
      context: { ip: event.context.ip, userAgent: x.ua, location: x.ip?.location ?? null },
      policy,
      userTraits: event.userTraits,
      properties: event.properties,
      at: event.occurredAt,
    };
    void this.d.webhooks.emit({ ...notice, type: '$incident.confirmed', trigger: `verdict_${action}` });
    if (action === 'challenge')
      void this.d.webhooks.emit({ ...notice, type: '$review.opened', trigger: 'verdict_challenge' });
  }
}

/** Score an event from what was read (pure): the engine's input assembled from the counters. */
export function assessEvent(
  x: Enriched,
  read: EventState,
  device: Device | null,
  env: { appsDeclared: boolean } = { appsDeclared: false },
): Assessment {
  const at = x.event.occurredAt.getTime();
  const s = read.counters ?? NO_SNAPSHOTS;
  const pop = populationCounts(s, at);
  const windows: AssessInput['windows'] = {};
  const account = read.userId ?? (x.emailHash ? emailAccount(eventEmail(x.event) ?? '') : null);
  for (const kind of WINDOW_KINDS) windows[kind] = readWindow(s, x.features, kind, account);
  const total = Math.max(pop.total, 1);
  const operator = x.features.values[LEVEL.operator];
  return assess(
    {
      event: x.event,
      disposableEmail: x.disposableEmail,
      ip: x.ip,
      ua: x.ua,
      features: x.features,
      env: environmentStats(s, at),
      headers: headerHabits(s, x.features.values[LEVEL.browser], at),
      windows,
      shapeShare: pop.shape(x.features.shape) / total,
      operatorShare: operator ? pop.count(LEVEL.operator, operator) / total : 0,
      machineShare: machineOf(x.features) ? pop.machine(machineOf(x.features) as string) / total : 0,
      fingerprints: fingerprintShare(
        pop,
        x.features.app ? appFingerprintShare(s, at, x.features.release) : null,
        !x.features.app && x.features.values[LEVEL.browser] !== null ? appFingerprintShare(s, at) : null,
      ),
      tokenlessHabit:
        x.features.app && read.state?.behaviour ? tokenlessHabit(read.state.behaviour, at) : false,
      appsDeclared: env.appsDeclared,
      client: clientEvidence(x, s, account),
      domainCount: x.features.emailDomain ? pop.domain(x.features.emailDomain) : 0,
      language: languageCounts(pop, x.features),
      unknownAccount: read.unknownAccount,
      behaviour: read.state?.behaviour ?? null,
      population: pop,
      device,
    },
    x.kind,
    at,
  );
}

/**
 * Legitimate events of the event's class, and the share of them with a client fingerprint: for a
 * native app's HTTP stack, the apps' own (`app`); for a browser, the environment's (population
 * level `fp`) less the apps' (`others`), since an application's pages and its app integrate the
 * client separately.
 */
function fingerprintShare(
  pop: { count(level: 'fp', value: string): number },
  app: TokenHabit | null,
  others: TokenHabit | null,
): TokenHabit {
  if (app) return app;
  const withFp = pop.count('fp', 'y') - (others ? others.events * others.share : 0);
  const events = pop.count('fp', 'y') + pop.count('fp', 'n') - (others ? others.events : 0);
  return { events: Math.max(0, events), share: events > 0 ? Math.max(0, withFp) / events : 0 };
}

/** A Rampart client token as the engine weighs it: its problem (a replay seen in its uses), its evidence. */
function clientEvidence(x: Enriched, s: Snapshots, account: string | null): ClientEvidence | null {
  const c = x.event.client;
  if (!c) return null;
  const replayed =
    c.jti !== null && tokenReplayed(s, c.jti, x.event.receivedAt.getTime(), x.event.context.ip);
  const headerLanguage = x.features.values[LEVEL.language];
  const lon = x.ip?.location?.lon;
  let timezoneGapHours: number | null = null;
  if (c.timezoneOffset !== null && typeof lon === 'number') {
    // Local time is about longitude / 15 hours from UTC; getTimezoneOffset() is UTC minus local.
    const gap = Math.abs(-c.timezoneOffset / 60 - lon / 15) % 24;
    timezoneGapHours = Math.min(gap, 24 - gap);
  }
  return {
    problem: replayed ? 'replayed' : c.problem,
    automation: c.automation,
    userAgentMismatch:
      c.userAgentHash !== null &&
      x.event.context.userAgent !== '' &&
      c.userAgentHash !== shortHash(x.event.context.userAgent),
    languageMismatch:
      c.language !== null && headerLanguage !== null && c.language !== headerLanguage.split('-')[0],
    timezoneGapHours,
    mobile: c.mobile && c.problem === null ? mobileEvidence(x, s, account, c.mobile) : null,
    proof:
      !c.mobile && c.problem === null
        ? {
            bits: c.proof ?? null,
            behaviour: c.behaviour ?? null,
            habit: proofHabit(s, x.event.occurredAt.getTime()),
            accounts: pageAccounts(s, c.deviceKey ?? null, account),
          }
        : null,
  };
}

/**
 * The accounts a browser's page named in its events within the week (castle-js's page, form and
 * custom: core/client/events.ts), with this event's account: 0 when its page named none (a page
 * that sends no events says nothing).
 */
function pageAccounts(s: Snapshots, deviceKey: string | null, account: string | null): number {
  const members = deviceKey ? (s.get(activityKey(deviceKey))?.sets.u ?? []) : [];
  if (members.length === 0) return 0;
  return members.length + (account !== null && !members.includes(account) ? 1 : 0);
}

/** A native app's token as the engine weighs it: its device's integrity, its install's activity and accounts, the platform the user agent names. */
function mobileEvidence(x: Enriched, s: Snapshots, account: string | null, m: MobileClient): MobileEvidence {
  const activity = appActivity(s, m.deviceKey);
  const members = s.get(activityKey(m.deviceKey))?.sets.u ?? [];
  const accounts = members.length + (account !== null && !members.includes(account) ? 1 : 0);
  const at = x.event.occurredAt.getTime();
  const habit = activityHabit(s, at);
  // The user agent's platform, where it names one: a desktop browser, or the other handset OS.
  const named = x.ua.platform.toLowerCase();
  const platformMismatch =
    x.ua.type === 'desktop' ||
    (m.platform === 'android' && /ios|mac/.test(named)) ||
    (m.platform === 'ios' && named.includes('android'));
  return {
    integrity: m.integrity,
    activity,
    accounts,
    habit: { events: habit.events, announced: habit.share, screens: habit.screens },
    platformMismatch,
    attestation: m.attested ?? null,
  };
}

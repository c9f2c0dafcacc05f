/**
 * The verdict use case behind POST /v1/authenticate, /v1/risk and /v1/filter (and the gRPC
 * door): validate, enrich, read the state it needs, score, match a policy, and record what the
 * event taught (device registry, profile, velocity counters, the stored event and, for
 * challenge/deny on a known user, a webhook) as changes written behind the answer.
 *
 * The answer waits only for the reads (cache hits in the common case), and never longer than the
 * verdict budget: state that is not read in time is treated as unknown, and the answer says so
 * (`degraded`). Between the reads and the recording nothing awaits, so concurrent requests for
 * one user never interleave there.
 */
import { performance } from 'node:perf_hooks';
import type { Action, Device, EventInput, PolicyRef, Principal, Signals } from '../model';
import type { ClientTokens, Clock, CounterStore, EventStore, Intel, UserStateStore, WriteQueue } from '../ports';
import { parseEvent } from '../events/parse';
import { isRegistration } from '../events/catalog';
import { buildContext, recognise, reviewState, sightedDevice, sightingChange } from '../devices/service';
import { riskLevel } from '../scoring/signals';
import { lesson } from '../scoring/model';
import { environmentStats } from '../scoring/population';
import { uuid } from '../crypto';
import type { PolicyService } from '../policies/service';
import type { WebhookSink } from '../webhooks/ports';
import { assessEvent, enrich, profileChange, readEventState, recordCounters, toStoredEvent } from './observe';
import type { Policy } from '../policies/model';

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
   * Oldest event time a verdict accepts (default 30 days): an older `timestamp` is scored as now
   * and named in the `stale_timestamp` signal (see staleAt). History goes through track and log.
   */
  maxEventAgeMs?: number;
  observer?: VerdictObserver;
}

export const DEFAULT_VERDICT_BUDGET_MS = 150;
export const DEFAULT_MAX_EVENT_AGE_MS = 30 * 86_400_000;

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

const policyRef = (p: Policy, action: Action, name?: string): PolicyRef => ({ id: p.id, revision: p.revision, name: name ?? p.name, action });

export class VerdictService {
  private readonly budgetMs: number;
  private readonly maxEventAgeMs: number;

  constructor(private readonly d: VerdictDeps) {
    this.budgetMs = d.budgetMs ?? DEFAULT_VERDICT_BUDGET_MS;
    this.maxEventAgeMs = d.maxEventAgeMs ?? DEFAULT_MAX_EVENT_AGE_MS;
  }

  /** Evaluate one event body for a verdict endpoint. */
  async evaluate(principal: Principal, endpoint: VerdictEndpoint, body: unknown): Promise<Verdict> {
    const started = performance.now();
    const envId = principal.env.id;
    const now = this.d.clock.now();
    const parsed = parseEvent(endpoint, body, { sandbox: principal.env.sandbox, now });
    const sentAt = staleAt(parsed, this.maxEventAgeMs);
    const timed = sentAt ? { ...parsed, occurredAt: parsed.receivedAt } : parsed;
    const event = this.d.clientTokens ? this.d.clientTokens.attach(principal.env, timed) : timed;
    const deadline = now.getTime() + this.budgetMs;
    // While the database is behind, wait (within the budget) rather than pile up unwritten state.
    await this.d.writes.admit(deadline);
    const x = enrich(event, this.d.intel);
    const [set, read] = await Promise.all([this.d.policies.forVerdicts(envId), readEventState(this.d, envId, x, deadline)]);
    // From here on nothing awaits: what was read and what is recorded cannot interleave with
    // another request's.
    const state = read.state;
    const missing = [...(state === undefined ? ['user'] : []), ...(read.counters === undefined ? ['population and velocity counters'] : [])];
    const degraded = missing.length > 0;
    if (degraded) this.d.log.warn({ env: envId, missing, budgetMs: this.budgetMs }, 'verdict degraded: state not read within the verdict budget');
    const user = state?.profile ?? null;
    const existing = recognise(state, x.key.key);
    const assessed = assessEvent(x, read, existing);
    const signals = sentAt
      ? { ...assessed.signals, stale_timestamp: { score: 0, timestamp: sentAt.toISOString(), max_age_days: Math.round(this.maxEventAgeMs / 86_400_000) } }
      : assessed.signals;
    let risk = assessed.risk;
    if (event.testToken?.risk !== null && event.testToken?.risk !== undefined) risk = event.testToken.risk;

    const matched = this.d.policies.match(set, {
      event: event.name,
      risk,
      level: riskLevel(risk),
      signals: Object.keys(signals),
      country: x.ip?.location?.country_code ?? null,
      deviceState: reviewState(existing),
    });
    const forced = event.testToken?.action ?? null;
    const action = forced ?? matched.action;
    const policy = forced ? policyRef(matched, forced, `Sandbox test token (${forced})`) : policyRef(matched, action);

    const eventId = uuid();
    const learnt = lesson({
      event,
      userId: read.userId,
      kind: x.kind,
      features: x.features,
      behaviour: state?.behaviour ?? null,
      action,
      unknownAccount: read.unknownAccount,
      feedbackReported: read.counters ? environmentStats(read.counters, event.occurredAt.getTime()).feedback >= 3 : false,
      ip: x.ip,
      eventId,
    });
    // A stale event still counts in the windows of now; its behaviour is not the user's of now.
    const taught = sentAt ? { ...learnt, behaviour: null, outcome: { ...learnt.outcome, success: false } } : learnt;
    let device: Device | null = null;
    if (event.userId) {
      const change = sightingChange({
        key: x.key,
        existing,
        context: buildContext(event, x.ip, x.ua, x.key.identity),
        at: event.occurredAt,
        risk,
        registeredAt: event.registeredAt ?? user?.registeredAt ?? null,
        registration: isRegistration(event.name) && endpoint !== 'filter',
        denied: action === 'deny',
        stateKnown: state !== undefined,
      });
      this.d.users.record(envId, event.userId, { profile: profileChange(x, taught.outcome.success), devices: [change], ...(taught.behaviour ? { behaviour: taught.behaviour } : {}) });
      device = sightedDevice(envId, event.userId, change, this.d.users.cachedDevice(envId, event.userId, x.key.key));
    } else if (read.userId && taught.behaviour) {
      // An event naming the account only by its e-mail still teaches that account.
      this.d.users.record(envId, read.userId, { behaviour: taught.behaviour });
    }
    recordCounters(this.d.counters, envId, x, read, taught.outcome);
    void this.d.events.append(toStoredEvent(envId, x, { id: eventId, action, risk, signals, policy, deviceToken: device?.token ?? null, degraded }));

    const userId = event.userId;
    if (userId && action !== 'allow') {
      const notice = {
        env: principal.env,
        userId,
        device,
        context: { ip: event.context.ip, userAgent: x.ua, location: x.ip?.location ?? null },
        policy,
        userTraits: event.userTraits,
        properties: event.properties,
        at: event.occurredAt,
      };
      void this.d.webhooks.emit({ ...notice, type: '$incident.confirmed', trigger: `verdict_${action}` });
      if (action === 'challenge') void this.d.webhooks.emit({ ...notice, type: '$review.opened', trigger: 'verdict_challenge' });
    }
    this.d.observer?.verdict(endpoint, action, degraded, (performance.now() - started) / 1000);
    return { action, risk, signals, policy, userId: event.userId, device, event, degraded };
  }
}

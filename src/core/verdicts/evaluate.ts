/**
 * The verdict use case behind POST /v1/authenticate, /v1/risk and /v1/filter (and the gRPC and
 * GraphQL doors): validate, enrich, score, match a policy, update the device registry, store the
 * event and, for challenge/deny on a known user, notify the application.
 */
import type { Action, Device, EventInput, PolicyRef, Principal, Signals } from '../model';
import type { Clock, CounterStore, EventStore, UserStore } from '../ports';
import { parseEvent } from '../events/parse';
import { isRegistration } from '../events/catalog';
import { buildContext, DeviceService, reviewState } from '../devices/service';
import { combineRisk, computeSignals, riskLevel } from '../scoring/signals';
import type { PolicyService } from '../policies/service';
import type { WebhookSink } from '../webhooks/port';
import { bumpCounters, enrich, nextProfile, readCounters, toStoredEvent } from './observe';
import type { Policy } from '../policies/model';
import { BackgroundWork } from '../background';

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
}

export interface VerdictDeps {
  users: UserStore;
  events: EventStore;
  counters: CounterStore;
  deviceService: DeviceService;
  policies: PolicyService;
  webhooks: WebhookSink;
  clock: Clock;
  onBackgroundError: (err: unknown) => void;
}

const policyRef = (p: Policy, action: Action, name?: string): PolicyRef => ({ id: p.id, revision: p.revision, name: name ?? p.name, action });

export class VerdictService {
  private readonly background: BackgroundWork;

  constructor(private readonly d: VerdictDeps) {
    this.background = new BackgroundWork(d.onBackgroundError);
  }

  /** Resolves when the writes that verdicts left running in the background are done. */
  idle(): Promise<void> {
    return this.background.idle();
  }

  /** Evaluate one event body for a verdict endpoint. */
  async evaluate(principal: Principal, endpoint: VerdictEndpoint, body: unknown): Promise<Verdict> {
    const envId = principal.env.id;
    const event = parseEvent(endpoint, body, { sandbox: principal.env.sandbox, now: this.d.clock.now() });
    const x = enrich(event);
    const userId = event.userId;

    const [set, user, existing, counts] = await Promise.all([
      this.d.policies.forVerdicts(envId),
      userId ? this.d.users.get(envId, userId) : Promise.resolve(null),
      userId ? this.d.deviceService.recognise(envId, userId, x.key.key) : Promise.resolve(null),
      readCounters(this.d.counters, envId, x),
    ]);
    const deviceCount = user?.deviceCount ?? 0;
    const signals = computeSignals({ event, ip: x.ip, ua: x.ua, user, device: existing, userDeviceCount: deviceCount, ...counts });
    let risk = combineRisk(signals, existing);
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

    let device: Device | null = null;
    if (userId) {
      const profile = nextProfile(envId, user, x);
      if (!existing) profile.deviceCount += 1;
      // The profile and the device are independent documents: write both at once.
      [, device] = await Promise.all([
        this.d.users.save(profile),
        this.d.deviceService.observe({
          env: envId,
          userId,
          existing,
          key: x.key,
          context: buildContext(event, x.ip, x.ua, x.key.identity),
          at: event.occurredAt,
          risk,
          user: profile,
          registration: isRegistration(event.name) && endpoint !== 'filter',
          denied: action === 'deny',
        }),
      ]);
    }
    // Counters and the event itself are written without holding up the answer.
    this.background.add(bumpCounters(this.d.counters, envId, x, counts));
    this.background.add(this.d.events.append(toStoredEvent(envId, x, { action, risk, signals, policy, deviceToken: device?.token ?? null })));

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
      await this.d.webhooks.emit({ ...notice, type: '$incident.confirmed', trigger: `verdict_${action}` });
      if (action === 'challenge') await this.d.webhooks.emit({ ...notice, type: '$review.opened', trigger: 'verdict_challenge' });
    }
    return { action, risk, signals, policy, userId, device, event };
  }
}

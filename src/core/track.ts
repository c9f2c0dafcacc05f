/**
 * The track use case (POST /v1/track and /v1/log): accept feedback events without waiting on the
 * database. Valid events go into an in-memory queue that a worker applies (device state table,
 * counters, stored event); rejected payloads go to the per-environment debugger. On shutdown the
 * queue is drained so that no accepted event is lost.
 */
import { uuid } from './crypto';
import { BackgroundWork } from './background';
import { DomainError, InvalidParameters, NotFound, Unavailable } from './errors';
import type { Device, EventInput, Principal, RejectedPayload } from './model';
import type { Clock, CounterStore, DebuggerStore, EventStore, UserStore } from './ports';
import { parseEvent } from './events/parse';
import { buildContext, DeviceService } from './devices/service';
import { bumpCounters, enrich, nextProfile, readCounters, toStoredEvent } from './verdicts/observe';

const MAX_DEBUG_PAYLOAD = 16 * 1024;

export interface TrackDeps {
  users: UserStore;
  events: EventStore;
  counters: CounterStore;
  debuggerLog: DebuggerStore;
  deviceService: DeviceService;
  clock: Clock;
  onBackgroundError: (err: unknown) => void;
  /** Most events held in memory before track pushes back with 503. */
  maxQueue?: number;
  concurrency?: number;
}

interface Job {
  principal: Principal;
  event: EventInput;
}

export class TrackService {
  private readonly queue: Job[] = [];
  private running = 0;
  private idleWaiters: (() => void)[] = [];
  private closed = false;
  private readonly background: BackgroundWork;

  constructor(private readonly d: TrackDeps) {
    this.background = new BackgroundWork(d.onBackgroundError);
  }

  /**
   * Accept a track body. Never throws for a malformed body: it is kept in the debugger with its
   * reason. Throws Unavailable only when the queue is full or the service is shutting down.
   */
  accept(principal: Principal, body: unknown, rawText?: string): void {
    if (this.closed) throw new Unavailable('shutting down');
    if (this.queue.length >= (this.d.maxQueue ?? 50_000)) throw new Unavailable('track queue is full');
    let event: EventInput;
    try {
      event = parseEvent('track', body, { sandbox: principal.env.sandbox, now: this.d.clock.now() });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      this.reject(principal, body, rawText, err);
      return;
    }
    this.queue.push({ principal, event });
    this.pump();
  }

  /** Keep a rejected payload, with its reason, in the debugger. */
  reject(principal: Principal, body: unknown, rawText: string | undefined, err: DomainError): void {
    const text = rawText ?? safeStringify(body);
    const userId = typeof (body as { user_id?: unknown } | null)?.user_id === 'string' ? ((body as { user_id: string }).user_id) : null;
    const entry: RejectedPayload = {
      id: uuid(),
      envId: principal.env.id,
      endpoint: 'track',
      reason: err.message,
      fields: err instanceof InvalidParameters ? err.fields : [],
      payload: text.length > MAX_DEBUG_PAYLOAD ? `${text.slice(0, MAX_DEBUG_PAYLOAD)}…` : text,
      userId,
      receivedAt: this.d.clock.now(),
    };
    this.background.add(this.d.debuggerLog.append(entry));
  }

  /** Wait until every accepted event is applied; refuse new ones from now on when `close`. */
  async drain(close = true): Promise<void> {
    if (close) this.closed = true;
    if (this.queue.length > 0 || this.running > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await this.background.idle();
    await this.d.events.flush();
  }

  get pending(): number {
    return this.queue.length + this.running;
  }

  private pump(): void {
    const limit = this.d.concurrency ?? 8;
    while (this.running < limit && this.queue.length > 0) {
      const job = this.queue.shift() as Job;
      this.running++;
      this.apply(job)
        .catch((err) => this.d.onBackgroundError(err))
        .finally(() => {
          this.running--;
          this.pump();
          if (this.running === 0 && this.queue.length === 0) {
            const waiters = this.idleWaiters;
            this.idleWaiters = [];
            waiters.forEach((w) => w());
          }
        });
    }
  }

  /** Apply one feedback event: the device review state table, profile, counters, stored event. */
  async apply({ principal, event }: Job): Promise<void> {
    const env = principal.env;
    const x = enrich(event);
    const ds = this.d.deviceService;
    let device: Device | null = null;
    let userId = event.userId;
    if (event.deviceToken) {
      // Only a missing device is the caller's mistake; a database failure must surface.
      device = await ds.get(env.id, event.deviceToken).catch((err: unknown) => {
        if (err instanceof NotFound) return null;
        throw err;
      });
      if (!device) {
        this.reject(principal, event, undefined, new InvalidParameters([{ field: 'device_token', message: 'unknown device token' }]));
        return;
      }
      userId = userId ?? device.userId;
    } else if (userId) {
      device = await ds.recognise(env.id, userId, x.key.key);
    }

    let user = userId ? await this.d.users.get(env.id, userId) : null;
    if (userId && (event.userId || user)) {
      user = nextProfile(env.id, user, { ...x, event: { ...event, userId } });
      await this.d.users.save(user);
    }

    switch (event.name) {
      case '$challenge.succeeded':
        if (device) device = await ds.approve(env.id, device.token);
        break;
      case '$review.escalated':
        if (device) device = await ds.report(env, device.token, 'review_escalated');
        break;
      case '$password_reset.succeeded':
        if (userId) await ds.passwordReset(env.id, userId, device, event.occurredAt);
        break;
      case '$incident.mitigated':
        if (userId) {
          const result = await ds.incidentMitigated(env.id, userId, event.deviceToken, event.occurredAt);
          if (result.reason) this.reject(principal, event, undefined, new InvalidParameters([{ field: 'event', message: `$incident.mitigated had no effect: ${result.reason}` }]));
        }
        break;
      default:
        // Other feedback refreshes "last seen" and the context of a device the user already has.
        if (device && userId && !event.deviceToken && event.context.ip) {
          const context = buildContext(event, x.ip, x.ua, x.key.identity);
          device = await ds.observe({ env: env.id, userId, existing: device, key: x.key, context, at: event.occurredAt, risk: null, user, registration: false, denied: false });
        }
    }
    await bumpCounters(this.d.counters, env.id, x, await readCounters(this.d.counters, env.id, x));
    await this.d.events.append(toStoredEvent(env.id, { ...x, event: { ...event, userId } }, { action: null, risk: null, signals: {}, policy: null, deviceToken: device?.token ?? null }));
  }
}

function safeStringify(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

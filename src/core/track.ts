/**
 * The track use case (POST /v1/track and /v1/log): accept feedback events without waiting on the
 * database. Valid events go into a bounded in-memory queue that a worker applies (device state
 * table, profile, counters, stored event) through the state layer: reads from its cache, changes
 * written behind. Rejected payloads go to the per-environment debugger. Events of one user are
 * applied in order; an event whose reads fail (database unreachable) is retried, not dropped. On
 * shutdown the queue is drained so that no accepted event is lost.
 */
import { uuid } from './crypto';
import { DomainError, InvalidParameters, Unavailable } from './errors';
import type { Device, EventInput, Principal, RejectedPayload, Signals } from './model';
import type { ClientTokens, Clock, CounterStore, Intel, Scheduler, DebuggerStore, DeviceChange, EventStore, UserStateStore, WriteQueue } from './ports';
import type { EventCommand } from './events/command';
import { validateEvent } from './events/parse';
import { scrubText } from './events/scrub';
import { namedInText } from './privacy/names';
import { buildContext, recognise, type DeviceService } from './devices/service';
import type { WebhookSink } from './webhooks/ports';
import { enrich, profileChange, readEventState, recordCounters, resolveDevice, toStoredEvent } from './verdicts/observe';
import { lesson } from './scoring/model';
import { missingFields } from './scoring/request-evidence';

const MAX_DEBUG_PAYLOAD = 16 * 1024;
/** Attempts of an event whose reads keep failing before it is stored without its state changes. */
const MAX_ATTEMPTS = 30;

export interface TrackLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface TrackDeps {
  users: UserStateStore;
  events: EventStore;
  counters: CounterStore;
  debuggerLog: DebuggerStore;
  deviceService: DeviceService;
  webhooks: WebhookSink;
  writes: WriteQueue;
  clock: Clock;
  /** Runs the waits: admission while track is behind, and the pause before a retry. */
  scheduler: Scheduler;
  /** Reference data events are enriched with. */
  intel: Intel;
  log: TrackLog;
  /** Reads Rampart's client tokens (absent: tokens are opaque fingerprints). */
  clientTokens?: ClientTokens;
  /** Most events held in memory before track pushes back with 503. */
  maxQueue?: number;
  /** Events waiting to be applied before new ones are held back (see ready()). Default 2,000. */
  backpressureAt?: number;
  /** Longest a new event is held back while track or the database is behind. Default 1 s. */
  admissionMs?: number;
  concurrency?: number;
  /** First retry delay of an event whose reads failed (doubles, capped at 1 s). */
  retryBaseMs?: number;
}

interface Job {
  principal: Principal;
  event: EventInput;
  attempts: number;
}

export class TrackService {
  private readonly queue: Job[] = [];
  private running = 0;
  private idleWaiters: (() => void)[] = [];
  private closed = false;
  /** Set while the worker waits before retrying events whose reads failed. */
  private paused = false;
  private lastRetryLog = 0;
  private retriesSinceLog = 0;
  /** The last job of each user (or device) still running: its next job waits for it. */
  private readonly chains = new Map<string, Promise<void>>();
  /** Waiting in ready() for a job to finish. */
  private readonly progress = new Set<() => void>();

  constructor(private readonly d: TrackDeps) {}

  /** Track or the database is behind: new events should wait for ready() before accept(). */
  get congested(): boolean {
    return this.queue.length >= (this.d.backpressureAt ?? 2_000) || this.d.writes.pressure !== 'ok';
  }

  /**
   * Resolves when a new event may be accepted: at once normally; while track or the database is
   * behind, once it has caught up (at most `admissionMs`), so that a burst the database cannot
   * absorb slows its senders instead of piling up in memory (where a crash would lose it).
   * Rejects with Unavailable when nothing more can be taken.
   */
  async ready(): Promise<void> {
    if (this.closed) throw new Unavailable('shutting down');
    if (!this.congested) return;
    const until = this.d.clock.now().getTime() + (this.d.admissionMs ?? 1_000);
    while (this.queue.length >= (this.d.backpressureAt ?? 2_000) && this.d.clock.now().getTime() < until) {
      await new Promise<void>((resolve) => {
        const cancel = this.d.scheduler.after(Math.max(1, until - this.d.clock.now().getTime()), () => done());
        const done = () => {
          cancel();
          this.progress.delete(done);
          resolve();
        };
        this.progress.add(done);
      });
    }
    await this.d.writes.admit(until);
  }

  /**
   * Accept a track event. Never throws for an invalid one: it is kept in the debugger with its
   * reason (the payload as received: `rawText`, else `received`, else the command). Throws
   * Unavailable only when the queue is full or the service is shutting down.
   */
  accept(principal: Principal, command: EventCommand, rawText?: string, received?: unknown): void {
    if (this.closed) throw new Unavailable('shutting down');
    if (this.queue.length >= (this.d.maxQueue ?? 50_000)) throw new Unavailable('track queue is full');
    if (this.d.writes.pressure === 'full') throw new Unavailable('the write queue is full');
    let event: EventInput;
    try {
      event = validateEvent('track', command, { sandbox: principal.env.sandbox, now: this.d.clock.now() });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      this.reject(principal, received ?? command, rawText, err);
      return;
    }
    if (this.d.clientTokens) event = this.d.clientTokens.attach(principal.env, event);
    this.queue.push({ principal, event, attempts: 0 });
    this.pump();
  }

  /**
   * Take one track payload as a door received it (POST /v1/track and /v1/log, Scoring.Track and
   * TrackStream). `decode` builds the event's command from the wire format; a payload it cannot
   * decode (it throws a DomainError) is kept in the debugger with its reason, as is one that
   * does not validate, and the door answers success all the same. `raw` is the payload as
   * received (REST's body text), else `received` (the decoded message) is what the debugger keeps.
   */
  receive(principal: Principal, payload: { decode(): EventCommand; raw?: string; received?: unknown }): void {
    let command: EventCommand;
    try {
      command = payload.decode();
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      this.reject(principal, payload.received ?? null, payload.raw, err);
      return;
    }
    this.accept(principal, command, payload.raw, payload.received);
  }

  /**
   * Keep a rejected payload, with its reason, in the debugger (written behind): its first 16 KB,
   * scrubbed as text (events/scrub.ts: by pattern, so that no payload, however nested, cut or
   * malformed, fails or keeps a secret), with the user it names, or else the e-mails, user names
   * and phones it names (privacy/names.ts), so that a purge finds it.
   */
  reject(principal: Principal, body: unknown, rawText: string | undefined, err: DomainError): void {
    const source = rawText ?? safeStringify(body);
    const cut = source.length > MAX_DEBUG_PAYLOAD;
    // Never between the halves of a surrogate pair (BSON would mangle a lone half).
    const end = cut && /[\uD800-\uDBFF]/.test(source[MAX_DEBUG_PAYLOAD - 1] ?? '') ? MAX_DEBUG_PAYLOAD - 1 : MAX_DEBUG_PAYLOAD;
    const text = scrubText(cut ? source.slice(0, end) : source);
    // A decoded body names its user as `user_id` or `user.id`; a command or an event, as `userId` or `user.id`.
    const b = (typeof body === 'object' && body !== null ? body : {}) as { user_id?: unknown; userId?: unknown; user?: { id?: unknown } | null };
    const named = [b.user_id, b.userId, b.user?.id].find((v): v is string => typeof v === 'string' && v.length > 0);
    // A body that is not JSON at all may still say whose it is (a purge must find it).
    const found = namedInText(source);
    const userId = named ?? found.userId;
    const entry: RejectedPayload = {
      id: uuid(),
      envId: principal.env.id,
      endpoint: 'track',
      reason: err.message,
      fields: err instanceof InvalidParameters ? err.fields : [],
      payload: cut ? `${text}…` : text,
      userId,
      receivedAt: this.d.clock.now(),
    };
    if (userId === null && found.names.length > 0) entry.names = found.names;
    void this.d.debuggerLog.append(entry);
  }

  /**
   * Wait until every accepted event is applied and written; refuse new ones from now on when
   * `close`. With `timeoutMs`, gives up writing after that long (the database is down).
   */
  async drain(close = true, timeoutMs?: number): Promise<void> {
    if (close) this.closed = true;
    if (this.queue.length > 0 || this.running > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await this.d.writes.flush(timeoutMs);
  }

  get pending(): number {
    return this.queue.length + this.running;
  }

  private pump(): void {
    const limit = this.d.concurrency ?? 8;
    while (!this.paused && this.running < limit && this.queue.length > 0) {
      const job = this.queue.shift() as Job;
      this.running++;
      this.ordered(job)
        .then(
          () => undefined,
          (err: unknown) => this.retry(job, err),
        )
        .finally(() => {
          this.running--;
          this.pump();
          for (const done of [...this.progress]) done();
          if (this.running === 0 && this.queue.length === 0) {
            const waiters = this.idleWaiters;
            this.idleWaiters = [];
            waiters.forEach((w) => w());
          }
        });
    }
  }

  /** Run the job after the previous job of the same user (or device token). */
  private ordered(job: Job): Promise<void> {
    const e = job.event;
    const key = `${job.principal.env.id}\u0000${e.userId ?? `token:${e.deviceToken ?? ''}`}`;
    const previous = this.chains.get(key) ?? Promise.resolve();
    const run = previous.then(() => this.apply(job));
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.chains.set(key, settled);
    void settled.then(() => {
      if (this.chains.get(key) === settled) this.chains.delete(key);
    });
    return run;
  }

  /** A job whose reads failed goes back to the front of the queue, after a pause. */
  private retry(job: Job, err: unknown): void {
    job.attempts++;
    if (job.attempts >= MAX_ATTEMPTS) {
      this.d.log.error({ err: err instanceof Error ? err.message : String(err), event: job.event.name }, 'track: could not apply an event; storing it without its state changes');
      void this.d.events.append(toStoredEvent(job.principal.env.id, enrich(job.event, this.d.intel), { action: null, risk: null, signals: {}, policy: null, deviceToken: null }));
      return;
    }
    // One line per second at most while the database is down, however many events wait.
    const now = this.d.clock.now().getTime();
    this.retriesSinceLog++;
    if (now - this.lastRetryLog >= 1000) {
      this.d.log.warn({ err: err instanceof Error ? err.message : String(err), events: this.retriesSinceLog }, 'track: applying events failed; retrying');
      this.lastRetryLog = now;
      this.retriesSinceLog = 0;
    }
    this.queue.unshift(job);
    if (!this.paused) {
      const delay = Math.min(1000, (this.d.retryBaseMs ?? 50) * 2 ** (job.attempts - 1));
      this.paused = true;
      this.d.scheduler.after(delay, () => {
        this.paused = false;
        this.pump();
      });
    }
  }

  /** Apply one feedback event: the device review state table, profile, counters, stored event. */
  private async apply({ principal, event: received }: Job): Promise<void> {
    const env = principal.env;
    let device: Device | null = null;
    let event = received;
    if (received.deviceToken) {
      device = await this.d.users.byToken(env.id, received.deviceToken);
      if (!device) {
        this.reject(principal, received, undefined, new InvalidParameters([{ field: 'device_token', message: 'unknown device token' }]));
        return;
      }
      // A device token names its user.
      if (!received.userId) event = { ...received, userId: device.userId };
    }
    const enriched = enrich(event, this.d.intel);
    const read = await readEventState(this.d, env.id, enriched);
    // A browser profile linked to one of the user's devices is that device (feedback links none).
    const { x } = resolveDevice(enriched, read);
    // From here on nothing awaits (see VerdictService).
    const userId = read.userId;
    const user = read.state ?? null;
    if (!device && userId) device = recognise(user, x.key.key);
    const at = event.occurredAt;
    const changes: DeviceChange[] = [];
    const ds = this.d.deviceService;
    switch (event.name) {
      case '$challenge.succeeded':
        if (device) changes.push({ key: device.fingerprintKey, review: { state: 'approved', at } });
        break;
      case '$review.escalated':
        if (device) changes.push({ key: device.fingerprintKey, review: { state: 'reported', at } });
        break;
      case '$password_reset.succeeded':
        if (userId) changes.push(...ds.passwordResetChanges(user, device, at));
        break;
      case '$incident.mitigated':
        if (userId) {
          // The reset recorded by an earlier event of this user counts (events of one user run in order).
          const result = ds.incidentMitigatedChanges(user, device && event.deviceToken ? device.token : null, at);
          changes.push(...result.changes);
          if (result.reason) this.reject(principal, event, undefined, new InvalidParameters([{ field: 'event', message: `$incident.mitigated had no effect: ${result.reason}` }]));
        }
        break;
      default:
        // Other feedback refreshes "last seen" and the context of a device the user already has.
        if (device && userId && !event.deviceToken && event.context.ip) changes.push({ key: device.fingerprintKey, seen: { at, context: buildContext(event, x.ip, x.ua, x.key.identity) } });
    }
    const taught = lesson({
      event,
      userId,
      kind: x.kind,
      features: x.features,
      behaviour: user?.behaviour ?? null,
      action: null,
      unknownAccount: read.unknownAccount,
      feedbackReported: true,
      ip: x.ip,
      eventId: '',
    });
    let behaviour = taught.behaviour;
    if (event.name === '$review.escalated' && device) {
      // What the reported device brought (its key and last address) is the attacker's.
      const values = { dev: device.identity === 'fingerprint' ? device.fingerprintKey : null, ip: device.context.ip };
      behaviour = { ...behaviour, hostile: { values, weight: 1, at: at.getTime() } };
    }
    if (userId && (event.userId || user)) {
      this.d.users.record(env.id, userId, { profile: profileChange({ ...x, event: { ...event, userId } }, taught.outcome.success), devices: changes, ...(behaviour ? { behaviour } : {}) });
    } else if (userId && changes.length) {
      this.d.users.record(env.id, userId, { devices: changes });
    }
    if (device && userId && event.name === '$review.escalated') {
      const reported = this.d.users.cachedDevice(env.id, userId, device.fingerprintKey) ?? device;
      void this.d.webhooks.emit({
        type: '$incident.confirmed',
        env,
        userId,
        device: reported,
        trigger: 'review_escalated',
        context: { ip: reported.context.ip, userAgent: reported.context.userAgent, location: reported.context.location },
        policy: null,
        userTraits: {},
        properties: {},
        at,
      });
    }
    recordCounters(this.d.counters, env.id, x, read, taught.outcome);
    // Feedback has no verdict, but what it lacked is kept with it, as a verdict names it.
    const missing = missingFields(event);
    const signals: Signals = missing ? { missing_fields: missing } : {};
    void this.d.events.append(toStoredEvent(env.id, { ...x, event: { ...event, userId } }, { action: null, risk: null, signals, policy: null, deviceToken: device?.token ?? null }));
  }
}

function safeStringify(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

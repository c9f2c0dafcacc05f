/**
 * The track use case (POST /v1/track and /v1/log, gRPC Track and TrackStream): feedback events,
 * answered once they are stored. Valid events go into a bounded in-memory queue that a worker
 * applies (device state table, profile, counters, stored event) through the state layer: reads
 * from its cache, changes written behind. Rejected payloads go to the per-environment debugger.
 * Events of one user are applied in order; an event whose reads fail (database unreachable) is
 * retried, not dropped, until its caller's deadline.
 *
 * Acknowledged means stored: receive() resolves only once the event and what it changed are
 * written (the state layer's group commit: one flush answers every event that arrived during the
 * one before), so a success answered to the caller survives a crash. It rejects with Unavailable
 * (→ 503 with Retry-After) when it cannot take the event: shutting down, the writes a second
 * behind, the queue full or its oldest event waiting a second, or the event not applied and
 * written by its deadline (`ackTimeoutMs`). An event refused before it was applied is not kept;
 * one whose write was still under way at its deadline may still be written (NotWrittenYet, which
 * says later whether it was: a stream waits for that; a unary caller that sends it again may
 * store it twice). A stream is held back while track is behind (streamBackpressure).
 */
import { uuid } from './crypto';
import { DomainError, InvalidParameters, Unavailable } from './errors';
import type { Device, EventInput, Principal, RejectedPayload, Signals } from './model';
import type {
  ClientTokens,
  Clock,
  CounterStore,
  Intel,
  Scheduler,
  DebuggerStore,
  DeviceChange,
  EventStore,
  UserStateStore,
  WriteQueue,
} from './ports';
import type { EventCommand } from './events/command';
import { validateEvent } from './events/parse';
import { scrubText } from './events/scrub';
import { namedInText } from './privacy/names';
import { buildContext, recognise, type DeviceService } from './devices/service';
import type { WebhookSink } from './webhooks/ports';
import {
  enrich,
  profileChange,
  readEventState,
  recordCounters,
  resolveDevice,
  toStoredEvent,
} from './verdicts/observe';
import { lesson } from './scoring/model';
import { missingFields } from './scoring/request-evidence';
import type { Caller } from './work-limiter';

const MAX_DEBUG_PAYLOAD = 16 * 1024;

/** How receive() and accept() take an event. */
export interface TakeOptions {
  /** false: taken or refused at once, never held while the writes catch up (see admitNow()). */
  hold?: boolean;
  /** The connection or call it came on: an event whose caller left before it was applied is dropped. */
  caller?: Caller;
}

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
  /** Runs the waits: the pause before a retry, the callers' deadlines. */
  scheduler: Scheduler;
  /** Reference data events are enriched with. */
  intel: Intel;
  log: TrackLog;
  /** Reads Rampart's client tokens (absent: tokens are opaque fingerprints). */
  clientTokens?: ClientTokens;
  /** Most events held in memory, waiting to be applied, before track refuses more. Default 10,000. */
  maxQueue?: number;
  /** Longest the oldest waiting event may wait before track refuses more. Default 1 s. */
  maxQueueWaitMs?: number;
  /** Longest a new event is held back while the writes are behind. Default 1 s. */
  admissionMs?: number;
  /** Longest a caller waits for its event to be applied and written. Default 2 s. */
  ackTimeoutMs?: number;
  concurrency?: number;
  /** First retry delay of an event whose reads failed (doubles, capped at 1 s). */
  retryBaseMs?: number;
}

interface Job {
  principal: Principal;
  event: EventInput;
  attempts: number;
  /** When it was queued, and when its caller stops waiting (epoch ms). */
  queuedAt: number;
  deadline: number;
  /** Set once the worker took it, and once it is applied (its changes queued for writing). */
  started: boolean;
  applied: boolean;
  /** Settled once, by done(): written, refused, or past its deadline. */
  settled: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
  cancelDeadline: () => void;
  /** Set when its caller was told NotWrittenYet: told later whether it was written after all. */
  late: ((written: boolean) => void) | null;
}

/**
 * Unavailable for an event whose caller stopped waiting while it was being applied or written:
 * it may still be stored. `written` settles once that is known: true once it is written, false
 * when it was not kept (its reads failed, or its turn came after its caller had left). A stream
 * (gRPC TrackStream) waits for it, within its own deadline, before it says which of its events it
 * took, so that its client sends again only what was not stored.
 */
export class NotWrittenYet extends Unavailable {
  constructor(
    message: string,
    readonly written: Promise<boolean>,
  ) {
    super(message);
  }
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

  constructor(private readonly d: TrackDeps) {}

  private get ackTimeoutMs(): number {
    return this.d.ackTimeoutMs ?? 2_000;
  }

  /** Why a new event is refused now (shutting down, the queue full or too slow), or null. */
  private refusal(now: number): Unavailable | null {
    if (this.closed) return new Unavailable('the service is shutting down');
    if (this.queue.length >= (this.d.maxQueue ?? 10_000))
      return new Unavailable(`track is behind (${this.queue.length} events waiting)`);
    const head = this.queue[0];
    const waited = head ? now - head.queuedAt : 0;
    if (waited >= (this.d.maxQueueWaitMs ?? 1_000))
      return new Unavailable(`track is behind (its oldest event has waited ${waited} ms)`);
    return null;
  }

  /**
   * Take one track payload as a door received it (POST /v1/track and /v1/log, Scoring.Track and
   * TrackStream). `decode` builds the event's command from the wire format; a payload it cannot
   * decode (it throws a DomainError) is kept in the debugger with its reason, as is one that
   * does not validate, and the door answers success all the same. `raw` is the payload as
   * received (REST's body text), else `received` (the decoded message) is what the debugger keeps.
   * Resolves once what it stored is written; rejects with Unavailable when it cannot be taken.
   * `hold: false`: taken or refused at once, never held while the writes catch up (a stream,
   * which keeps its events in order and has its own flow control: see admitNow()).
   */
  async receive(
    principal: Principal,
    payload: { decode(): EventCommand; raw?: string; received?: unknown },
    o: TakeOptions = {},
  ): Promise<void> {
    let command: EventCommand;
    try {
      command = payload.decode();
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      const deadline = this.d.clock.now().getTime() + this.ackTimeoutMs;
      if (o.hold === false) this.admitNow();
      else await this.admit(deadline);
      this.reject(principal, payload.received ?? null, payload.raw, err);
      return this.d.writes.durable(deadline);
    }
    return this.accept(principal, command, payload.raw, payload.received, o);
  }

  /**
   * Throws Unavailable, without waiting, where a new event would be refused now. A stream calls
   * it before each event: an event refused so leaves every later one of the stream unsent, and
   * every earlier one taken, so that "the first N were taken" stays true.
   */
  admitNow(): void {
    const refused = this.refusal(this.d.clock.now().getTime());
    if (refused) throw refused;
    this.d.writes.check();
  }

  /**
   * For a stream, before each event: why its next event should wait rather than be taken now (the
   * queue half full, or its oldest event waiting half the bound, or the writes behind), or null
   * to take it now. Waiting there, a stream holds its sender back (HTTP/2 flow control) while track
   * catches up, so that streams slow down before anything is refused. Throws Unavailable where
   * waiting cannot help (shutting down). A stream waits at most `streamWaitMs`, then asks
   * admitNow() and fails with the reason.
   */
  streamBackpressure(): string | null {
    if (this.closed) throw new Unavailable('the service is shutting down');
    const waiting = this.queue.length;
    if (waiting >= (this.d.maxQueue ?? 10_000) / 2) return `track is behind (${waiting} events waiting)`;
    const head = this.queue[0];
    const waited = head ? this.d.clock.now().getTime() - head.queuedAt : 0;
    if (waited >= (this.d.maxQueueWaitMs ?? 1_000) / 2)
      return `track is behind (its oldest event has waited ${waited} ms)`;
    if (this.d.writes.pressure !== 'ok') return 'the writes are behind';
    return null;
  }

  /** The longest a stream holds its next event back (streamBackpressure()): one acknowledgement wait. */
  get streamWaitMs(): number {
    return this.ackTimeoutMs;
  }

  /**
   * Accept a track event (a command already decoded). Never throws for an invalid one: it is kept
   * in the debugger with its reason (the payload as received: `rawText`, else `received`, else the
   * command). Resolves once written; rejects with Unavailable when it cannot be taken.
   */
  async accept(
    principal: Principal,
    command: EventCommand,
    rawText?: string,
    received?: unknown,
    o: TakeOptions = {},
  ): Promise<void> {
    const deadline = this.d.clock.now().getTime() + this.ackTimeoutMs;
    if (o.hold === false) this.admitNow();
    else await this.admit(deadline);
    return this.take(principal, command, deadline, rawText, received, o.caller);
  }

  /** Whether a new event may come in: at once, after the writes caught up a little, or Unavailable. */
  private async admit(deadline: number): Promise<void> {
    const now = this.d.clock.now().getTime();
    const refused = this.refusal(now);
    if (refused) throw refused;
    await this.d.writes.admit(Math.min(deadline, now + (this.d.admissionMs ?? 1_000)));
    const late = this.refusal(this.d.clock.now().getTime());
    if (late) throw late;
  }

  private take(
    principal: Principal,
    command: EventCommand,
    deadline: number,
    rawText?: string,
    received?: unknown,
    caller?: Caller,
  ): Promise<void> {
    let event: EventInput;
    try {
      event = validateEvent('track', command, { sandbox: principal.env.sandbox, now: this.d.clock.now() });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      this.reject(principal, received ?? command, rawText, err);
      return this.d.writes.durable(deadline);
    }
    if (this.d.clientTokens) event = this.d.clientTokens.attach(principal.env, event);
    if (caller?.gone) return Promise.reject(new Unavailable('the caller went away'));
    return new Promise<void>((resolve, reject) => {
      const job: Job = {
        principal,
        event,
        attempts: 0,
        queuedAt: this.d.clock.now().getTime(),
        deadline,
        started: false,
        applied: false,
        settled: false,
        resolve,
        reject,
        cancelDeadline: () => undefined,
        late: null,
      };
      const stopExpiry = this.d.scheduler.after(Math.max(0, deadline - this.d.clock.now().getTime()), () =>
        this.expire(job),
      );
      // A caller that goes away before its event is applied takes it away: nobody would be told.
      const stopWatching = caller?.onGone(() => this.leave(job)) ?? (() => undefined);
      job.cancelDeadline = () => {
        stopExpiry();
        stopWatching();
      };
      this.queue.push(job);
      this.pump();
    });
  }

  /** A job's caller stops waiting: one not applied yet is taken out (not stored); one applied may still be written. */
  private expire(job: Job): void {
    if (job.settled) return;
    const i = this.queue.indexOf(job);
    if (i >= 0) this.queue.splice(i, 1);
    this.done(
      job,
      job.started
        ? this.unsure(job, 'the event was not written in time; it may still be')
        : new Unavailable(
            `the event could not be applied in time (${this.ackTimeoutMs} ms); it was not kept`,
          ),
    );
    this.idleIfDone();
  }

  /** The error of a started job whose caller stops waiting: its `written` says later how it ended. */
  private unsure(job: Job, message: string): NotWrittenYet {
    return new NotWrittenYet(message, new Promise<boolean>((resolve) => (job.late = resolve)));
  }

  /**
   * A job's changes are queued for writing: its caller is answered once they are written. Past its
   * deadline the caller is told it may still be (NotWrittenYet), and that error's `written` says
   * true once they are: the write-behind queue keeps what it holds until it is written, so an
   * event applied is written unless the process ends first.
   */
  private whenWritten(job: Job): void {
    job.applied = true;
    this.d.writes.durable(job.deadline).then(
      () => {
        this.done(job);
        job.late?.(true);
      },
      (err: unknown) => {
        if (!job.settled) this.done(job, this.unsure(job, err instanceof Error ? err.message : String(err)));
        const late = job.late;
        if (!late) return;
        this.d.writes.durable().then(
          () => late(true),
          () => late(false),
        );
      },
    );
  }

  /** The caller left: a job not started yet is dropped (not stored); one started goes on. */
  private leave(job: Job): void {
    if (job.settled || job.started) return;
    const i = this.queue.indexOf(job);
    if (i >= 0) this.queue.splice(i, 1);
    this.done(job, new Unavailable('the caller went away'));
    this.idleIfDone();
  }

  /** Settle a job once: written (no error), or refused. */
  private done(job: Job, err: unknown = null): void {
    if (job.settled) return;
    job.settled = true;
    job.cancelDeadline();
    if (err === null) job.resolve();
    else job.reject(err);
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
    const end =
      cut && /[\uD800-\uDBFF]/.test(source[MAX_DEBUG_PAYLOAD - 1] ?? '')
        ? MAX_DEBUG_PAYLOAD - 1
        : MAX_DEBUG_PAYLOAD;
    const text = scrubText(cut ? source.slice(0, end) : source);
    // A decoded body names its user as `user_id` or `user.id`; a command or an event, as `userId` or `user.id`.
    const b = (typeof body === 'object' && body !== null ? body : {}) as {
      user_id?: unknown;
      userId?: unknown;
      user?: { id?: unknown } | null;
    };
    const named = [b.user_id, b.userId, b.user?.id].find(
      (v): v is string => typeof v === 'string' && v.length > 0,
    );
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
    if (this.queue.length > 0 || this.running > 0)
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await this.d.writes.flush(timeoutMs);
  }

  /** Events accepted and not yet applied. */
  get pending(): number {
    return this.queue.length + this.running;
  }

  private pump(): void {
    const limit = this.d.concurrency ?? 8;
    while (!this.paused && this.running < limit && this.queue.length > 0) {
      const job = this.queue.shift() as Job;
      job.started = true;
      this.running++;
      this.ordered(job)
        .then(
          (applied) => {
            // Skipped: its caller stopped waiting before its turn came; nothing of it is kept.
            if (!applied) return job.late?.(false);
            // Answered once written: one flush answers every event applied during the one before.
            this.whenWritten(job);
          },
          (err: unknown) => this.retry(job, err),
        )
        .finally(() => {
          this.running--;
          this.pump();
          this.idleIfDone();
        });
    }
  }

  /** Tell drain() when nothing is queued or running any more. */
  private idleIfDone(): void {
    if (this.running === 0 && this.queue.length === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      waiters.forEach((w) => w());
    }
  }

  /** Run the job after the previous job of the same user (or device token); false: skipped, as settled meanwhile. */
  private ordered(job: Job): Promise<boolean> {
    const e = job.event;
    const key = `${job.principal.env.id}\u0000${e.userId ?? `token:${e.deviceToken ?? ''}`}`;
    const previous = this.chains.get(key) ?? Promise.resolve();
    const run = previous.then(() => (job.settled ? false : this.apply(job).then(() => true)));
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

  /** A job whose reads failed goes back to the front of the queue, after a pause (until its deadline). */
  private retry(job: Job, err: unknown): void {
    job.attempts++;
    // Its caller stopped waiting: it is not retried, so nothing of it is kept.
    if (job.settled) return job.late?.(false);
    // One line per second at most while the database is down, however many events wait.
    const now = this.d.clock.now().getTime();
    this.retriesSinceLog++;
    if (now - this.lastRetryLog >= 1000) {
      this.d.log.warn(
        { err: err instanceof Error ? err.message : String(err), events: this.retriesSinceLog },
        'track: applying events failed; retrying',
      );
      this.lastRetryLog = now;
      this.retriesSinceLog = 0;
    }
    if (!(err instanceof DomainError)) {
      // Not the database being away (that is Unavailable): a fault of this event alone, which
      // retrying will not mend. It is stored without its state changes rather than lost.
      this.d.log.error(
        { err: err instanceof Error ? err.message : String(err), event: job.event.name },
        'track: could not apply an event; storing it without its state changes',
      );
      void this.d.events.append(
        toStoredEvent(job.principal.env.id, enrich(job.event, this.d.intel), {
          action: null,
          risk: null,
          signals: {},
          policy: null,
          deviceToken: null,
        }),
      );
      this.whenWritten(job);
      return;
    }
    job.started = false;
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
        this.reject(
          principal,
          received,
          undefined,
          new InvalidParameters([{ field: 'device_token', message: 'unknown device token' }]),
        );
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
          const result = ds.incidentMitigatedChanges(
            user,
            device && event.deviceToken ? device.token : null,
            at,
          );
          changes.push(...result.changes);
          if (result.reason)
            this.reject(
              principal,
              event,
              undefined,
              new InvalidParameters([
                { field: 'event', message: `$incident.mitigated had no effect: ${result.reason}` },
              ]),
            );
        }
        break;
      default:
        // Other feedback refreshes "last seen" and the context of a device the user already has.
        if (device && userId && !event.deviceToken && event.context.ip)
          changes.push({
            key: device.fingerprintKey,
            seen: { at, context: buildContext(event, x.ip, x.ua, x.key.identity) },
          });
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
      const values = {
        dev: device.identity === 'fingerprint' ? device.fingerprintKey : null,
        ip: device.context.ip,
      };
      behaviour = { ...behaviour, hostile: { values, weight: 1, at: at.getTime() } };
    }
    if (userId && (event.userId || user)) {
      this.d.users.record(env.id, userId, {
        profile: profileChange({ ...x, event: { ...event, userId } }, taught.outcome.success),
        devices: changes,
        ...(behaviour ? { behaviour } : {}),
      });
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
        context: {
          ip: reported.context.ip,
          userAgent: reported.context.userAgent,
          location: reported.context.location,
        },
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
    void this.d.events.append(
      toStoredEvent(
        env.id,
        { ...x, event: { ...event, userId } },
        { action: null, risk: null, signals, policy: null, deviceToken: device?.token ?? null },
      ),
    );
  }
}

function safeStringify(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

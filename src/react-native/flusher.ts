/**
 * Sends the queue to `POST /v1/client/events` (docs/mobile.md §3), one request at a time, in
 * batches of at most 100, oldest first, until the queue is empty or a request fails. What the
 * answer means for the batch:
 *
 * - 202: the events leave the queue;
 * - no answer (offline, or none within 30 s) or 5xx: they stay, for the next trigger;
 * - 429: they stay, and nothing is sent before `Retry-After` (a timer flushes then);
 * - 422 `invalid_request_token` (the session expired or does not verify): one new session and
 *   one retry; if that is refused too, they stay;
 * - any other 4xx: the batch is dropped, since resending it unchanged can never succeed, and a
 *   batch that blocks the head of the queue would block every event behind it.
 *
 * The flusher decides nothing about when to flush: client.ts calls `flush()` on its triggers.
 */
import { postJson } from './http';
import type { Platform, TimerHandle } from './platform';
import type { EventQueue, QueuedEvent } from './queue';
import { describeError, readJson, type Session, type SessionKeeper } from './session';
import { LIMITS, type AppEvent, type EventsRequest } from './wire';

/** Without a usable Retry-After, wait this long after a 429. */
const DEFAULT_RETRY_AFTER_MS = 60_000;
/** And never longer than this. */
const MAX_RETRY_AFTER_MS = 3_600_000;

type Outcome = 'accepted' | 'retry_later' | 'rate_limited' | 'session_refused' | 'rejected';

export interface FlusherDeps {
  platform: Platform;
  queue: EventQueue;
  sessions: SessionKeeper;
  endpoint: string;
  publishableKey: string;
  log: (message: string) => void;
}

/** The wire form of a queued event, stamped in Rampart's clock. */
export function toWire(e: QueuedEvent, currentOffset: number | null): AppEvent {
  const out: AppEvent = {
    type: e.type,
    timestamp: new Date(Math.round(e.at + (e.offset ?? currentOffset ?? 0))).toISOString(),
  };
  if (e.name !== undefined) out.name = e.name;
  if (e.user_id !== undefined) out.user_id = e.user_id;
  if (e.user_signature !== undefined) out.user_signature = e.user_signature;
  if (e.user_jwt !== undefined) out.user_jwt = e.user_jwt;
  if (e.properties !== undefined) out.properties = e.properties;
  return out;
}

function retryAfterMs(header: string | null, now: number): number {
  if (header) {
    const seconds = Number(header);
    if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, MAX_RETRY_AFTER_MS);
    const date = Date.parse(header);
    if (Number.isFinite(date)) return Math.min(Math.max(date - now, 0), MAX_RETRY_AFTER_MS);
  }
  return DEFAULT_RETRY_AFTER_MS;
}

export class Flusher {
  private running: Promise<void> | null = null;
  private blockedUntil = 0;
  private timer: TimerHandle | null = null;
  private stopped = false;

  constructor(private readonly deps: FlusherDeps) {}

  /** Sends what is queued; while a flush runs, a second call joins it (it sends what was queued meanwhile too). */
  flush(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.running ??= this.drain();
    return this.running;
  }

  /** The flush under way, if any (including one a Retry-After timer started), for `idle()`. */
  get current(): Promise<void> | null {
    return this.running;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.deps.platform.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private async drain(): Promise<void> {
    // Yield once, so that `running` is set before the loop can end and clear it.
    await Promise.resolve();
    try {
      while (!this.stopped && this.deps.platform.clock.now() >= this.blockedUntil) {
        const batch = this.deps.queue.peek(LIMITS.eventsPerRequest);
        // The check and the clearing of `running` (finally) happen in one turn: an event queued
        // after it starts a new flush rather than joining one that is about to end.
        if (batch.length === 0 || !(await this.sendBatch(batch))) break;
      }
    } finally {
      this.running = null;
    }
  }

  /** Sends one batch; true when the flush may go on with the next. */
  private async sendBatch(batch: QueuedEvent[]): Promise<boolean> {
    const { sessions, log } = this.deps;
    let session: Session;
    try {
      session = await sessions.ensure();
    } catch {
      log(`no session: ${batch.length} event(s) kept for the next flush`);
      return false;
    }
    let outcome = await this.post(session, batch);
    if (outcome === 'session_refused') {
      log('the session was refused (invalid_request_token): registering again and retrying once');
      try {
        session = await sessions.renew(session);
      } catch {
        log(`no new session: ${batch.length} event(s) kept for the next flush`);
        return false;
      }
      outcome = await this.post(session, batch);
    }
    const ids = new Set(batch.map((e) => e.id));
    switch (outcome) {
      case 'accepted':
        this.deps.queue.remove(ids);
        log(`sent ${batch.length} event(s)`);
        return true;
      case 'rejected':
        this.deps.queue.remove(ids);
        return true;
      case 'session_refused':
        log(`the new session was refused too: ${batch.length} event(s) kept for the next flush`);
        return false;
      case 'rate_limited':
      case 'retry_later':
        return false;
    }
  }

  private async post(session: Session, batch: QueuedEvent[]): Promise<Outcome> {
    const { platform, endpoint, publishableKey, log } = this.deps;
    const body: EventsRequest = {
      publishable_key: publishableKey,
      session: session.session,
      events: batch.map((e) => toWire(e, session.offset)),
    };
    let res;
    try {
      res = await postJson(platform, `${endpoint}/v1/client/events`, body);
    } catch {
      log(`network error or no answer: ${batch.length} event(s) kept for the next flush`);
      return 'retry_later';
    }
    if (res.status === 202 || res.status === 200) return 'accepted';
    if (res.status >= 500) {
      log(`Rampart answered ${res.status}: ${batch.length} event(s) kept for the next flush`);
      return 'retry_later';
    }
    if (res.status === 429) {
      const wait = retryAfterMs(res.headers.get('Retry-After'), platform.clock.now());
      this.block(wait);
      log(`rate limited: ${batch.length} event(s) kept, next flush in ${Math.round(wait / 1000)} s`);
      return 'rate_limited';
    }
    const { type, message } = describeError(res.status, await readJson(res));
    if (res.status === 422 && type === 'invalid_request_token') return 'session_refused';
    log(`${message}: ${batch.length} event(s) dropped (the server will never accept them)`);
    return 'rejected';
  }

  /** No flush before `ms` from now; one flush then. */
  private block(ms: number): void {
    const { clock } = this.deps.platform;
    this.blockedUntil = clock.now() + ms;
    if (this.timer !== null) clock.clearTimeout(this.timer);
    this.timer = clock.setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, ms);
  }
}

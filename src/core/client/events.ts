/**
 * App events (POST /v1/client/events, docs/mobile.md): what a native app's install reports of
 * itself, in batches: installs, updates, opens and closes, screens, and the users it identified.
 * Each event is kept 7 days for investigation (and removed by a purge of its user); what the risk
 * model needs is counted in one counter document per device key (`i:<key>`, population.ts), read
 * with the verdict's other counters in the same look-up: whether the install ever announced
 * itself, how many screens it showed, and how many accounts used it.
 *
 * The session (core/client/session.ts) names the install: events can only be sent for a device
 * that registered through the collector, and its key comes from the signed session, not from the
 * body. An identify may carry the user's signature (HMAC-SHA256 of the user id under the
 * environment's API secret, computed by the application's backend), or a JWT the backend signed
 * with that secret naming the user (user-jwt.ts): it is then `verified`. A `custom` event is one
 * the app names itself (Castle's `custom`), kept with its properties.
 */
import { z } from 'zod';
import { hmacSha256, safeEqual, uuid } from '../crypto';
import { InvalidRequestToken } from '../errors';
import { invalidParameters } from './problems';
import type { EnvId } from '../model';
import type { Clock, CounterStore, WriteQueue } from '../ports';
import type { RateLimiter } from '../ratelimit';
import { activityBump, activityKey } from '../scoring/population';
import { openSession, SESSION_EVENTS_GRACE_MS, type SessionClaims } from './session';
import type { PublishableKeys } from './service';
import { scrubRecord } from '../events/scrub';
import { USER_JWT_MAX_LENGTH, verifyUserJwt } from './user-jwt';

export const CLIENT_EVENT_TYPES = ['app_installed', 'app_updated', 'app_opened', 'app_closed', 'screen', 'identify', 'custom'] as const;
export type ClientEventType = (typeof CLIENT_EVENT_TYPES)[number];
/** Events one request may carry. */
export const MAX_EVENTS_PER_REQUEST = 100;
/** How long app events are kept (and how old an event may be when it arrives). */
export const CLIENT_EVENT_KEEP_MS = 7 * 86_400_000;

/** One app event, as kept. */
export interface ClientEvent {
  id: string;
  envId: EnvId;
  type: ClientEventType;
  /** The screen's name. */
  name: string | null;
  userId: string | null;
  /** An identify whose signature verified. */
  verified: boolean;
  properties: Record<string, string | number | boolean>;
  /** When it happened (Rampart's clock, a future time taken as now) and when it arrived. */
  at: Date;
  receivedAt: Date;
  deviceKey: string;
  sessionId: string;
  platform: string;
  appId: string;
  appVersion: string;
  ip: string | null;
}

export interface ClientEventSink {
  /** Keep events (written behind). */
  append(events: readonly ClientEvent[]): void;
}

export interface ClientEventsDeps {
  keys: PublishableKeys;
  /** The MAC key of sessions (the collector's). */
  key: Buffer;
  clock: Clock;
  limiter: RateLimiter;
  sink: ClientEventSink;
  counters: Pick<CounterStore, 'read' | 'bump'>;
  /** The environment's live API secrets, to verify identify signatures. */
  secrets: (env: EnvId) => Promise<string[]>;
  /** Admission, and the group commit a batch is answered after (acknowledged means stored). */
  writes: Pick<WriteQueue, 'admit' | 'check' | 'durable'>;
  /** Longest a batch waits to be written before its call answers 503. Default 2 s. */
  ackTimeoutMs?: number;
}

export interface ReceiveInput {
  /** The request body: `{publishable_key, session, events}`. */
  body: Record<string, unknown>;
  ip: string | null;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/;
const property = z.union([z.string().max(256, 'strings at most 256 characters'), z.number().finite(), z.boolean()], { errorMap: () => ({ message: 'must be strings of at most 256 characters, numbers or booleans' }) });
const eventSchema = z
  .object(
    {
      type: z.enum(CLIENT_EVENT_TYPES, { errorMap: () => ({ message: `must be one of ${CLIENT_EVENT_TYPES.join(', ')}` }) }),
      timestamp: z.string({ required_error: 'is required', invalid_type_error: 'must be an ISO 8601 time' }).max(40).regex(ISO, 'must be an ISO 8601 time'),
      name: z.string({ invalid_type_error: 'must be a string of at most 128 characters' }).min(1, 'must not be empty').max(128, 'must be a string of at most 128 characters').nullish(),
      user_id: z.string({ invalid_type_error: 'must be a string of at most 128 characters' }).min(1, 'must not be empty').max(128, 'must be a string of at most 128 characters').nullish(),
      user_signature: z.string({ invalid_type_error: 'must be hex' }).regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits (HMAC-SHA256)').nullish(),
      user_jwt: z
        .string({ invalid_type_error: 'must be a JWT' })
        .max(USER_JWT_MAX_LENGTH, `must be a JWT of at most ${USER_JWT_MAX_LENGTH} characters`)
        .regex(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'must be a JWT (three base64url parts)')
        .nullish(),
      properties: z.record(property, { invalid_type_error: 'must be an object' }).refine((p) => Object.keys(p).length <= 20, 'at most 20 members').nullish(),
    },
    { invalid_type_error: 'must be an object' },
  )
  .strict()
  .superRefine((e, ctx) => {
    if (e.type === 'screen' && !e.name) ctx.addIssue({ code: 'custom', path: ['name'], message: 'is required for a screen' });
    if (e.type === 'custom' && !e.name) ctx.addIssue({ code: 'custom', path: ['name'], message: 'is required for a custom event' });
    if (e.type === 'identify' && !e.user_id) ctx.addIssue({ code: 'custom', path: ['user_id'], message: 'is required for an identify' });
  });
const eventsSchema = z.array(eventSchema, { required_error: 'is required', invalid_type_error: 'must be a list' }).min(1, 'must not be empty').max(MAX_EVENTS_PER_REQUEST, `must be a list of at most ${MAX_EVENTS_PER_REQUEST} events`);
/** The body of POST /v1/client/events (also the OpenAPI document's). */
export const clientEventsSchema = z
  .object({
    publishable_key: z.string({ required_error: 'is required', invalid_type_error: 'must be a string' }),
    session: z.string({ required_error: 'is required', invalid_type_error: 'must be a string' }).max(8192, 'must be at most 8192 characters'),
    events: eventsSchema,
  })
  .strict();

type ParsedEvent = z.infer<typeof eventSchema>;

export class ClientEventsService {
  private readonly secretCache = new Map<EnvId, { secrets: Promise<string[]>; until: number }>();

  constructor(private readonly d: ClientEventsDeps) {}

  /**
   * Take one batch of an install's events; answers how many were kept (older than a week:
   * dropped), once they are written. Rejects with Unavailable (nothing kept) while the writes are
   * a second behind, or when the batch was not written by its deadline (it may still be).
   */
  async receive(input: ReceiveInput): Promise<{ accepted: number }> {
    const env = await this.d.keys.resolve(input.body.publishable_key);
    const now = this.d.clock.now();
    const deadline = now.getTime() + (this.d.ackTimeoutMs ?? 2_000);
    this.d.limiter.take(`${env.id}|${input.ip ?? '-'}`, now.getTime());
    const { session: sent, events } = readBody(input.body);
    const opened = openSession(this.d.key, sent, env.id, now.getTime(), SESSION_EVENTS_GRACE_MS);
    if (!opened.ok) throw new InvalidRequestToken('session', `does not verify (${opened.reason}): register again`);
    const session = opened.claims;
    const signed = events.some((e) => e.type === 'identify' && (e.user_signature || e.user_jwt));
    const secrets = signed ? await this.secrets(env.id, now.getTime()) : [];

    const kept: ClientEvent[] = [];
    for (const e of events) {
      const at = Math.min(Date.parse(e.timestamp), now.getTime());
      if (!Number.isFinite(at) || now.getTime() - at > CLIENT_EVENT_KEEP_MS) continue;
      const userId = e.user_id ?? null;
      kept.push({
        id: uuid(),
        envId: env.id,
        type: e.type,
        name: e.name ?? null,
        userId,
        verified: e.type === 'identify' && userId !== null && verifiedUser(secrets, userId, e, now.getTime()),
        // Kept by the one scrubbing rule, as an event's properties are (events/scrub.ts).
        properties: e.properties ? scrubRecord(e.properties) : {},
        at: new Date(at),
        receivedAt: now,
        deviceKey: session.dk,
        sessionId: session.sid,
        platform: session.p,
        appId: session.app,
        appVersion: session.av,
        ip: input.ip,
      });
    }
    if (kept.length === 0) return { accepted: 0 };
    await this.d.writes.admit(Math.min(deadline, now.getTime() + 1000));
    await this.count(env.id, session, kept);
    // Nothing recorded past the bound by a batch admitted before the writes fell behind.
    this.d.writes.check();
    this.d.sink.append(kept);
    await this.d.writes.durable(deadline);
    return { accepted: kept.length };
  }

  /** What the model reads of an install: one counter document of its device key (population.ts). */
  private async count(env: EnvId, session: SessionClaims, events: readonly ClientEvent[]): Promise<void> {
    const snapshots = await this.d.counters.read(env, [activityKey(session.dk)]);
    const snapshot = snapshots?.get(activityKey(session.dk));
    this.d.counters.bump(env, activityBump(session.dk, snapshot, events.map((e) => ({ type: e.type, at: e.at.getTime(), userId: e.type === 'identify' ? e.userId : null }))));
  }

  private secrets(env: EnvId, now: number): Promise<string[]> {
    const hit = this.secretCache.get(env);
    if (hit && hit.until > now) return hit.secrets;
    const secrets = this.d.secrets(env);
    if (this.secretCache.size > 1000) this.secretCache.clear();
    this.secretCache.set(env, { secrets, until: now + 5000 });
    secrets.catch(() => this.secretCache.delete(env));
    return secrets;
  }
}

/** Whether an identify's signature or JWT vouches for its user under one of the live secrets. */
function verifiedUser(secrets: readonly string[], userId: string, e: Pick<ParsedEvent, 'user_signature' | 'user_jwt'>, now: number): boolean {
  if (e.user_signature && verifies(secrets, userId, e.user_signature)) return true;
  return !!e.user_jwt && verifyUserJwt(secrets, e.user_jwt, now) === userId;
}

/** Whether a user signature is HMAC-SHA256(user id) under one of the live secrets (constant time). */
function verifies(secrets: readonly string[], userId: string, signature: string): boolean {
  let ok = false;
  for (const secret of secrets) if (safeEqual(hmacSha256(secret, userId).toString('hex'), signature.toLowerCase())) ok = true;
  return ok;
}

function readBody(value: Record<string, unknown>): { session: string; events: ParsedEvent[] } {
  const r = clientEventsSchema.safeParse(value);
  if (r.success) return r.data;
  // Named by the event and its member (`events.3.name`), at most 20.
  throw invalidParameters(r.error.issues, { prefix: null, depth: () => 3, limit: 20 });
}

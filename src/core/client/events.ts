/**
 * Client events (POST /v1/client/events): what a native app's install reports of itself, in
 * batches: installs, updates, opens and closes, screens, custom events and the users it identified
 * (docs/mobile.md); and what a page reports with the browser client's castle-js 2.x names: page
 * views, form submissions and custom events, each for the user the page names (docs/client.md).
 * Each event is kept 7 days for investigation (and removed by a purge of its user); what the risk
 * model needs is counted in one counter document per device key (`i:<key>`, population.ts), read
 * with the verdict's other counters in the same look-up: whether the install ever announced
 * itself, how many screens it showed, and how many accounts used it.
 *
 * The session (core/client/session.ts) names the install, and a page's request token
 * (core/client/token.ts, accepted for events for an hour from its issue) the browser: events can
 * only be sent for a device that went through the collector, and its key comes from what Rampart
 * signed, not from the body. A page's events are checked against the environment's origins, as
 * its tokens are. An event naming a user may carry the user's signature (HMAC-SHA256 of the user
 * id under the environment's API secret, computed by the application's backend) or the backend's
 * JWT of the user (HS256 under that secret, castle-js's `userJwt`): it is then `verified`.
 */
import { z } from 'zod';
import { hmacSha256, safeEqual, uuid } from '../crypto';
import { InvalidParameters, InvalidRequestToken } from '../errors';
import { invalidParameters } from './problems';
import type { EnvId, Environment } from '../model';
import type { Clock, CounterStore, WriteQueue } from '../ports';
import type { RateLimiter } from '../ratelimit';
import { activityBump, activityKey } from '../scoring/population';
import { openSession, SESSION_EVENTS_GRACE_MS, type SessionClaims } from './session';
import { ClientService, originRefused, type PublishableKeys } from './service';
import { decodeClaims, openClientToken } from './token';
import { scrubRecord } from '../events/scrub';
import { USER_JWT_MAX_LENGTH, userIdOfJwt, verifyUserJwt } from './user-jwt';
import { DEFAULT_MAX_EVENT_AGE_MS } from '../verdicts/evaluate';

/** What an app's install sends (with its session). */
export const APP_EVENT_TYPES = [
  'app_installed',
  'app_updated',
  'app_opened',
  'app_closed',
  'screen',
  'identify',
  'custom',
] as const;
/** What a page sends (with a request token): castle-js 2.x's `page`, `form` and `custom`. */
export const BROWSER_EVENT_TYPES = ['page', 'form', 'custom'] as const;
export const CLIENT_EVENT_TYPES = [
  'app_installed',
  'app_updated',
  'app_opened',
  'app_closed',
  'screen',
  'identify',
  'page',
  'form',
  'custom',
] as const;
export type ClientEventType = (typeof CLIENT_EVENT_TYPES)[number];
/** How long after its issue a page's request token may send events (a page left open keeps sending page views). */
export const BROWSER_EVENTS_TOKEN_MS = 3_600_000;
/** Events one request may carry. */
export const MAX_EVENTS_PER_REQUEST = 100;
/** How long client events are kept after they arrive. */
export const CLIENT_EVENT_KEEP_MS = 7 * 86_400_000;

/** One app event, as kept. */
export interface ClientEvent {
  id: string;
  envId: EnvId;
  type: ClientEventType;
  /** The screen's, page's, form's or custom event's name. */
  name: string | null;
  /** A page view's address and referrer, without query or fragment (absent: an app's event). */
  url?: string | null;
  referrer?: string | null;
  userId: string | null;
  /** An identify whose signature verified. */
  verified: boolean;
  properties: Record<string, string | number | boolean>;
  /** When it happened (Rampart's clock, a future time taken as now) and when it arrived. */
  at: Date;
  receivedAt: Date;
  deviceKey: string;
  /** The app's session id, or the id of the page's request token. */
  sessionId: string;
  /** `android`, `ios`, or `web` for a page. */
  platform: string;
  /** The app's id, or the page's origin. */
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
  /**
   * The oldest event time taken (older: dropped), the verdicts' bound (RAMPART_MAX_EVENT_AGE_DAYS,
   * default a year): an app's events and a verdict's `timestamp` keep one clock, so that history
   * replayed or backfilled through both keeps its app events.
   */
  maxEventAgeMs?: number;
}

export interface ReceiveInput {
  /** The request body: `{publishable_key, session | request_token, events}`. */
  body: Record<string, unknown>;
  ip: string | null;
  /** The page's `Origin` header (null: none, as from an app). */
  origin?: string | null;
}

const URL_PATTERN = /^https?:\/\/[^\s?#]+$/;
const JWT_PATTERN = /^[A-Za-z0-9_-]{1,1024}\.[A-Za-z0-9_-]{1,2048}\.[A-Za-z0-9_-]{0,512}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/;
const property = z.union(
  [z.string().max(256, 'strings at most 256 characters'), z.number().finite(), z.boolean()],
  { errorMap: () => ({ message: 'must be strings of at most 256 characters, numbers or booleans' }) },
);
const eventSchema = z
  .object(
    {
      type: z.enum(CLIENT_EVENT_TYPES, {
        errorMap: () => ({ message: `must be one of ${CLIENT_EVENT_TYPES.join(', ')}` }),
      }),
      timestamp: z
        .string({ required_error: 'is required', invalid_type_error: 'must be an ISO 8601 time' })
        .max(40)
        .regex(ISO, 'must be an ISO 8601 time'),
      name: z
        .string({ invalid_type_error: 'must be a string of at most 128 characters' })
        .min(1, 'must not be empty')
        .max(128, 'must be a string of at most 128 characters')
        .nullish(),
      user_id: z
        .string({ invalid_type_error: 'must be a string of at most 128 characters' })
        .min(1, 'must not be empty')
        .max(128, 'must be a string of at most 128 characters')
        .nullish(),
      user_signature: z
        .string({ invalid_type_error: 'must be hex' })
        .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits (HMAC-SHA256)')
        .nullish(),
      user_jwt: z
        .string({ invalid_type_error: 'must be a JWT' })
        .max(USER_JWT_MAX_LENGTH, `must be a JWT of at most ${USER_JWT_MAX_LENGTH} characters`)
        .regex(JWT_PATTERN, 'must be a JWT (three base64url parts)')
        .nullish(),
      url: z
        .string({ invalid_type_error: 'must be an http(s) address' })
        .max(2048, 'must be at most 2048 characters')
        .regex(URL_PATTERN, 'must be an http(s) address without query or fragment')
        .nullish(),
      referrer: z
        .string({ invalid_type_error: 'must be an http(s) address' })
        .max(2048, 'must be at most 2048 characters')
        .regex(URL_PATTERN, 'must be an http(s) address without query or fragment')
        .nullish(),
      properties: z
        .record(property, { invalid_type_error: 'must be an object' })
        .refine((p) => Object.keys(p).length <= 20, 'at most 20 members')
        .refine(
          (p) => Object.keys(p).every((k) => k.length >= 1 && k.length <= 64),
          'member names of 1 to 64 characters',
        )
        .nullish(),
    },
    { invalid_type_error: 'must be an object' },
  )
  .strict()
  .superRefine((e, ctx) => {
    if (e.type === 'screen' && !e.name)
      ctx.addIssue({ code: 'custom', path: ['name'], message: 'is required for a screen' });
    if (e.type === 'identify' && !e.user_id)
      ctx.addIssue({ code: 'custom', path: ['user_id'], message: 'is required for an identify' });
    if ((e.type === 'form' || e.type === 'custom') && !e.name)
      ctx.addIssue({ code: 'custom', path: ['name'], message: `is required for a ${e.type} event` });
    if (e.type !== 'page' && (e.url || e.referrer))
      ctx.addIssue({
        code: 'custom',
        path: [e.url ? 'url' : 'referrer'],
        message: 'belongs to a page event',
      });
  });
const eventsSchema = z
  .array(eventSchema, { required_error: 'is required', invalid_type_error: 'must be a list' })
  .min(1, 'must not be empty')
  .max(MAX_EVENTS_PER_REQUEST, `must be a list of at most ${MAX_EVENTS_PER_REQUEST} events`);
/** The body of POST /v1/client/events (also the OpenAPI document's). */
export const clientEventsSchema = z
  .object({
    publishable_key: z.string({ required_error: 'is required', invalid_type_error: 'must be a string' }),
    /** An app's session (docs/mobile.md); a page sends `request_token` instead. */
    session: z
      .string({ invalid_type_error: 'must be a string' })
      .max(8192, 'must be at most 8192 characters')
      .optional(),
    /** A request token the collector gave the page (docs/client.md); an app sends `session` instead. */
    request_token: z
      .string({ invalid_type_error: 'must be a string' })
      .max(4096, 'must be at most 4096 characters')
      .optional(),
    events: eventsSchema,
  })
  .strict();

type ParsedEvent = z.infer<typeof eventSchema>;

export class ClientEventsService {
  private readonly secretCache = new Map<EnvId, { secrets: Promise<string[]>; until: number }>();

  constructor(private readonly d: ClientEventsDeps) {}

  /**
   * Take one batch of an install's events; answers, once they are written, how many were kept
   * (`accepted`) and how many were too old to keep (`dropped`), and of the kept ones how many
   * carried a user's signature or JWT (`signed`) and how many of those verified (`verified`).
   * Rejects with Unavailable (nothing kept) while the writes are a second behind, or when the
   * batch was not written by its deadline (it may still be).
   */
  async receive(input: ReceiveInput): Promise<ReceivedEvents> {
    const env = await this.d.keys.resolve(input.body.publishable_key);
    const now = this.d.clock.now();
    const deadline = now.getTime() + (this.d.ackTimeoutMs ?? 2_000);
    this.d.limiter.take(`${env.id}|${input.ip ?? '-'}`, now.getTime());
    const { session: sent, request_token: token, events } = readBody(input.body);
    const device = this.device(env, sent, token, input, now.getTime());
    // What each kind of client sends: an app its lifecycle, a page castle-js's page, form and custom events.
    const allowed: readonly string[] = device.platform === 'web' ? BROWSER_EVENT_TYPES : APP_EVENT_TYPES;
    const wrong = events.flatMap((e, i) =>
      allowed.includes(e.type)
        ? []
        : [
            {
              field: `events.${i}.type`,
              message: `must be one of ${allowed.join(', ')} (${device.platform === 'web' ? 'a page' : 'an app'})`,
            },
          ],
    );
    if (wrong.length > 0) throw new InvalidParameters(wrong.slice(0, 20));
    const signed = events.some(signedEvent);
    const secrets = signed ? await this.secrets(env.id, now.getTime()) : [];

    const kept: ClientEvent[] = [];
    const answer: ReceivedEvents = { accepted: 0, dropped: 0, signed: 0, verified: 0 };
    for (const e of events) {
      // When it happened, on the verdicts' clock; a time ahead of it counts as now.
      const at = Math.min(Date.parse(e.timestamp), now.getTime());
      if (!Number.isFinite(at) || now.getTime() - at > (this.d.maxEventAgeMs ?? DEFAULT_MAX_EVENT_AGE_MS)) {
        answer.dropped += 1;
        continue;
      }
      const jwt = e.user_jwt ? openUserJwt(secrets, e.user_jwt, now.getTime()) : null;
      // The event's own user id when it names one (an identify), else the JWT's.
      const userId = e.user_id ?? jwt?.userId ?? null;
      // Vouched for by a signature of its user, or by a JWT that verifies and names that user.
      const verified =
        userId !== null &&
        ((jwt !== null && jwt.verified && jwt.userId === userId) ||
          (!!e.user_signature && verifies(secrets, userId, e.user_signature)));
      if (signedEvent(e)) {
        answer.signed += 1;
        if (verified) answer.verified += 1;
      }
      kept.push({
        id: uuid(),
        envId: env.id,
        type: e.type,
        name: e.name ?? null,
        ...(device.platform === 'web' ? { url: e.url ?? null, referrer: e.referrer ?? null } : {}),
        userId,
        verified,
        // Kept by the one scrubbing rule, as an event's properties are (events/scrub.ts).
        properties: e.properties ? scrubRecord(e.properties) : {},
        at: new Date(at),
        receivedAt: now,
        deviceKey: device.dk,
        sessionId: device.sid,
        platform: device.platform,
        appId: device.appId,
        appVersion: device.appVersion,
        ip: input.ip,
      });
    }
    answer.accepted = kept.length;
    if (kept.length === 0) return answer;
    await this.d.writes.admit(Math.min(deadline, now.getTime() + 1000));
    await this.count(env.id, device.dk, kept);
    // Nothing recorded past the bound by a batch admitted before the writes fell behind.
    this.d.writes.check();
    this.d.sink.append(kept);
    await this.d.writes.durable(deadline);
    return answer;
  }

  /**
   * The device the events are for: an app's session, or a page's request token (an hour from its
   * issue, from an origin the environment allows). Throws InvalidParameters without exactly one,
   * InvalidRequestToken when it does not verify, Forbidden for another origin.
   */
  private device(
    env: Environment,
    session: string | undefined,
    token: string | undefined,
    input: ReceiveInput,
    now: number,
  ): SentBy {
    if ((session === undefined) === (token === undefined))
      throw new InvalidParameters([
        {
          field: session === undefined ? 'session' : 'request_token',
          message: 'send session (an app) or request_token (a page): exactly one',
        },
      ]);
    if (session !== undefined) {
      const opened = openSession(this.d.key, session, env.id, now, SESSION_EVENTS_GRACE_MS);
      if (!opened.ok)
        throw new InvalidRequestToken('session', `does not verify (${opened.reason}): register again`);
      const c: SessionClaims = opened.claims;
      return { dk: c.dk, sid: c.sid, platform: c.p, appId: c.app, appVersion: c.av };
    }
    const origin = input.origin ?? null;
    if (!ClientService.originAllowed(env, origin)) throw originRefused(env, origin);
    const opened = openClientToken(this.d.key, token ?? '', env.id, now, BROWSER_EVENTS_TOKEN_MS);
    if (!opened.ok)
      throw new InvalidRequestToken(
        'request_token',
        `does not verify (${opened.reason}): ask the collector for a new token`,
      );
    return {
      dk: opened.claims.dk,
      sid: opened.claims.jti,
      platform: 'web',
      appId: origin ?? '',
      appVersion: '',
    };
  }

  /** What the model reads of a device: one counter document of its device key (population.ts). */
  private async count(env: EnvId, deviceKey: string, events: readonly ClientEvent[]): Promise<void> {
    const snapshots = await this.d.counters.read(env, [activityKey(deviceKey)]);
    const snapshot = snapshots?.get(activityKey(deviceKey));
    // The users an app identified, and the users a page's events named.
    this.d.counters.bump(
      env,
      activityBump(
        deviceKey,
        snapshot,
        events.map((e) => ({
          type: e.type,
          at: e.at.getTime(),
          userId: e.type === 'identify' || e.platform === 'web' ? e.userId : null,
        })),
      ),
    );
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

/** What a batch came to (the 202's body). */
export interface ReceivedEvents {
  /** Events kept. */
  accepted: number;
  /** Events too old to keep. */
  dropped: number;
  /** Kept events that named their user with a signature or a JWT. */
  signed: number;
  /** Of those, the ones whose signature or JWT verified under one of the environment's live API secrets. */
  verified: number;
}

/** Whether an event asks for its user to be verified: a signature of its user id, or a JWT. */
const signedEvent = (e: ParsedEvent): boolean => Boolean((e.user_id && e.user_signature) || e.user_jwt);

/** The device a batch's events are for, from what Rampart signed (a session or a request token). */
interface SentBy {
  dk: string;
  sid: string;
  platform: string;
  appId: string;
  appVersion: string;
}

/**
 * The user a backend's JWT names (castle-js's and Castle's mobile SDKs' `userJwt`, user-jwt.ts:
 * HS256 under the environment's API secret, the user's `id` or `sub` among its claims), and
 * whether it verifies under one of the live secrets within its `exp` and `nbf`. userId null: not
 * HS256, or no user in it.
 */
export function openUserJwt(
  secrets: readonly string[],
  jwt: string,
  now: number,
): { userId: string | null; verified: boolean } {
  const head = jwt.split('.')[0];
  const header = head ? decodeClaims(head) : null;
  const userId = header?.alg === 'HS256' ? userIdOfJwt(jwt) : null;
  if (userId === null) return { userId: null, verified: false };
  return { userId, verified: verifyUserJwt(secrets, jwt, now) === userId };
}

/** Whether a user signature is HMAC-SHA256(user id) under one of the live secrets (constant time). */
function verifies(secrets: readonly string[], userId: string, signature: string): boolean {
  let ok = false;
  for (const secret of secrets)
    if (safeEqual(hmacSha256(secret, userId).toString('hex'), signature.toLowerCase())) ok = true;
  return ok;
}

function readBody(value: Record<string, unknown>): {
  session?: string;
  request_token?: string;
  events: ParsedEvent[];
} {
  const r = clientEventsSchema.safeParse(value);
  if (r.success) return r.data;
  // Named by the event and its member (`events.3.name`), at most 20.
  throw invalidParameters(r.error.issues, { prefix: null, depth: () => 3, limit: 20 });
}

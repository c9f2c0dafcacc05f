/**
 * The clients' server side: the collector (publishable key checked, with the page's origin for a
 * browser or the app's id for a native app; the browser's components, or the phone's, turned into
 * a device key and evidence; a signed single-use token answered, and to an app a session it mints
 * its own tokens from), and the reading of such a token when an application forwards it to a
 * verdict or to track.
 */
import { randomToken, shortHash } from '../crypto';
import { Forbidden, InvalidParameters, Unauthorized } from '../errors';
import type { AttestationOutcome, ClientTokenUse, Environment, EventInput, MobileClient } from '../model';
import { AttestationVerifier, decodeOutcome, encodeOutcome } from './attestation/verifier';
import type { Clock, EnvironmentStore } from '../ports';
import type { RateLimiter } from '../ratelimit';
import { automationOf, deviceKeyOf, machineVectorOf, primaryLanguageOf, readComponents } from './components';
import {
  APP_ID,
  localeLanguage,
  mobileDeviceKey,
  mobileMachineKey,
  mobileOs,
  readMobileComponents,
  type MobileComponents,
} from './mobile';
import {
  isMobileToken,
  mintMobileToken,
  openMobileToken,
  SESSION_TTL_MS,
  sessionKey,
  signSession,
  type SessionClaims,
} from './session';
import { CLIENT_TOKEN_TTL_MS, isClientToken, openClientToken, signClientToken } from './token';
import {
  behaviourClaim,
  behaviourOfClaim,
  CHALLENGE_TTL_MS,
  challengeKey,
  DEFAULT_POW_BITS,
  issueChallenge,
  MAX_POW_BITS,
  openChallenge,
  proofHolds,
  readBehaviour,
  readProof,
  RedeemedChallenges,
  type Behaviour,
  type IssuedChallenge,
} from './proof';

/** One collection, kept for investigation (what the browser or the phone showed, and what it was given). */
export interface ClientObservation {
  id: string;
  envId: string;
  at: Date;
  /** A browser's collection, or a native app's session. */
  kind: 'browser' | 'mobile';
  deviceKey: string;
  automation: string[];
  origin: string | null;
  ip: string | null;
  userAgent: string;
  components: Record<string, unknown>;
  /** A browser's proof of work (the difficulty proved; absent or null: none) and what its page reported of itself. */
  proof?: { bits: number } | null;
  behaviour?: Behaviour | null;
}

/** The fingerprint of an event whose client token verified: the device key the token carries. */
const tokenFingerprint = (deviceKey: string): string => `rp:${deviceKey}`;

/** What a publishable key looks like (anything else is unknown without a look-up). */
export const PUBLISHABLE_KEY_PATTERN = /^pk_[A-Za-z0-9_-]{8,64}$/;

export interface ClientObservationSink {
  record(o: ClientObservation): void;
}

export interface ClientDeps {
  environments: Pick<EnvironmentStore, 'byPublishableKey'>;
  /** The MAC key of tokens (Sealer.macKey('client-token')). */
  key: Buffer;
  clock: Clock;
  observations: ClientObservationSink;
  /** Collections per publishable key and source address. */
  limiter: RateLimiter;
  /** How long an environment looked up by its publishable key is reused. */
  cacheMs?: number;
  /** The proof of work's difficulty, in leading zero bits (default DEFAULT_POW_BITS; 0: trivial). */
  powBits?: number;
  /** Verifies apps' platform attestations (absent: none is verified, each kept as carried). */
  attestation?: AttestationVerifier;
}

export interface CollectInput {
  publishableKey: unknown;
  /** The page's `Origin` header (null when the browser sent none). */
  origin: string | null;
  ip: string | null;
  /** A browser's components (undefined: none sent). */
  components?: unknown;
  /** A native app's `mobile` object (undefined: none sent). */
  mobile?: unknown;
  /** A browser's answer to a challenge, `{challenge, nonce}` (undefined: none sent: the one-step flow). */
  proof?: unknown;
  /** What the browser's page reported of itself (undefined: nothing). */
  behaviour?: unknown;
}

export interface ChallengeInput {
  publishableKey: unknown;
  origin: string | null;
  ip: string | null;
  /** A native app's id, when the challenge is for an app's attestation (docs/mobile.md, "Attestation"): checked against the environment's apps instead of the origin. */
  app?: unknown;
}

export interface Collected {
  token: string;
  expiresInSeconds: number;
  /** For a native app: the session it mints its own tokens from (docs/mobile.md). */
  session?: { session: string; key: string; expiresInSeconds: number; serverTime: number };
}

/**
 * Environments by publishable key, each look-up reused for a few seconds (the collector and the
 * app events endpoint are called by every page and app, never with a secret).
 */
export class PublishableKeys {
  private readonly envs = new Map<string, { env: Environment | null; until: number }>();

  constructor(
    private readonly d: {
      environments: Pick<EnvironmentStore, 'byPublishableKey'>;
      clock: Clock;
      cacheMs?: number;
    },
  ) {}

  /** The enabled environment a publishable key belongs to; Unauthorized otherwise. */
  async resolve(publishableKey: unknown): Promise<Environment> {
    const pk = typeof publishableKey === 'string' ? publishableKey : '';
    const env = PUBLISHABLE_KEY_PATTERN.test(pk) ? await this.lookup(pk) : null;
    if (!env || !env.enabled) throw new Unauthorized('unknown publishable key');
    return env;
  }

  private async lookup(pk: string): Promise<Environment | null> {
    const now = this.d.clock.now().getTime();
    const hit = this.envs.get(pk);
    if (hit && hit.until > now) return hit.env;
    const env = await this.d.environments.byPublishableKey(pk);
    if (this.envs.size > 10_000) this.envs.clear();
    this.envs.set(pk, { env, until: now + (this.d.cacheMs ?? 5000) });
    return env;
  }
}

/** Why a challenge is refused, as a 422 names it. */
const CHALLENGE_REFUSED = {
  malformed: 'is not a challenge of this collector',
  forged: 'is not a challenge of this collector',
  expired: 'has expired: ask for another',
  not_yet_valid: "is not valid yet (issued ahead of this server's clock: the servers' clocks disagree)",
  other_environment: 'was issued for another environment',
} as const;

export class ClientService {
  readonly keys: PublishableKeys;
  private readonly challengeKey: Buffer;
  private readonly redeemed = new RedeemedChallenges();
  private readonly powBits: number;

  constructor(private readonly d: ClientDeps) {
    this.keys = new PublishableKeys(d);
    this.challengeKey = challengeKey(d.key);
    this.powBits = d.powBits ?? DEFAULT_POW_BITS;
    if (!Number.isInteger(this.powBits) || this.powBits < 0 || this.powBits > MAX_POW_BITS)
      throw new Error(
        `the proof of work's difficulty must be a whole number of bits from 0 to ${MAX_POW_BITS}`,
      );
  }

  /**
   * A challenge for a browser's next token (docs/client.md, "What a token costs"): the publishable key
   * and the page's origin checked as for a token, rate-limited apart from the tokens.
   */
  async challenge(input: ChallengeInput): Promise<IssuedChallenge> {
    const env = await this.keys.resolve(input.publishableKey);
    if (input.app !== undefined && input.app !== null) {
      // An app's challenge, for its attestation: the app is checked as for its session.
      if (typeof input.app !== 'string' || !APP_ID.test(input.app))
        throw new InvalidParameters([{ field: 'app', message: 'must be a package name or bundle id' }]);
      if (!ClientService.appAllowed(env, input.app))
        throw new Forbidden(
          env.clientApps?.length
            ? `app ${input.app} is not allowed for this publishable key`
            : 'this environment allows no apps yet (rampart env set-apps)',
        );
    } else this.checkOrigin(env, input.origin);
    const now = this.d.clock.now().getTime();
    this.d.limiter.take(`${env.id}|${input.ip ?? '-'}|challenge`, now);
    const c = issueChallenge(this.challengeKey, env.id, this.powBits, now);
    return {
      challenge: c.challenge,
      salt: c.salt,
      difficulty: c.difficulty,
      expiresInSeconds: c.expiresInSeconds,
    };
  }

  private checkOrigin(env: Environment, origin: string | null): void {
    if (!ClientService.originAllowed(env, origin)) throw originRefused(env, origin);
  }

  /**
   * A proof checked (null when none was sent): its challenge signed for this environment and not
   * expired, redeemed now (a challenge buys one token, whether its nonce is right or not: the
   * collector is no oracle to search with), and its nonce answering it.
   */
  private checkProof(
    env: Environment,
    proof: { challenge: string; nonce: string } | null,
    now: number,
  ): { bits: number; challenge: string } | null {
    if (!proof) return null;
    const opened = openChallenge(this.challengeKey, proof.challenge, env.id, now);
    if (!opened.ok) {
      const why = CHALLENGE_REFUSED[opened.reason];
      throw new InvalidParameters([{ field: 'proof.challenge', message: why }]);
    }
    const c = opened.claims;
    if (!this.redeemed.redeem(c.cid, c.iat + CHALLENGE_TTL_MS, now))
      throw new InvalidParameters([
        { field: 'proof.challenge', message: 'was already used: ask for another' },
      ]);
    if (!proofHolds(c.s, proof.nonce, c.d))
      throw new InvalidParameters([
        {
          field: 'proof.nonce',
          message: `does not answer the challenge (SHA-256 of the salt and the nonce must begin with ${c.d} zero bits)`,
        },
      ]);
    return { bits: c.d, challenge: c.cid };
  }

  /**
   * The origins a page may collect from: the environment's list; in a sandbox, any when the list
   * is empty. A request without an `Origin` is no page's (a browser sends one with every
   * cross-origin request and every POST): a native or server-side client, which the list does not
   * govern, and which could as well send any origin it likes. It is taken as such a client.
   */
  static originAllowed(env: Environment, origin: string | null): boolean {
    if (origin === null) return true;
    const allowed = env.clientOrigins ?? [];
    if (allowed.length === 0) return env.sandbox;
    return origin !== null && allowed.includes(origin);
  }

  /** The apps that may register sessions: the environment's list; in a sandbox, any when the list is empty. */
  static appAllowed(env: Environment, appId: string): boolean {
    const allowed = env.clientApps ?? [];
    if (allowed.length === 0) return env.sandbox;
    return allowed.includes(appId);
  }

  async collect(input: CollectInput): Promise<Collected> {
    const env = await this.keys.resolve(input.publishableKey);
    if (input.mobile !== undefined && input.mobile !== null) {
      if (input.components !== undefined && input.components !== null)
        throw new InvalidParameters([
          { field: 'mobile', message: 'send components (a browser) or mobile (an app), not both' },
        ]);
      for (const field of ['proof', 'behaviour'] as const) {
        if (input[field] !== undefined && input[field] !== null)
          throw new InvalidParameters([
            {
              field,
              message: "comes with a browser's components, not with mobile (an app's session proves itself)",
            },
          ]);
      }
      return await this.collectMobile(env, input);
    }
    this.checkOrigin(env, input.origin);
    const now = this.d.clock.now();
    this.d.limiter.take(`${env.id}|${input.ip ?? '-'}`, now.getTime());
    const components = readComponents(input.components);
    const behaviour = readBehaviour(input.behaviour);
    const proved = this.checkProof(env, readProof(input.proof), now.getTime());
    const jti = randomToken(12);
    const deviceKey = deviceKeyOf(components);
    const automation = automationOf(components);
    const token = signClientToken(this.d.key, {
      env: env.id,
      jti,
      iat: now.getTime(),
      dk: deviceKey,
      auto: automation,
      ua: shortHash(components.userAgent),
      lang: primaryLanguageOf(components),
      tzo: components.timezoneOffset,
      mk: machineVectorOf(components),
      ...(proved ? { pw: proved.bits, pc: proved.challenge } : {}),
      ...(behaviour ? { bh: { ...behaviourClaim(behaviour) } } : {}),
    });
    this.d.observations.record({
      id: jti,
      envId: env.id,
      at: now,
      kind: 'browser',
      deviceKey,
      automation,
      origin: input.origin,
      ip: input.ip,
      userAgent: components.userAgent,
      components: { ...components },
      proof: proved ? { bits: proved.bits } : null,
      behaviour,
    });
    return { token, expiresInSeconds: CLIENT_TOKEN_TTL_MS / 1000 };
  }

  /**
   * A native app registers a session: its components validated, its app allowed, a session signed
   * (the device key and evidence in its claims) and its key answered, with a first token minted.
   */
  private async collectMobile(env: Environment, input: CollectInput): Promise<Collected> {
    const now = this.d.clock.now();
    this.d.limiter.take(`${env.id}|${input.ip ?? '-'}`, now.getTime());
    const m = readMobileComponents(input.mobile);
    if (!ClientService.appAllowed(env, m.app.id)) {
      throw env.clientApps?.length
        ? new Forbidden(
            `app ${m.app.id} is not one of this environment's apps (rampart env set-apps)`,
            'app_not_allowed',
          )
        : new Forbidden('this environment lists no apps yet (rampart env set-apps)', 'no_apps_listed');
    }
    const attested = await this.attest(env, m, now);
    const outcome = encodeOutcome(attested);
    const claims: SessionClaims = {
      ...sessionClaims(env, m, randomToken(12), now.getTime()),
      ...(outcome ? { ats: outcome } : {}),
    };
    const session = signSession(this.d.key, claims);
    const key = sessionKey(this.d.key, claims.sid);
    const { attestation, ...described } = m;
    this.d.observations.record({
      id: claims.sid,
      envId: env.id,
      at: now,
      kind: 'mobile',
      deviceKey: claims.dk,
      automation: m.integrity,
      origin: null,
      ip: input.ip,
      userAgent: m.userAgent ?? '',
      // The attestation is kept for investigation as the app sent it, with what verifying it found.
      components: {
        ...described,
        machineKey: claims.mk,
        ...(attestation ? { attestation: stripNulls({ ...attestation }) } : {}),
        ...(attested ? { attested } : {}),
      },
    });
    return {
      token: mintMobileToken(session, key, now.getTime(), randomToken(12)),
      expiresInSeconds: CLIENT_TOKEN_TTL_MS / 1000,
      session: { session, key, expiresInSeconds: SESSION_TTL_MS / 1000, serverTime: now.getTime() },
    };
  }

  /**
   * A session's attestation verified (docs/mobile.md, "Attestation"): its challenge checked and
   * redeemed as a proof's is (a stale or used one answers 422: ask for another), then the
   * attestation verified against the app's settings. Null: none carried and none required.
   */
  private async attest(env: Environment, m: MobileComponents, now: Date): Promise<AttestationOutcome | null> {
    const settings = env.attestation?.find((a) => a.app === m.app.id) ?? null;
    const required = Boolean(settings?.required) && AttestationVerifier.configured(settings, m.platform);
    const a = m.attestation;
    if (!a) return required ? { status: 'missing' } : null;
    if (a.challenge === null)
      return required
        ? { status: 'missing' }
        : { status: 'unverified', kind: a.kind, reason: 'no_challenge' };
    const opened = openChallenge(this.challengeKey, a.challenge, env.id, now.getTime());
    if (!opened.ok) {
      const why = CHALLENGE_REFUSED[opened.reason];
      throw new InvalidParameters([{ field: 'mobile.attestation.challenge', message: why }]);
    }
    if (!this.redeemed.redeem(opened.claims.cid, opened.claims.iat + CHALLENGE_TTL_MS, now.getTime()))
      throw new InvalidParameters([
        { field: 'mobile.attestation.challenge', message: 'was already used: ask for another' },
      ]);
    if (!this.d.attestation) return { status: 'unverified', kind: a.kind, reason: 'not_configured' };
    return this.d.attestation.verify(
      { ...a, challenge: a.challenge },
      { envId: env.id, platform: m.platform, appId: m.app.id, settings, issuedAt: opened.claims.iat, now },
    );
  }

  /**
   * The event as the engine should see it: where its fingerprint is one of Rampart's tokens, the
   * token's device key replaces it (null when the token does not verify) and `client` says what
   * the token showed. Other events are returned as they are.
   */
  attach(env: Environment, event: EventInput): EventInput {
    const raw = event.context.fingerprint;
    if (raw && isMobileToken(raw)) {
      const opened = openMobileToken(this.d.key, raw, env.id, this.d.clock.now().getTime());
      const client: ClientTokenUse = opened.ok
        ? {
            problem: null,
            jti: opened.jti,
            automation: [],
            userAgentHash: null,
            language: opened.claims.lang,
            timezoneOffset: opened.claims.tzo,
            mobile: mobileClient(opened.claims),
          }
        : {
            problem: opened.reason,
            jti: null,
            automation: [],
            userAgentHash: null,
            language: null,
            timezoneOffset: null,
            mobile: null,
          };
      return {
        ...event,
        context: { ...event.context, fingerprint: opened.ok ? tokenFingerprint(opened.claims.dk) : null },
        client,
      };
    }
    if (!raw || !isClientToken(raw)) return event;
    const opened = openClientToken(this.d.key, raw, env.id, this.d.clock.now().getTime());
    const client: ClientTokenUse = opened.ok
      ? {
          problem: null,
          // Tokens minted from one proof share one flow's uses (a proof buys one login flow).
          jti: opened.claims.pc ?? opened.claims.jti,
          automation: opened.claims.auto,
          userAgentHash: opened.claims.ua,
          language: opened.claims.lang ?? null,
          timezoneOffset: opened.claims.tzo ?? null,
          proof: opened.claims.pw ?? null,
          behaviour: behaviourOfClaim(opened.claims.bh),
          machine: opened.claims.mk ?? null,
          deviceKey: opened.claims.dk,
        }
      : {
          problem: opened.reason,
          jti: null,
          automation: [],
          userAgentHash: null,
          language: null,
          timezoneOffset: null,
        };
    return {
      ...event,
      context: { ...event.context, fingerprint: opened.ok ? tokenFingerprint(opened.claims.dk) : null },
      client,
    };
  }

  /**
   * The fingerprint a client id names, as an event carrying it would be recognised by (see
   * attach): one of Rampart's tokens by the device key it carries (null when it does not verify),
   * anything else as it is.
   */
  fingerprintOf(env: Environment, clientId: string): string | null {
    if (isMobileToken(clientId)) {
      const opened = openMobileToken(this.d.key, clientId, env.id, this.d.clock.now().getTime());
      return opened.ok ? tokenFingerprint(opened.claims.dk) : null;
    }
    if (!isClientToken(clientId)) return clientId;
    const opened = openClientToken(this.d.key, clientId, env.id, this.d.clock.now().getTime());
    return opened.ok ? tokenFingerprint(opened.claims.dk) : null;
  }
}

/** The refusal of a page's origin the environment does not allow (the collector's and the events'). */
export function originRefused(env: Environment, origin: string | null): Forbidden {
  return env.clientOrigins?.length
    ? new Forbidden(
        `origin ${origin ?? '(none)'} is not one of this environment's origins (rampart env set-origins)`,
        'origin_not_allowed',
      )
    : new Forbidden('this environment lists no origins yet (rampart env set-origins)', 'no_origins_listed');
}

/** A session's claims for a phone's components. */
function sessionClaims(env: Environment, m: MobileComponents, sid: string, now: number): SessionClaims {
  return {
    env: env.id,
    sid,
    iat: now,
    exp: now + SESSION_TTL_MS,
    dk: mobileDeviceKey(m),
    mk: mobileMachineKey(m),
    p: m.platform,
    os: m.osVersion,
    mo: m.model,
    mf: m.manufacturer,
    app: m.app.id,
    av: m.app.version,
    ab: m.app.build,
    int: m.integrity,
    att: m.attestation?.kind ?? null,
    lang: localeLanguage(m.locale),
    tzo: m.timezoneOffset,
    did: m.deviceId,
  };
}

/** The device a verified mobile token describes, as a verdict sees it. */
export function mobileClient(c: SessionClaims): MobileClient {
  return {
    platform: c.p,
    os: mobileOs(c.p, c.os),
    model: c.mo,
    manufacturer: c.mf,
    app: { id: c.app, version: c.av, build: c.ab },
    integrity: c.int,
    attestation: c.att,
    attested: decodeOutcome(c.ats ?? null, c.att),
    deviceId: c.did,
    sessionId: c.sid,
    deviceKey: c.dk,
    machineKey: c.mk,
  };
}

/** An object without its null members (what an app did not send is not kept). */
function stripNulls(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null));
}

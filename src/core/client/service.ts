/**
 * The browser client's server side: the collector (publishable key and origin checked, the
 * browser's components turned into a device key and automation evidence, a signed single-use
 * token answered), and the reading of such a token when an application forwards it to a verdict
 * or to track.
 */
import { randomToken, shortHash } from '../crypto';
import { Forbidden, Unauthorized } from '../errors';
import type { ClientTokenUse, Environment, EventInput } from '../model';
import type { Clock, EnvironmentStore } from '../ports';
import type { RateLimiter } from '../ratelimit';
import { automationOf, deviceKeyOf, primaryLanguageOf, readComponents } from './components';
import { CLIENT_TOKEN_TTL_MS, isClientToken, openClientToken, signClientToken } from './token';

/** One collection, kept for investigation (what the browser showed, and what it was given). */
export interface ClientObservation {
  id: string;
  envId: string;
  at: Date;
  deviceKey: string;
  automation: string[];
  origin: string | null;
  ip: string | null;
  userAgent: string;
  components: Record<string, unknown>;
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
}

export interface CollectInput {
  publishableKey: unknown;
  /** The page's `Origin` header (null when the browser sent none). */
  origin: string | null;
  ip: string | null;
  components: unknown;
}

export interface Collected {
  token: string;
  expiresInSeconds: number;
}

export class ClientService {
  private readonly envs = new Map<string, { env: Environment | null; until: number }>();

  constructor(private readonly d: ClientDeps) {}

  /** The origins a page may collect from: the environment's list; in a sandbox, any when the list is empty. */
  static originAllowed(env: Environment, origin: string | null): boolean {
    const allowed = env.clientOrigins ?? [];
    if (allowed.length === 0) return env.sandbox;
    return origin !== null && allowed.includes(origin);
  }

  async collect(input: CollectInput): Promise<Collected> {
    const pk = typeof input.publishableKey === 'string' ? input.publishableKey : '';
    const env = PUBLISHABLE_KEY_PATTERN.test(pk) ? await this.environment(pk) : null;
    if (!env || !env.enabled) throw new Unauthorized('unknown publishable key');
    if (!ClientService.originAllowed(env, input.origin)) {
      throw new Forbidden(env.clientOrigins?.length ? `origin ${input.origin ?? '(none)'} is not allowed for this publishable key` : 'this environment allows no origins yet (rampart env set-origins)');
    }
    const now = this.d.clock.now();
    this.d.limiter.take(`${env.id}|${input.ip ?? '-'}`, now.getTime());
    const components = readComponents(input.components);
    const jti = randomToken(12);
    const deviceKey = deviceKeyOf(components);
    const automation = automationOf(components);
    const token = signClientToken(this.d.key, { env: env.id, jti, iat: now.getTime(), dk: deviceKey, auto: automation, ua: shortHash(components.userAgent), lang: primaryLanguageOf(components), tzo: components.timezoneOffset });
    this.d.observations.record({ id: jti, envId: env.id, at: now, deviceKey, automation, origin: input.origin, ip: input.ip, userAgent: components.userAgent, components: { ...components } });
    return { token, expiresInSeconds: CLIENT_TOKEN_TTL_MS / 1000 };
  }

  /**
   * The event as the engine should see it: where its fingerprint is one of Rampart's tokens, the
   * token's device key replaces it (null when the token does not verify) and `client` says what
   * the token showed. Other events are returned as they are.
   */
  attach(env: Environment, event: EventInput): EventInput {
    const raw = event.context.fingerprint;
    if (!raw || !isClientToken(raw)) return event;
    const opened = openClientToken(this.d.key, raw, env.id, this.d.clock.now().getTime());
    const client: ClientTokenUse = opened.ok
      ? { problem: null, jti: opened.claims.jti, automation: opened.claims.auto, userAgentHash: opened.claims.ua, language: opened.claims.lang ?? null, timezoneOffset: opened.claims.tzo ?? null }
      : { problem: opened.reason, jti: null, automation: [], userAgentHash: null, language: null, timezoneOffset: null };
    return { ...event, context: { ...event.context, fingerprint: opened.ok ? tokenFingerprint(opened.claims.dk) : null }, client };
  }

  /**
   * The fingerprint a client id names, as an event carrying it would be recognised by (see
   * attach): one of Rampart's tokens by the device key it carries (null when it does not verify),
   * anything else as it is.
   */
  fingerprintOf(env: Environment, clientId: string): string | null {
    if (!isClientToken(clientId)) return clientId;
    const opened = openClientToken(this.d.key, clientId, env.id, this.d.clock.now().getTime());
    return opened.ok ? tokenFingerprint(opened.claims.dk) : null;
  }

  private async environment(pk: string): Promise<Environment | null> {
    const now = this.d.clock.now().getTime();
    const hit = this.envs.get(pk);
    if (hit && hit.until > now) return hit.env;
    const env = await this.d.environments.byPublishableKey(pk);
    if (this.envs.size > 10_000) this.envs.clear();
    this.envs.set(pk, { env, until: now + (this.d.cacheMs ?? 5000) });
    return env;
  }
}

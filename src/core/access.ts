/**
 * Who may call, for every door: a presented credential becomes a Principal, API secrets may do
 * everything, analyst keys may only read (GraphQL queries), and each environment is rate-limited.
 */
import { Forbidden, RateLimited, Unauthorized } from './errors';
import type { EnvironmentService } from './environments';
import type { Principal } from './model';
import type { RateLimiter } from './ratelimit';

/** `api`: the API surface (REST, gRPC, mutations). `read`: dashboards' queries. */
export type AccessMode = 'api' | 'read';

export interface FailedAuthenticationLimit {
  /** Failed authentications a source address may make within `windowMs` before it gets 429. */
  limit: number;
  windowMs: number;
}

export const DEFAULT_FAILED_AUTHENTICATION_LIMIT: FailedAuthenticationLimit = { limit: 30, windowMs: 60_000 };

/**
 * Failed authentications per source address, in fixed windows: past the limit, each further
 * failure from that address answers 429 until its window ends (so secrets cannot be guessed at
 * speed from one address). Only failures are refused: a request with a valid credential is never
 * held back by the failures of others at its address (a NAT, a proxy, a forged address).
 */
class FailedAuthentications {
  private readonly bySource = new Map<string, { count: number; until: number }>();
  constructor(private readonly o: FailedAuthenticationLimit) {}

  /** Count one failure; the seconds until the address may fail again once it is past its limit, else null. */
  failed(source: string, now: number): number | null {
    let e = this.bySource.get(source);
    if (!e || e.until <= now) {
      // Bounded: a flood of addresses resets the table rather than growing it.
      if (this.bySource.size >= 100_000) this.bySource.clear();
      e = { count: 0, until: now + this.o.windowMs };
      this.bySource.set(source, e);
    }
    e.count++;
    return e.count > this.o.limit ? Math.max(1, Math.ceil((e.until - now) / 1000)) : null;
  }
}

export interface AccessServiceDeps {
  environments: EnvironmentService;
  /** Requests per second per environment. */
  limiter: RateLimiter;
  /** Failed authentications from one address before it is refused (default DEFAULT_FAILED_AUTHENTICATION_LIMIT). */
  failedLimit?: FailedAuthenticationLimit;
  /** Epoch ms, from the injected Clock. */
  now: () => number;
}

export class AccessService {
  private readonly failures: FailedAuthentications;
  private readonly environments: EnvironmentService;
  private readonly limiter: RateLimiter;
  private readonly now: () => number;

  constructor(d: AccessServiceDeps) {
    this.environments = d.environments;
    this.limiter = d.limiter;
    this.now = d.now;
    this.failures = new FailedAuthentications(d.failedLimit ?? DEFAULT_FAILED_AUTHENTICATION_LIMIT);
  }

  /**
   * Resolve the caller from a presented secret (null when none was presented). Throws
   * Unauthorized (a wrong secret and an analyst key on the API get the same answer), Forbidden
   * (disabled environment) or RateLimited (the environment's rate; or a failure from `source`
   * past its limit of failed authentications, while a valid secret from there is let through).
   */
  async caller(
    secret: string | null,
    mode: AccessMode,
    opts: { rateLimit?: boolean; source?: string | null } = {},
  ): Promise<Principal> {
    const source = opts.source ?? null;
    const refuse = (): never => {
      throw this.failedFrom(source, new Unauthorized());
    };
    if (!secret) return refuse();
    let principal: Principal;
    try {
      principal = await this.environments.authenticate(secret);
    } catch (err) {
      if (err instanceof Unauthorized) return refuse();
      throw err;
    }
    if (mode === 'api' && principal.kind !== 'secret') return refuse();
    if (opts.rateLimit !== false) this.take(principal);
    return principal;
  }

  /**
   * Count one failed authentication from a source address, and say what to answer it: `refusal`
   * (the Unauthorized at hand), or RateLimited once the address is past its limit. For doors that
   * authenticate through a look-up shared by several callers (gRPC) or through a session.
   */
  failedFrom(source: string | null, refusal: Unauthorized): Unauthorized | RateLimited {
    const retryAfter = source ? this.failures.failed(source, this.now()) : null;
    return retryAfter === null ? refusal : new RateLimited(retryAfter);
  }

  /** Count one more request (e.g. each message of a stream) against the environment's rate. */
  take(principal: Principal): void {
    this.limiter.take(principal.env.id, this.now());
  }

  /** Changes need an API secret: analyst keys are read-only. */
  assertCanWrite(principal: Principal): void {
    if (principal.kind !== 'secret')
      throw new Forbidden('analyst keys are read-only: changes need the API secret', 'read_only_key');
  }
}

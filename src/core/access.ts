/**
 * Who may call, for every door: a presented credential becomes a Principal, API secrets may do
 * everything, analyst keys may only read (GraphQL queries), and each environment is rate-limited.
 */
import { Forbidden, Unauthorized } from './errors';
import type { EnvironmentService } from './environments';
import type { Principal } from './model';
import type { RateLimiter } from './ratelimit';

/** `api`: the API surface (REST, gRPC, mutations). `read`: dashboards' queries. */
export type AccessMode = 'api' | 'read';

export class AccessService {
  constructor(private readonly environments: EnvironmentService, private readonly limiter: RateLimiter) {}

  /**
   * Resolve the caller from a presented secret (null when none was presented). Throws
   * Unauthorized, Forbidden (disabled environment) or RateLimited.
   */
  async caller(secret: string | null, mode: AccessMode, opts: { rateLimit?: boolean } = {}): Promise<Principal> {
    if (!secret) throw new Unauthorized();
    const principal = await this.environments.authenticate(secret);
    if (mode === 'api' && principal.kind !== 'secret') throw new Unauthorized('analyst keys are read-only and valid only for GraphQL queries');
    if (opts.rateLimit !== false) this.take(principal);
    return principal;
  }

  /** Count one more request (e.g. each message of a stream) against the environment's rate. */
  take(principal: Principal): void {
    this.limiter.take(principal.env.id);
  }

  /** Changes need an API secret: analyst keys are read-only. */
  assertCanWrite(principal: Principal): void {
    if (principal.kind !== 'secret') throw new Forbidden('analyst keys are read-only: changes need the API secret');
  }
}

/** Per-environment request rate limit: a token bucket per tenant, per process. */
import { RateLimited } from './errors';
import type { EnvId } from './model';

export interface RateLimiterOptions {
  /** Tokens added each second (the sustained rate). */
  perSecond: number;
  /** Tokens a bucket holds (the burst), default twice `perSecond`. */
  burst?: number;
  /**
   * Named in the refusal: what is counted (`per environment and source address`) and the setting
   * that raises it (`RAMPART_CLIENT_RATE_LIMIT`), so that a caller who meets it knows which knob
   * it is.
   */
  limit?: { per: string; setting: string };
}

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perSecond: number;
  private readonly burst: number;
  private readonly limit?: { per: string; setting: string };

  constructor(o: RateLimiterOptions) {
    this.perSecond = o.perSecond;
    this.burst = o.burst ?? o.perSecond * 2;
    this.limit = o.limit;
  }

  /**
   * Take one token for `env` (or any other key) at `now` (epoch ms, from the caller's Clock), or
   * throw RateLimited with the seconds to wait.
   */
  take(env: EnvId | string, now: number): void {
    let b = this.buckets.get(env);
    if (!b) {
      b = { tokens: this.burst, at: now };
      this.buckets.set(env, b);
    }
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond);
    b.at = now;
    if (b.tokens < 1)
      throw new RateLimited(Math.max(1, Math.ceil((1 - b.tokens) / this.perSecond)), this.refusal());
    b.tokens -= 1;
  }

  private refusal(): string | undefined {
    const l = this.limit;
    return l
      ? `rate limit exceeded: ${this.perSecond} a second ${l.per}, bursts of ${this.burst} (${l.setting}); retry after Retry-After seconds`
      : undefined;
  }
}

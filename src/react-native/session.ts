/**
 * The device's session with Rampart and the request tokens minted from it (docs/mobile.md §1-2).
 * A session is registered at `POST /v1/client/token`; it holds the signed session, the HMAC key
 * for the tokens, when it was issued and expires (in Rampart's clock), and the offset between
 * Rampart's clock and the device's, so that tokens and events are stamped in Rampart's time even
 * when the phone's clock is wrong. It is kept in secure storage (the key signs tokens) and
 * reused across restarts until it expires or, at an open, is more than an hour old.
 *
 * One registration at a time: every caller waiting for a session shares the one in flight.
 */
import { base64url, hmacSha256Base64url } from './crypto';
import { postJson } from './http';
import type { Platform } from './platform';
import {
  MOBILE_TOKEN_PREFIX,
  SESSION_PREFIX,
  type ErrorResponse,
  type MobileComponents,
  type RegisterRequest,
} from './wire';

export interface Session {
  /** `rps1.<claims>.<mac>`. */
  session: string;
  /** The token HMAC key: never logged, never sent. */
  key: string;
  /** Issued at, Rampart's clock (ms). */
  registeredAt: number;
  /** Expires at, Rampart's clock (ms). */
  expiresAt: number;
  /** Rampart's clock minus the device's, when it was issued (ms). */
  offset: number;
}

/** At an open, a session older than this is replaced (docs/mobile.md). */
export const SESSION_REFRESH_MS = 3_600_000;
/** A token is accepted for five minutes: a session closer than that to its end mints none. */
const TOKEN_TTL_MS = 300_000;
/** A session issued further ahead than this of the device's idea of Rampart's clock means the clock moved back. */
const CLOCK_BACK_MS = 60_000;

/** An answer from Rampart that is not a success: carries the status and the error type, never a secret. */
export class RampartHttpError extends Error {
  constructor(
    readonly status: number,
    readonly type: string | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'RampartHttpError';
  }
}

const isSession = (s: unknown): s is Session => {
  const o = s as Session;
  return (
    typeof o === 'object' &&
    o !== null &&
    typeof o.session === 'string' &&
    o.session.startsWith(SESSION_PREFIX) &&
    typeof o.key === 'string' &&
    o.key.length > 0 &&
    [o.registeredAt, o.expiresAt, o.offset].every(Number.isFinite)
  );
};

/** The answer body as JSON, or null. */
export async function readJson(res: { text(): Promise<string> }): Promise<unknown> {
  try {
    return JSON.parse(await res.text()) as unknown;
  } catch {
    return null;
  }
}

/** The error type and a loggable description of a failed answer (field names, no values). */
export function describeError(status: number, body: unknown): { type: string | undefined; message: string } {
  const e = (typeof body === 'object' && body !== null ? body : {}) as ErrorResponse;
  const type = typeof e.type === 'string' ? e.type : undefined;
  const fields = Array.isArray(e.fields) ? e.fields.map((f) => `${f.field}: ${f.message}`).join('; ') : '';
  return {
    type,
    message: `Rampart answered ${status}${type ? ` ${type}` : ''}${fields ? ` (${fields})` : ''}`,
  };
}

export interface SessionDeps {
  platform: Platform;
  /** Rampart's base URL, without a trailing slash. */
  endpoint: string;
  publishableKey: string;
  /** What the device registers with (built once, with a fresh attestation each time). */
  components: () => Promise<MobileComponents>;
  log: (message: string) => void;
  storageKey: string;
}

/**
 * `rpm1.<session without "rps1.">.<t>.<nonce>.<mac>` (docs/mobile.md §2): t is `serverTime`
 * (the device's clock plus the offset) in whole milliseconds, and the MAC is HMAC-SHA256 keyed
 * by the UTF-8 bytes of the session key (as received, not base64url-decoded) over everything
 * before the last dot. Checked against clients/test-vectors/tokens.json.
 */
export function mintToken(session: string, key: string, serverTime: number, nonce: string): string {
  const signed = `${MOBILE_TOKEN_PREFIX}${session.slice(SESSION_PREFIX.length)}.${Math.floor(serverTime)}.${nonce}`;
  return `${signed}.${hmacSha256Base64url(key, signed)}`;
}

export class SessionKeeper {
  private current: Session | null = null;
  private registering: Promise<Session> | null = null;

  constructor(private readonly deps: SessionDeps) {}

  /** Takes up the session an earlier run stored, if any. */
  async load(): Promise<void> {
    try {
      const raw = await this.deps.platform.secureStorage.getItem(this.deps.storageKey);
      const parsed: unknown = raw ? JSON.parse(raw) : null;
      if (isSession(parsed) && !this.current) this.current = parsed;
    } catch {
      this.deps.log('the stored session could not be read; a new one will be registered');
    }
  }

  /** Rampart's clock minus the device's, or null before any session. */
  offset(): number | null {
    return this.current ? this.current.offset : null;
  }

  /** Now in Rampart's clock (the device's when no session has told the offset yet). */
  serverNow(): number {
    return this.deps.platform.clock.now() + (this.offset() ?? 0);
  }

  /** Whether `s` can mint a token that is still good when the server sees it. */
  private usable(s: Session | null): s is Session {
    return s !== null && s.expiresAt - this.serverNow() >= TOKEN_TTL_MS;
  }

  /** The current session, registering one first when there is none or it has expired, or is older than `maxAgeMs`. */
  ensure(maxAgeMs?: number): Promise<Session> {
    const s = this.current;
    if (this.usable(s)) {
      const age = this.serverNow() - s.registeredAt;
      if (maxAgeMs === undefined || (age <= maxAgeMs && age >= -CLOCK_BACK_MS)) return Promise.resolve(s);
    }
    return this.register();
  }

  /** A new session after the server refused `stale`, unless another caller already replaced it. */
  renew(stale: Session): Promise<Session> {
    const s = this.current;
    if (s !== null && s !== stale && this.usable(s)) return Promise.resolve(s);
    if (s === stale) this.current = null;
    return this.register();
  }

  /** A fresh token from the current session, or null when there is none usable. Synchronous. */
  mint(): string | null {
    const s = this.current;
    return this.usable(s) ? this.mintFrom(s) : null;
  }

  /**
   * `rpm1.<claims>.<session mac>.<t>.<nonce>.<mac>`: t in Rampart's clock, a new 22-character
   * nonce each time, and the MAC of everything before the last dot under the session key.
   */
  mintFrom(s: Session): string {
    return mintToken(
      s.session,
      s.key,
      this.deps.platform.clock.now() + s.offset,
      base64url(this.deps.platform.randomBytes(16)),
    );
  }

  /** Forgets the session (memory and storage). */
  async clear(): Promise<void> {
    this.current = null;
    await this.deps.platform.secureStorage.removeItem(this.deps.storageKey).catch(() => undefined);
  }

  private register(): Promise<Session> {
    this.registering ??= this.doRegister().finally(() => {
      this.registering = null;
    });
    return this.registering;
  }

  private async doRegister(): Promise<Session> {
    const { platform, endpoint, publishableKey, log } = this.deps;
    const body: RegisterRequest = { publishable_key: publishableKey, mobile: await this.deps.components() };
    log('registering a session');
    const res = await postJson(platform, `${endpoint}/v1/client/token`, body);
    const answer = await readJson(res);
    if (res.status !== 201 && res.status !== 200) {
      const { type, message } = describeError(res.status, answer);
      log(`session registration failed: ${message}`);
      throw new RampartHttpError(res.status, type, message);
    }
    const a = (answer ?? {}) as Record<string, unknown>;
    if (
      typeof a.session !== 'string' ||
      !a.session.startsWith(SESSION_PREFIX) ||
      typeof a.session_key !== 'string' ||
      a.session_key.length === 0 ||
      typeof a.session_expires_in !== 'number' ||
      typeof a.server_time !== 'number' ||
      !Number.isFinite(a.server_time)
    ) {
      log('session registration answered without a session');
      throw new RampartHttpError(res.status, undefined, 'Rampart: the collector answered without a session');
    }
    const s: Session = {
      session: a.session,
      key: a.session_key,
      registeredAt: a.server_time,
      expiresAt: a.server_time + a.session_expires_in * 1000,
      offset: a.server_time - platform.clock.now(),
    };
    this.current = s;
    log(`session registered (expires in ${a.session_expires_in} s, clock offset ${s.offset} ms)`);
    try {
      await platform.secureStorage.setItem(this.deps.storageKey, JSON.stringify(s));
    } catch {
      log('the session could not be stored; it is kept in memory');
    }
    return s;
  }
}

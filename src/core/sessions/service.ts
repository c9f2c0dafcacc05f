/**
 * Console sessions: a person signs in with a credential (an analyst key or an API secret) once,
 * and the browser then carries a random session token in an HttpOnly cookie instead of the
 * credential. Only the token's SHA-256 is stored (the session's `_id`); the CSRF token the page
 * must echo on every request is an HMAC of the session token, so it is never stored either.
 * Sessions end after `idleMs` without use and `absoluteMs` after sign-in, on sign-out, and as soon
 * as the credential they were opened with is revoked or its environment disabled.
 */
import { hmacSha256, randomToken, safeEqual, sha256Hex } from '../crypto';
import { Forbidden, Unauthorized } from '../errors';
import type { AccessService } from '../access';
import type { EnvironmentService } from '../environments';
import type { CredentialKind, EnvId, Principal } from '../model';
import type { Clock } from '../ports';

export interface Session {
  /** SHA-256 of the session token (hex): what is stored, and looked up by. */
  id: string;
  envId: EnvId;
  /** The credential signed in with (its SHA-256), re-checked on every use. */
  credentialHash: string;
  kind: CredentialKind;
  createdAt: Date;
  lastSeenAt: Date;
  /** Idle expiry: moves forward with use, never past `absoluteExpiresAt`. */
  expiresAt: Date;
  absoluteExpiresAt: Date;
}

export interface SessionStore {
  insert(s: Session): Promise<void>;
  byId(id: string): Promise<Session | null>;
  /** Record a use: last seen and the new idle expiry. */
  touch(id: string, lastSeenAt: Date, expiresAt: Date): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** Delete every session whose expiry has passed; returns how many. */
  deleteExpired(now: Date): Promise<number>;
}

export interface SessionOptions {
  /** Sign-out after this long without a request (default 30 minutes). */
  idleMs?: number;
  /** Sign-out this long after sign-in whatever the use (default 12 hours). */
  absoluteMs?: number;
}

export interface SessionDeps extends SessionOptions {
  store: SessionStore;
  access: AccessService;
  environments: EnvironmentService;
  clock: Clock;
  /** The MAC key of CSRF tokens (Sealer.macKey('console-csrf')). */
  csrfKey: Buffer;
}

export const DEFAULT_SESSION_IDLE_MS = 30 * 60_000;
export const DEFAULT_SESSION_ABSOLUTE_MS = 12 * 3_600_000;
/** A session's idle expiry is written at most this often (each request does not write). */
const TOUCH_EVERY_MS = 60_000;
/** Longest session token accepted from a cookie (ours are 43 characters). */
const MAX_TOKEN_LENGTH = 128;

export interface OpenedSession {
  /** The session token: goes into the cookie, never anywhere else. */
  token: string;
  /** The CSRF token the page sends back in a header with every request. */
  csrf: string;
  session: Session;
  principal: Principal;
}

export interface ResolvedSession {
  session: Session;
  principal: Principal;
  csrf: string;
}

const ANALYST_KEY_ADD = 'npx rampart analyst-key add <environment>';
const SECRET_ADD = 'npx rampart secret add <environment>';

/**
 * Why a key was not accepted at sign-in, in words a person can act on. It goes by the key's shape
 * alone (the prefixes Rampart gives its keys), so it tells nothing about the keys that are stored.
 */
export function keyNotAccepted(key: string | null): string {
  if (key?.startsWith('ak_'))
    return `That analyst key was not accepted: it is mistyped, or it was revoked. Create one with \`${ANALYST_KEY_ADD}\`.`;
  if (key?.startsWith('sk_'))
    return `That API secret was not accepted: it is mistyped, or it was revoked. Create one with \`${SECRET_ADD}\`, or sign in with an analyst key (\`${ANALYST_KEY_ADD}\`, read-only).`;
  if (key?.startsWith('pk_'))
    return `That is a publishable key: client libraries use it, and it opens nothing on the server. Sign in with an analyst key (\`${ANALYST_KEY_ADD}\`, read-only) or the environment's API secret.`;
  return `That key was not accepted: sign in with an analyst key (\`${ANALYST_KEY_ADD}\`, read-only) or the environment's API secret (\`${SECRET_ADD}\`).`;
}

export class SessionService {
  private readonly idleMs: number;
  private readonly absoluteMs: number;

  constructor(private readonly deps: SessionDeps) {
    this.idleMs = deps.idleMs ?? DEFAULT_SESSION_IDLE_MS;
    this.absoluteMs = deps.absoluteMs ?? DEFAULT_SESSION_ABSOLUTE_MS;
  }

  /** The CSRF token of a session token. */
  csrfOf(token: string): string {
    return hmacSha256(this.deps.csrfKey, token).toString('base64url');
  }

  /** Whether `csrf` is the CSRF token of session token `token` (constant time). */
  csrfMatches(token: string, csrf: string): boolean {
    return safeEqual(csrf, this.csrfOf(token));
  }

  /**
   * Sign in with a credential: checked exactly as on the GraphQL API (constant-time comparison,
   * the failed-authentication throttle of `source`, the environment's rate limit).
   */
  async signIn(credential: unknown, source: string | null): Promise<OpenedSession> {
    const secret =
      typeof credential === 'string' && credential.length > 0 && credential.length <= 512 ? credential : null;
    let principal: Principal;
    try {
      principal = await this.deps.access.caller(secret, 'read', { source });
    } catch (err) {
      if (err instanceof Unauthorized) throw new Unauthorized(keyNotAccepted(secret));
      throw err;
    }
    const now = this.deps.clock.now();
    const token = randomToken(32);
    const absoluteExpiresAt = new Date(now.getTime() + this.absoluteMs);
    const session: Session = {
      id: sha256Hex(token),
      envId: principal.env.id,
      credentialHash: principal.credentialHash,
      kind: principal.kind,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: new Date(Math.min(now.getTime() + this.idleMs, absoluteExpiresAt.getTime())),
      absoluteExpiresAt,
    };
    await this.deps.store.insert(session);
    return { token, csrf: this.csrfOf(token), session, principal };
  }

  /**
   * The caller of a request that carries a session cookie. `csrf` is the header the page sent
   * (null: none); with `requireCsrf` a missing or wrong one is Forbidden. An unknown, expired or
   * revoked session is Unauthorized and counts as a failed authentication of `source`.
   */
  async resolve(
    token: string | null,
    csrf: string | null,
    o: { source: string | null; requireCsrf: boolean; rateLimit?: boolean },
  ): Promise<ResolvedSession> {
    const { access } = this.deps;
    const refuse = (message: string): never => {
      throw access.failedFrom(o.source, new Unauthorized(message));
    };
    if (!token || token.length > MAX_TOKEN_LENGTH) return refuse('not signed in');
    const id = sha256Hex(token);
    const session = await this.deps.store.byId(id);
    const now = this.deps.clock.now();
    if (!session || !safeEqual(session.id, id)) return refuse('not signed in');
    if (
      session.expiresAt.getTime() <= now.getTime() ||
      session.absoluteExpiresAt.getTime() <= now.getTime()
    ) {
      await this.deps.store.delete(id);
      return refuse('the session has expired: sign in again');
    }
    const expected = this.csrfOf(token);
    if (o.requireCsrf && (!csrf || !safeEqual(csrf, expected)))
      throw new Forbidden('missing or wrong CSRF token (x-rampart-csrf)');
    let principal: Principal;
    try {
      principal = await this.deps.environments.authenticateHash(session.credentialHash);
    } catch (err) {
      // The credential was revoked, or the environment disabled: the session ends with it. (Any
      // other failure, e.g. the database, leaves the session alone.)
      if (err instanceof Unauthorized || err instanceof Forbidden) await this.deps.store.delete(id);
      if (err instanceof Unauthorized)
        return refuse('the key this session was opened with is no longer valid: sign in again');
      throw err;
    }
    if (principal.env.id !== session.envId || principal.kind !== session.kind) {
      await this.deps.store.delete(id);
      return refuse('not signed in');
    }
    if (o.rateLimit !== false) access.take(principal);
    if (now.getTime() - session.lastSeenAt.getTime() >= TOUCH_EVERY_MS) {
      const expiresAt = new Date(Math.min(now.getTime() + this.idleMs, session.absoluteExpiresAt.getTime()));
      await this.deps.store.touch(id, now, expiresAt);
      session.lastSeenAt = now;
      session.expiresAt = expiresAt;
    }
    return { session, principal, csrf: expected };
  }

  /** Sign out: the session is deleted (whatever its state). */
  async signOut(token: string | null): Promise<void> {
    if (!token || token.length > MAX_TOKEN_LENGTH) return;
    await this.deps.store.delete(sha256Hex(token));
  }

  /** Delete expired sessions (run periodically). */
  sweep(): Promise<number> {
    return this.deps.store.deleteExpired(this.deps.clock.now());
  }
}

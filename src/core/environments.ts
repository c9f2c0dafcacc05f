/**
 * Environments (tenants) and their credentials: creation with default policies, API secrets
 * (several live at once for rotation), read-only analyst keys, and authentication of a presented
 * secret. Only a SHA-256 hash of each secret is used for look-up, compared in constant time.
 */
import type { Clock, CredentialStore, EnvironmentStore, Scheduler } from './ports';
import type {
  AppAttestationSettings,
  Credential,
  CredentialKind,
  EnvId,
  Environment,
  Principal,
} from './model';
import { asEnvId } from './model';
import { randomToken, safeEqual, Sealer, sha256Hex, uuid } from './crypto';
import { Forbidden, InvalidParameters, NotFound, Unauthorized, Unavailable } from './errors';
import { APP_ID } from './client/mobile';
import { readPlayKeys, type PlayIntegrityKeys } from './client/attestation/play-integrity';
import type { PolicyService } from './policies/service';
import { checkRetentionDays } from './retention';

export interface EnvironmentDeps {
  environments: EnvironmentStore;
  credentials: CredentialStore;
  policies: PolicyService;
  sealer: Sealer;
  clock: Clock;
  /**
   * How long a verified credential is reused (revocation and disabling take effect within it); in
   * the second half of that time a request that uses it starts its check behind it.
   */
  authCacheMs: number;
  /** Timers for the waits below (absent: a credential's check is awaited as long as the store takes). */
  scheduler?: Scheduler;
  /**
   * How long a request waits for the re-check of a credential whose cached verification has
   * expired (default 100 ms); past it, it is answered as the credential was last verified, and
   * the re-check goes on behind. A database that answers answers well within it, so revocation
   * still takes effect within `authCacheMs`; one that hangs does not hold every request.
   */
  authRefreshWaitMs?: number;
  /** Longest a credential's last verification stands in while its re-check does not answer (default 10 minutes). */
  authStaleMs?: number;
  /** Longest a credential this process never verified waits for the store (default 2 s), then Unavailable. */
  authLookupTimeoutMs?: number;
}

export const DEFAULT_AUTH_REFRESH_WAIT_MS = 100;
export const DEFAULT_AUTH_STALE_MS = 10 * 60_000;
export const DEFAULT_AUTH_LOOKUP_TIMEOUT_MS = 2_000;

interface CachedPrincipal {
  principal: Principal;
  /** Verified until (epoch ms): reused as it is before, re-checked after. */
  until: number;
  /** A re-check under way (shared by every request that meets the expired entry). */
  checking: Promise<Principal> | null;
  /** No check ahead of expiry before this time (epoch ms): one failed, and the store is let be. */
  aheadFrom?: number;
}

export interface CreatedSecret {
  secret: string;
  credential: Credential;
}

const ENV_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** An absolute http(s) URL, parsed; null for anything else. */
function httpUrl(value: string): URL | null {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return null;
  }
  return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed : null;
}
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

export class EnvironmentService {
  private readonly cache = new Map<string, CachedPrincipal>();

  constructor(private readonly deps: EnvironmentDeps) {}

  /** Create an environment with its default policies and a first API secret. */
  async create(
    name: string,
    opts: { sandbox?: boolean; secret?: string; webhookUrl?: string | null } = {},
  ): Promise<{ env: Environment; secret: string }> {
    if (!ENV_NAME.test(name)) {
      throw new InvalidParameters([
        { field: 'name', message: 'lower-case letters, digits, - and _, at most 63 characters' },
      ]);
    }
    if (await this.deps.environments.byName(name)) {
      throw new InvalidParameters([{ field: 'name', message: `environment ${name} already exists` }]);
    }
    const env: Environment = {
      id: asEnvId(uuid()),
      name,
      enabled: true,
      sandbox: opts.sandbox ?? name === 'sandbox',
      publishableKey: `pk_${randomToken(18)}`,
      webhookUrl: opts.webhookUrl ?? null,
      privacyEmail: null,
      createdAt: this.deps.clock.now(),
    };
    await this.deps.environments.create(env);
    await this.deps.policies.createDefaults(env.id);
    const created = await this.addCredential(env.id, 'secret', 'initial', opts.secret);
    return { env, secret: created.secret };
  }

  /** Make sure the default `sandbox` environment exists; returns the generated secret when one was made. */
  async ensureSandbox(
    secret: string | undefined,
    webhookUrl: string | undefined,
  ): Promise<{ env: Environment; generatedSecret: string | null }> {
    const existing = await this.deps.environments.byName('sandbox');
    if (existing) {
      if (secret && !(await this.deps.credentials.byHash(sha256Hex(secret)))) {
        await this.addCredential(existing.id, 'secret', 'RAMPART_API_SECRET', secret);
      }
      if (webhookUrl && existing.webhookUrl !== webhookUrl) {
        return {
          env: (await this.deps.environments.update(existing.id, { webhookUrl })) ?? existing,
          generatedSecret: null,
        };
      }
      return { env: existing, generatedSecret: null };
    }
    const created = await this.create('sandbox', { sandbox: true, secret, webhookUrl: webhookUrl ?? null });
    return { env: created.env, generatedSecret: secret ? null : created.secret };
  }

  async addCredential(
    envId: EnvId,
    kind: CredentialKind,
    label: string,
    given?: string,
  ): Promise<CreatedSecret> {
    const env = await this.require(envId);
    const secret = given ?? (kind === 'secret' ? `sk_${randomToken(24)}` : `ak_${randomToken(24)}`);
    const credential: Credential = {
      hash: sha256Hex(secret),
      envId: env.id,
      kind,
      label,
      hint: secret.slice(-4),
      createdAt: this.deps.clock.now(),
      revokedAt: null,
      sealed: kind === 'secret' ? this.deps.sealer.seal(secret) : null,
    };
    await this.deps.credentials.insert(credential);
    return { secret, credential };
  }

  async listCredentials(envId: EnvId): Promise<Credential[]> {
    return this.deps.credentials.list(envId);
  }

  /** Revoke a credential given by its hash or its full secret. */
  async revoke(envId: EnvId, secretOrHash: string): Promise<void> {
    const hash = /^[0-9a-f]{64}$/.test(secretOrHash) ? secretOrHash : sha256Hex(secretOrHash);
    if (!(await this.deps.credentials.revoke(envId, hash, this.deps.clock.now()))) {
      throw new NotFound('no such live credential in this environment');
    }
    this.cache.clear();
  }

  /** The newest live API secret in clear, used to sign webhooks as Castle's SDKs verify them. */
  async signingSecret(envId: EnvId): Promise<string | null> {
    const live = (await this.deps.credentials.list(envId))
      .filter((c) => c.kind === 'secret' && !c.revokedAt && c.sealed)
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    const newest = live[0];
    return newest?.sealed ? this.deps.sealer.open(newest.sealed) : null;
  }

  /**
   * Resolve a presented secret to a principal. Missing or wrong: Unauthorized. Disabled
   * environment: Forbidden. Successful look-ups are cached for `authCacheMs` per process.
   */
  async authenticate(secret: string | null | undefined): Promise<Principal> {
    if (!secret || secret.length > 512) throw new Unauthorized();
    return this.authenticateHash(sha256Hex(secret));
  }

  /**
   * The same by the credential's hash: for a console session, which keeps only the hash of the
   * credential it was opened with and checks on every use that it is still live.
   */
  async authenticateHash(hash: string): Promise<Principal> {
    if (!/^[0-9a-f]{64}$/.test(hash)) throw new Unauthorized();
    const now = this.deps.clock.now().getTime();
    const hit = this.cache.get(hash);
    let principal: Principal;
    if (hit && hit.until > now) {
      principal = hit.principal;
      // In the second half of its life the verification is checked again behind the requests
      // that use it, so that a credential in steady use never makes a request wait for the store
      // (a read queued behind a busy database's writes held every request of the moment).
      // A check that fails (the store down) is not started again by every request that follows.
      const half = this.deps.authCacheMs / 2;
      if (!hit.checking && hit.until - now <= half && now >= (hit.aheadFrom ?? 0))
        this.checkOf(hash, hit).catch(() => {
          hit.aheadFrom = this.deps.clock.now().getTime() + half / 2;
        });
    } else if (hit && now - hit.until <= (this.deps.authStaleMs ?? DEFAULT_AUTH_STALE_MS)) {
      principal = await this.recheck(hash, hit);
    } else {
      principal = await this.within(
        this.verify(hash),
        this.deps.authLookupTimeoutMs ?? DEFAULT_AUTH_LOOKUP_TIMEOUT_MS,
        null,
      );
    }
    if (!principal.env.enabled) throw new Forbidden('this environment is disabled', 'environment_disabled');
    return principal;
  }

  /**
   * A credential whose verification expired: checked again, waiting at most authRefreshWaitMs
   * for the answer. A revoked or unknown credential fails as soon as the store says so; a store
   * that does not answer in time (or fails) leaves the last verification standing while the check
   * goes on behind, so that a hung database costs a request that wait, not its whole timeout.
   */
  private async recheck(hash: string, hit: CachedPrincipal): Promise<Principal> {
    try {
      return await this.within(
        this.checkOf(hash, hit),
        this.deps.authRefreshWaitMs ?? DEFAULT_AUTH_REFRESH_WAIT_MS,
        hit.principal,
      );
    } catch (e) {
      if (e instanceof Unauthorized) throw e;
      return hit.principal;
    }
  }

  /**
   * The check of a cached credential under way, started if none is: one at a time per entry,
   * shared by every request that meets it. Its outcome replaces the entry (verify); a failure
   * other than a refusal leaves the entry as it was.
   */
  private checkOf(hash: string, hit: CachedPrincipal): Promise<Principal> {
    if (hit.checking) return hit.checking;
    const checking = this.verify(hash);
    hit.checking = checking;
    const done = () => {
      if (hit.checking === checking) hit.checking = null;
    };
    checking.then(done, done);
    return checking;
  }

  /** Look a credential up in the store and cache the principal (a revoked or unknown one is forgotten). */
  private async verify(hash: string): Promise<Principal> {
    const cred = await this.deps.credentials.byHash(hash);
    if (!cred || !safeEqual(cred.hash, hash) || cred.revokedAt) {
      this.cache.delete(hash);
      throw new Unauthorized();
    }
    const env = await this.deps.environments.byId(cred.envId);
    if (!env) {
      this.cache.delete(hash);
      throw new Unauthorized();
    }
    const principal: Principal = { env, kind: cred.kind, credentialHash: hash };
    if (this.deps.authCacheMs > 0) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(hash, {
        principal,
        until: this.deps.clock.now().getTime() + this.deps.authCacheMs,
        checking: null,
      });
    }
    return principal;
  }

  /**
   * `work`'s answer if it comes within `ms`; else `fallback`, or Unavailable when there is none.
   * The work goes on (a late answer still updates the cache); its late failure is not reported.
   */
  private within(work: Promise<Principal>, ms: number, fallback: Principal | null): Promise<Principal> {
    const scheduler = this.deps.scheduler;
    if (!scheduler) return work;
    return new Promise<Principal>((resolve, reject) => {
      let settled = false;
      const cancel = scheduler.after(ms, () => {
        if (settled) return;
        settled = true;
        if (fallback) resolve(fallback);
        else reject(new Unavailable('the database does not answer: the credential could not be verified'));
      });
      work.then(
        (p) => {
          if (settled) return;
          settled = true;
          cancel();
          resolve(p);
        },
        (e: unknown) => {
          if (settled) return;
          settled = true;
          cancel();
          reject(e);
        },
      );
    });
  }

  async byName(name: string): Promise<Environment> {
    const env = await this.deps.environments.byName(name);
    if (!env) throw new NotFound(`no environment named ${name}`);
    return env;
  }

  async require(id: EnvId): Promise<Environment> {
    const env = await this.deps.environments.byId(id);
    if (!env) throw new NotFound('no such environment');
    return env;
  }

  list(): Promise<Environment[]> {
    return this.deps.environments.list();
  }

  async setEnabled(id: EnvId, enabled: boolean): Promise<Environment> {
    return this.patch(id, { enabled });
  }

  async setWebhookUrl(id: EnvId, url: string | null): Promise<Environment> {
    if (url !== null && !httpUrl(url))
      throw new InvalidParameters([{ field: 'webhookUrl', message: 'must be an absolute http(s) URL' }]);
    return this.patch(id, { webhookUrl: url });
  }

  async setPrivacyEmail(id: EnvId, email: string | null): Promise<Environment> {
    if (email !== null && !EMAIL.test(email)) {
      throw new InvalidParameters([{ field: 'privacyEmail', message: 'must be an e-mail address' }]);
    }
    return this.patch(id, { privacyEmail: email });
  }

  /**
   * The origins whose pages may collect client tokens with this environment's publishable key
   * (each `scheme://host[:port]`, as browsers send `Origin`); an empty list allows none in
   * production and any in a sandbox.
   */
  async setClientOrigins(id: EnvId, origins: readonly string[]): Promise<Environment> {
    const clean: string[] = [];
    for (const o of origins) {
      if (httpUrl(o)?.origin !== o) {
        throw new InvalidParameters([
          {
            field: 'clientOrigins',
            message: `${o} is not an origin (scheme://host[:port], nothing after it)`,
          },
        ]);
      }
      if (!clean.includes(o)) clean.push(o);
    }
    if (clean.length > 50)
      throw new InvalidParameters([{ field: 'clientOrigins', message: 'at most 50 origins' }]);
    return this.patch(id, { clientOrigins: clean });
  }

  /**
   * The native apps (Android package names, iOS bundle ids) that may register mobile sessions
   * with this environment's publishable key (docs/mobile.md); an empty list allows none in
   * production and any in a sandbox.
   */
  async setClientApps(id: EnvId, apps: readonly string[]): Promise<Environment> {
    const clean: string[] = [];
    for (const a of apps) {
      if (!APP_ID.test(a))
        throw new InvalidParameters([
          {
            field: 'clientApps',
            message: `${a} is not a package name or bundle id (1 to 150 letters, digits, ".", "_" or "-")`,
          },
        ]);
      if (!clean.includes(a)) clean.push(a);
    }
    if (clean.length > 50) throw new InvalidParameters([{ field: 'clientApps', message: 'at most 50 apps' }]);
    return this.patch(id, { clientApps: clean });
  }

  /**
   * How one app's platform attestations are verified (docs/mobile.md, "Attestation"): App Attest's
   * Apple team id (null: none), Play Integrity's keys as the Play Console gives them (base64; null:
   * none; sealed with the master key before they are stored), whether a session must carry one.
   * Each part left undefined is kept as it is; an app with nothing left is removed.
   */
  async setAttestation(
    id: EnvId,
    app: string,
    change: { appleTeamId?: string | null; play?: PlayIntegrityKeys | null; required?: boolean },
  ): Promise<Environment> {
    if (!APP_ID.test(app))
      throw new InvalidParameters([
        {
          field: 'app',
          message: `${app} is not a package name or bundle id (1 to 150 letters, digits, ".", "_" or "-")`,
        },
      ]);
    if (
      change.appleTeamId !== undefined &&
      change.appleTeamId !== null &&
      !/^[A-Z0-9]{10}$/.test(change.appleTeamId)
    ) {
      throw new InvalidParameters([
        { field: 'appleTeamId', message: 'must be an Apple team id (10 capital letters and digits)' },
      ]);
    }
    if (change.play && !readPlayKeys(change.play)) {
      throw new InvalidParameters([
        {
          field: 'play',
          message:
            "must be the Play Console's keys: a base64 AES-256 decryption key and a base64 EC P-256 verification key",
        },
      ]);
    }
    const env = await this.require(id);
    const list = env.attestation ?? [];
    const was = list.find((a) => a.app === app) ?? { app, appleTeamId: null, play: null, required: false };
    const next: AppAttestationSettings = {
      app,
      appleTeamId: change.appleTeamId === undefined ? was.appleTeamId : change.appleTeamId,
      play:
        change.play === undefined
          ? was.play
          : change.play === null
            ? null
            : {
                decryptionKey: this.deps.sealer.seal(change.play.decryptionKey),
                verificationKey: this.deps.sealer.seal(change.play.verificationKey),
              },
      required: change.required ?? was.required,
    };
    const keep = next.appleTeamId !== null || next.play !== null || next.required;
    const rest = list.filter((a) => a.app !== app);
    if (keep && rest.length >= 50)
      throw new InvalidParameters([{ field: 'app', message: 'at most 50 apps' }]);
    return this.patch(id, { attestation: keep ? [...rest, next] : rest });
  }

  /**
   * How many days the environment keeps its raw records (events, rejected payloads, ended privacy
   * requests): 1 to 3650. The sweeper deletes older ones at its next pass; a longer retention
   * keeps what is still there.
   */
  async setRetentionDays(id: EnvId, days: number): Promise<Environment> {
    return this.patch(id, { retentionDays: checkRetentionDays(days) });
  }

  /** Every live API secret of an environment in clear (to verify the user signatures apps send). */
  async liveSecrets(envId: EnvId): Promise<string[]> {
    const live = (await this.deps.credentials.list(envId)).filter(
      (c) => c.kind === 'secret' && !c.revokedAt && c.sealed,
    );
    return live.map((c) => this.deps.sealer.open(c.sealed as string));
  }

  private async patch(id: EnvId, patch: Parameters<EnvironmentStore['update']>[1]): Promise<Environment> {
    const env = await this.deps.environments.update(id, patch);
    if (!env) throw new NotFound('no such environment');
    this.cache.clear();
    return env;
  }
}

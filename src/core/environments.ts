/**
 * Environments (tenants) and their credentials: creation with default policies, API secrets
 * (several live at once for rotation), read-only analyst keys, and authentication of a presented
 * secret. Only a SHA-256 hash of each secret is used for look-up, compared in constant time.
 */
import type { Clock, CredentialStore, EnvironmentStore } from './ports';
import type { Credential, CredentialKind, EnvId, Environment, Principal } from './model';
import { asEnvId } from './model';
import { randomToken, safeEqual, Sealer, sha256Hex, uuid } from './crypto';
import { Forbidden, InvalidParameters, NotFound, Unauthorized } from './errors';
import { APP_ID } from './client/mobile';
import type { PolicyService } from './policies/service';

export interface EnvironmentDeps {
  environments: EnvironmentStore;
  credentials: CredentialStore;
  policies: PolicyService;
  sealer: Sealer;
  clock: Clock;
  authCacheMs: number;
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
  private readonly cache = new Map<string, { principal: Principal; until: number }>();

  constructor(private readonly deps: EnvironmentDeps) {}

  /** Create an environment with its default policies and a first API secret. */
  async create(name: string, opts: { sandbox?: boolean; secret?: string; webhookUrl?: string | null } = {}): Promise<{ env: Environment; secret: string }> {
    if (!ENV_NAME.test(name)) {
      throw new InvalidParameters([{ field: 'name', message: 'lower-case letters, digits, - and _, at most 63 characters' }]);
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
  async ensureSandbox(secret: string | undefined, webhookUrl: string | undefined): Promise<{ env: Environment; generatedSecret: string | null }> {
    const existing = await this.deps.environments.byName('sandbox');
    if (existing) {
      if (secret && !(await this.deps.credentials.byHash(sha256Hex(secret)))) {
        await this.addCredential(existing.id, 'secret', 'RAMPART_API_SECRET', secret);
      }
      if (webhookUrl && existing.webhookUrl !== webhookUrl) {
        return { env: (await this.deps.environments.update(existing.id, { webhookUrl })) ?? existing, generatedSecret: null };
      }
      return { env: existing, generatedSecret: null };
    }
    const created = await this.create('sandbox', { sandbox: true, secret, webhookUrl: webhookUrl ?? null });
    return { env: created.env, generatedSecret: secret ? null : created.secret };
  }

  async addCredential(envId: EnvId, kind: CredentialKind, label: string, given?: string): Promise<CreatedSecret> {
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
    } else {
      const cred = await this.deps.credentials.byHash(hash);
      if (!cred || !safeEqual(cred.hash, hash) || cred.revokedAt) throw new Unauthorized();
      const env = await this.deps.environments.byId(cred.envId);
      if (!env) throw new Unauthorized();
      principal = { env, kind: cred.kind, credentialHash: hash };
      if (this.deps.authCacheMs > 0) {
        if (this.cache.size > 10_000) this.cache.clear();
        this.cache.set(hash, { principal, until: now + this.deps.authCacheMs });
      }
    }
    if (!principal.env.enabled) throw new Forbidden('this environment is disabled');
    return principal;
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
    if (url !== null && !httpUrl(url)) throw new InvalidParameters([{ field: 'webhookUrl', message: 'must be an absolute http(s) URL' }]);
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
        throw new InvalidParameters([{ field: 'clientOrigins', message: `${o} is not an origin (scheme://host[:port], nothing after it)` }]);
      }
      if (!clean.includes(o)) clean.push(o);
    }
    if (clean.length > 50) throw new InvalidParameters([{ field: 'clientOrigins', message: 'at most 50 origins' }]);
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
      if (!APP_ID.test(a)) throw new InvalidParameters([{ field: 'clientApps', message: `${a} is not a package name or bundle id (1 to 150 letters, digits, ".", "_" or "-")` }]);
      if (!clean.includes(a)) clean.push(a);
    }
    if (clean.length > 50) throw new InvalidParameters([{ field: 'clientApps', message: 'at most 50 apps' }]);
    return this.patch(id, { clientApps: clean });
  }

  /** Every live API secret of an environment in clear (to verify the user signatures apps send). */
  async liveSecrets(envId: EnvId): Promise<string[]> {
    const live = (await this.deps.credentials.list(envId)).filter((c) => c.kind === 'secret' && !c.revokedAt && c.sealed);
    return live.map((c) => this.deps.sealer.open(c.sealed as string));
  }

  private async patch(id: EnvId, patch: Parameters<EnvironmentStore['update']>[1]): Promise<Environment> {
    const env = await this.deps.environments.update(id, patch);
    if (!env) throw new NotFound('no such environment');
    this.cache.clear();
    return env;
  }
}

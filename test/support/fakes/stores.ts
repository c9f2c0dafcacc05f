/**
 * In-memory fakes of the core's storage ports (core/ports.ts, core/webhooks/ports.ts,
 * core/privacy/ports.ts): what each method promises, kept in maps and arrays, every query scoped
 * to its environment as the MongoDB repositories scope theirs.
 */
import type {
  CredentialStore,
  DebuggerStore,
  EnvironmentStore,
  EventStore,
  PolicyStore,
} from '../../../src/core/ports';
import type { Credential, EnvId, Environment, RejectedPayload, StoredEvent } from '../../../src/core/model';
import type { PolicyRevision, PolicySet } from '../../../src/core/policies/model';
import type { DeliveryAttempt, WebhookDelivery } from '../../../src/core/webhooks/model';
import type {
  DeliveryListQuery,
  DeliveryOutcome,
  DueQuery,
  WebhookDeliveryStore,
} from '../../../src/core/webhooks/ports';
import type { PrivacyJob } from '../../../src/core/privacy/model';
import type { ListImport, ListItem, ListSet } from '../../../src/core/lists/model';
import { holdsAll, itemOrder } from '../../../src/core/lists/conditions';
import type { ListStore } from '../../../src/core/lists/ports';
import type { AuditEntry, AuditLog } from '../../../src/core/audit/model';
import type { PrivacyJobPatch, PrivacyStore, PurgeSubject } from '../../../src/core/privacy/ports';
import type { Session, SessionStore } from '../../../src/core/sessions/service';
import { ownNames } from '../../../src/core/privacy/names';
import type { AttestedKeyRecord, AttestedKeyStore } from '../../../src/core/client/attestation/verifier';
import type { ClientObservation, ClientObservationSink } from '../../../src/core/client/service';
import type { ClientEvent, ClientEventSink } from '../../../src/core/client/events';

/**
 * A copy of stored data, as a store hands it out (a read decodes a fresh document) and keeps it (a
 * write serialises what it was given): plain objects, arrays and dates copied by hand, anything
 * else (a Buffer, a Map) by structuredClone. By hand, since a verdict reads a policy set, a
 * credential and an environment, and structuredClone's serialisation was a tenth of a verdict's
 * time on these fakes.
 */
function copy<T>(v: T): T {
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) return v.map(copy) as T;
  if (v instanceof Date) return new Date(v.getTime()) as T;
  if (Object.getPrototypeOf(v) !== Object.prototype) return structuredClone(v);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) out[k] = copy((v as Record<string, unknown>)[k]);
  return out as T;
}

export function createFakeEnvironmentStore(): EnvironmentStore & { readonly all: Environment[] } {
  const all: Environment[] = [];
  return {
    all,
    create: async (env) => void all.push(copy(env)),
    byId: async (id) => copy(all.find((e) => e.id === id) ?? null),
    byName: async (name) => copy(all.find((e) => e.name === name) ?? null),
    byPublishableKey: async (key) => copy(all.find((e) => e.publishableKey === key) ?? null),
    list: async () => copy(all),
    async update(id, patch) {
      const e = all.find((x) => x.id === id);
      if (!e) return null;
      Object.assign(e, patch);
      return copy(e);
    },
  };
}

export function createFakeCredentialStore(): CredentialStore {
  const all: Credential[] = [];
  return {
    insert: async (c) => void all.push(copy(c)),
    byHash: async (hash) => copy(all.find((c) => c.hash === hash) ?? null),
    list: async (env) => copy(all.filter((c) => c.envId === env)),
    async revoke(env, hash, at) {
      const c = all.find((x) => x.envId === env && x.hash === hash && !x.revokedAt);
      if (!c) return false;
      c.revokedAt = at;
      return true;
    },
  };
}

export interface FakeEventStore extends EventStore {
  readonly all: StoredEvent[];
}

export function createFakeEventStore(): FakeEventStore {
  const all: StoredEvent[] = [];
  return {
    all,
    append: async (e) => void all.push(e),
  };
}

export interface FakeDebuggerStore extends DebuggerStore {
  readonly all: RejectedPayload[];
}

export function createFakeDebuggerStore(): FakeDebuggerStore {
  const all: RejectedPayload[] = [];
  return {
    all,
    append: async (e) => void all.push(e),
  };
}

/** Policy sets with their optimistic version check, as the MongoDB repository does it. */
export function createFakePolicyStore(): PolicyStore {
  const sets = new Map<EnvId, PolicySet>();
  const revisions: PolicyRevision[] = [];
  return {
    getSet: async (env) => copy(sets.get(env) ?? null),
    async putSet(set, expectedVersion) {
      if ((sets.get(set.envId)?.version ?? 0) !== expectedVersion) return false;
      sets.set(set.envId, copy(set));
      return true;
    },
    addRevisions: async (rs) => void revisions.push(...copy(rs)),
    revisions: async (env, ids) => copy(revisions.filter((r) => r.envId === env && ids.includes(r.policyId))),
    revision: async (env, id) => copy(revisions.find((r) => r.envId === env && r.id === id) ?? null),
  };
}

/** Deliveries with their leases: a claim holds a delivery for one owner and lease version. */
export function createFakeWebhookStore(): WebhookDeliveryStore & { readonly all: WebhookDelivery[] } {
  const all: WebhookDelivery[] = [];
  const find = (d: WebhookDelivery) => all.find((x) => x.id === d.id);
  const held = (d: WebhookDelivery, owner: string) => {
    const x = find(d);
    return x && x.leaseOwner === owner && x.leaseVersion === d.leaseVersion && x.status === 'delivering'
      ? x
      : null;
  };
  const order = (a: WebhookDelivery, b: WebhookDelivery) =>
    a.createdAt.getTime() - b.createdAt.getTime() || a.seq - b.seq || a.id.localeCompare(b.id);
  return {
    all,
    async enqueue(d) {
      if (all.some((x) => x.id === d.id)) return false;
      all.push(copy(d));
      return true;
    },
    async insert(d) {
      if (all.some((x) => x.id === d.id)) throw new Error(`duplicate delivery ${d.id}`);
      all.push(copy(d));
    },
    get: async (env, id) => copy(all.find((x) => x.id === id && x.envId === env) ?? null),
    async list(env, q: DeliveryListQuery) {
      const newest = all
        .filter(
          (x) =>
            x.envId === env && (!q.status || x.status === q.status) && (!q.userId || x.userId === q.userId),
        )
        .sort((a, b) => -order(a, b));
      const before = q.before;
      const page = before
        ? newest.filter(
            (x) =>
              x.createdAt < before.createdAt ||
              (x.createdAt.getTime() === before.createdAt.getTime() && x.id < before.id),
          )
        : newest;
      return copy(page.slice(0, q.limit));
    },
    listForUser: async (env, userId, limit) =>
      copy(
        all
          .filter((x) => x.envId === env && x.userId === userId)
          .sort((a, b) => -order(a, b))
          .slice(0, limit),
      ),
    openOfUser: async (env, userId, limit) =>
      copy(
        all
          .filter(
            (x) =>
              x.envId === env && x.userId === userId && (x.status === 'pending' || x.status === 'delivering'),
          )
          .sort(order)
          .slice(0, limit),
      ),
    async due(now, q: DueQuery) {
      const claimable = (x: WebhookDelivery) =>
        (x.status === 'delivering' && x.leaseUntil !== null && x.leaseUntil < now) ||
        (x.status === 'pending' && x.nextAttemptAt !== null && x.nextAttemptAt <= now);
      if (q.user) {
        const user = q.user;
        return {
          deliveries: copy(
            all
              .filter(
                (x) =>
                  x.envId === user.env &&
                  x.userId === user.userId &&
                  (x.status === 'pending' || x.status === 'delivering'),
              )
              .sort(order)
              .slice(0, q.limit)
              .filter(claimable),
          ),
          next: null,
        };
      }
      const skipped = (x: WebhookDelivery) =>
        q.skipIds?.includes(x.id) ||
        q.skipUsers?.some((u) => u.env === x.envId && u.userId === x.userId) ||
        q.skipEnvs?.includes(x.envId);
      const expired = all
        .filter((x) => x.status === 'delivering' && claimable(x) && !skipped(x))
        .slice(0, q.limit);
      if (expired.length >= q.limit) return { deliveries: copy(expired), next: q.after ?? null };
      // Pending ones in the order they fell due (time, then id), from the cursor on; at most 256 examined.
      const at = (x: WebhookDelivery) => (x.nextAttemptAt as Date).getTime();
      const after = q.after;
      const pending = all
        .filter((x) => x.status === 'pending' && claimable(x))
        .sort((a, b) => at(a) - at(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .filter(
          (x) => !after || at(x) > after.at.getTime() || (at(x) === after.at.getTime() && x.id > after.id),
        );
      const found = [...expired];
      let examined = 0;
      for (const x of pending) {
        examined++;
        const cursor = { at: new Date(at(x)), id: x.id };
        if (!skipped(x)) found.push(x);
        if (found.length >= q.limit || (examined >= 256 && examined < pending.length))
          return { deliveries: copy(found), next: cursor };
      }
      return { deliveries: copy(found), next: null };
    },
    async claim(d, owner, now, leaseUntil) {
      const x = find(d);
      if (!x || x.leaseVersion !== d.leaseVersion) return null;
      const free =
        x.status === 'pending' || (x.status === 'delivering' && x.leaseUntil !== null && x.leaseUntil < now);
      if (!free) return null;
      Object.assign(x, {
        status: 'delivering',
        leaseOwner: owner,
        leaseUntil,
        leaseVersion: x.leaseVersion + 1,
      });
      return copy(x);
    },
    async complete(d, owner, attempt: DeliveryAttempt, outcome: DeliveryOutcome) {
      const x = held(d, owner);
      if (!x) return false;
      Object.assign(x, { ...outcome, url: attempt.url, leaseOwner: null, leaseUntil: null });
      x.attempts.push(copy(attempt));
      return true;
    },
    async release(d, owner, nextAttemptAt) {
      const x = held(d, owner);
      if (!x) return false;
      Object.assign(x, { status: 'pending', nextAttemptAt, leaseOwner: null, leaseUntil: null });
      return true;
    },
    async openDeliveries(limit) {
      const open = all.filter((x) => x.status === 'pending' || x.status === 'delivering').sort(order);
      return {
        total: open.length,
        oldest: open.slice(0, limit).map((x) => ({ id: x.id, createdAt: new Date(x.createdAt) })),
      };
    },
    // Finished deliveries stay (their ids refuse repeated notices here); the history's retention is the store's.
    sweep: async () => ({ dedupe: 0 }),
  };
}

export interface FakePrivacyStore extends PrivacyStore {
  readonly jobs: PrivacyJob[];
  readonly exports: Map<string, { envId: EnvId; expiresAt: Date; json: string }>;
  /** What purgeUser was asked to delete. */
  readonly purged: { env: EnvId; subject: PurgeSubject }[];
}

/**
 * Jobs and exports in memory; a user's data is read from the fake event and debugger stores
 * (and e-mail look-ups from `emails`), and a purge deletes what those hold of the user.
 */
export function createFakePrivacyStore(data: {
  events: FakeEventStore;
  debuggerLog: FakeDebuggerStore;
  emails?: Map<string, string[]>;
}): FakePrivacyStore {
  const jobs: PrivacyJob[] = [];
  const exports = new Map<string, { envId: EnvId; expiresAt: Date; json: string }>();
  const purged: { env: EnvId; subject: PurgeSubject }[] = [];
  const job = (env: EnvId, id: string) => jobs.find((j) => j.envId === env && j.id === id);
  const remove = <T>(list: T[], drop: (x: T) => boolean) => {
    const gone = list.filter(drop);
    for (const x of gone) list.splice(list.indexOf(x), 1);
    return gone.length;
  };
  return {
    jobs,
    exports,
    purged,
    insertJob: async (j) => void jobs.push(copy(j)),
    getJob: async (env, id) => copy(job(env, id) ?? null),
    jobBySignedId: async (id) => copy(jobs.find((j) => j.id === id) ?? null),
    async updateJob(env, id, patch: PrivacyJobPatch) {
      const j = job(env, id);
      if (j) Object.assign(j, patch);
    },
    listJobs: async (env, limit, userId) =>
      copy(
        jobs
          .filter((j) => j.envId === env && (!userId || j.userId === userId))
          .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
          .slice(0, limit),
      ),
    expiredJobs: async (now, limit) =>
      copy(jobs.filter((j) => j.expiresAt <= now && j.status !== 'expired').slice(0, limit)),
    stalePendingJobs: async (before, limit) =>
      copy(jobs.filter((j) => j.status === 'pending' && j.createdAt < before).slice(0, limit)),
    // The unit tier has no app events (they are an integration concern: client_events).
    appEventsForUser: async () => [],
    async putExport(env, j, json) {
      exports.set(j.id, { envId: env, expiresAt: j.expiresAt, json });
      return Buffer.byteLength(json);
    },
    readExport: async (env, jobId) => {
      const e = exports.get(jobId);
      return e && e.envId === env ? e.json : null;
    },
    deleteExport: async (env, jobId) => (exports.get(jobId)?.envId === env && exports.delete(jobId) ? 1 : 0),
    async deleteExpiredExports(now) {
      let n = 0;
      for (const [id, e] of exports) if (e.expiresAt <= now && exports.delete(id)) n++;
      return n;
    },
    eventsForUser: async (env, userId) =>
      copy(data.events.all.filter((e) => e.envId === env && e.userId === userId)),
    rejectedForUser: async (env, userId) =>
      copy(data.debuggerLog.all.filter((e) => e.envId === env && e.userId === userId)),
    userIdsByEmail: async (env, email, limit) => (data.emails?.get(`${env}:${email}`) ?? []).slice(0, limit),
    async purgeUser(env, subject) {
      purged.push({ env, subject: copy(subject) });
      // The user's records, and those without a user id that name the user (as the MongoDB store).
      const names = new Set(subject.names);
      for (const e of data.events.all)
        if (e.envId === env && e.userId === subject.userId) for (const n of ownNames(e)) names.add(n);
      const namesUser = (e: { userId: string | null; names?: string[]; email?: string | null }) =>
        e.userId === null &&
        ((e.email != null && names.has(e.email)) || (e.names ?? []).some((n) => names.has(n)));
      return {
        events: remove(
          data.events.all,
          (e) => e.envId === env && (e.userId === subject.userId || namesUser(e)),
        ),
        rejected_payloads: remove(
          data.debuggerLog.all,
          (e) => e.envId === env && (e.userId === subject.userId || namesUser(e)),
        ),
        privacy_jobs: remove(jobs, (j) => j.envId === env && j.userId === subject.userId),
      };
    },
  };
}

/** The console's sign-in sessions, by id. */
export function createFakeSessionStore(): SessionStore & { readonly all: Map<string, Session> } {
  const all = new Map<string, Session>();
  return {
    all,
    insert: async (s) => void all.set(s.id, copy(s)),
    byId: async (id) => copy(all.get(id) ?? null),
    async touch(id, lastSeenAt, expiresAt) {
      const s = all.get(id);
      if (s) Object.assign(s, { lastSeenAt, expiresAt });
    },
    delete: async (id) => all.delete(id),
    async deleteExpired(now) {
      let n = 0;
      for (const [id, s] of all) if (s.expiresAt <= now && all.delete(id)) n++;
      return n;
    },
  };
}

/** Lists, their items and import jobs in maps, with the MongoDB repository's version check and query semantics. */
export function createFakeListStore(): ListStore & {
  items: Map<string, ListItem>;
  imports: Map<string, ListImport>;
} {
  const sets = new Map<EnvId, ListSet>();
  const items = new Map<string, ListItem>();
  const imports = new Map<string, ListImport>();
  const key = (env: EnvId, listId: string, id: string) => `${env}\u0000${listId}\u0000${id}`;
  const of = (env: EnvId, listId: string) =>
    [...items.values()].filter((i) => i.envId === env && i.listId === listId);
  const copy = (s: ListSet): ListSet => ({ ...s, lists: s.lists.map((l) => ({ ...l })) });
  return {
    items,
    imports,
    async getSet(env) {
      const s = sets.get(env);
      return s ? copy(s) : null;
    },
    async putSet(set, expected) {
      const cur = sets.get(set.envId);
      if ((cur?.version ?? 0) !== expected) return false;
      sets.set(set.envId, copy(set));
      return true;
    },
    async bumpVersion(env) {
      const cur = sets.get(env) ?? { envId: env, version: 0, lists: [] };
      cur.version++;
      sets.set(env, cur);
      return cur.version;
    },
    async getItem(env, listId, id) {
      const i = items.get(key(env, listId, id));
      return i ? { ...i } : null;
    },
    async getItems(env, listId, ids) {
      return ids.flatMap((id) => {
        const i = items.get(key(env, listId, id));
        return i ? [{ ...i }] : [];
      });
    },
    async putItems(list) {
      for (const i of list) items.set(key(i.envId, i.listId, i.id), { ...i });
    },
    async queryItems(env, listId, q) {
      const rows = of(env, listId).filter((i) => holdsAll(i, q.conditions));
      rows.sort(itemOrder(q.sort));
      return rows.slice(q.skip, q.skip + q.limit).map((i) => ({ ...i }));
    },
    async countItems(env, listId, conditions) {
      return of(env, listId).filter((i) => holdsAll(i, conditions)).length;
    },
    async *scanItems(env, listIds, activeOnly) {
      for (const listId of listIds)
        yield of(env, listId)
          .filter((i) => !activeOnly || !i.archived)
          .sort((a, b) => (a.id < b.id ? -1 : 1))
          .map((i) => ({ ...i }));
    },
    async deleteItems(env, listId) {
      for (const i of of(env, listId)) items.delete(key(env, listId, i.id));
    },
    async putImport(job) {
      imports.set(`${job.envId}\u0000${job.id}`, { ...job });
    },
    async getImport(env, id) {
      const j = imports.get(`${env}\u0000${id}`);
      return j ? { ...j } : null;
    },
    async sweepImports(before) {
      let n = 0;
      for (const [k, j] of imports) if (j.finishedAt && j.finishedAt < before && imports.delete(k)) n++;
      return n;
    },
  };
}

/** The audit log in an array, newest last. */
export function createFakeAuditLog(): AuditLog & { entries: AuditEntry[] } {
  const entries: AuditEntry[] = [];
  return {
    entries,
    async append(list) {
      entries.push(...list);
    },
    async recent(env, q) {
      return entries
        .filter(
          (e) =>
            e.envId === env &&
            (!q.targetId || e.target.id === q.targetId) &&
            (!q.listId || e.target.listId === q.listId),
        )
        .reverse()
        .slice(0, q.limit);
    },
  };
}

/** Attested App Attest keys (core/client/attestation/verifier.ts), as store/attested-keys.ts keeps them. */
export function createFakeAttestedKeyStore(): AttestedKeyStore & {
  readonly all: Map<string, AttestedKeyRecord>;
} {
  const all = new Map<string, AttestedKeyRecord>();
  const id = (envId: EnvId, keyId: string) => `${envId}:${keyId}`;
  return {
    all,
    get: async (envId, keyId) => copy(all.get(id(envId, keyId)) ?? null),
    async add(r) {
      if (!all.has(id(r.envId, r.keyId))) all.set(id(r.envId, r.keyId), copy(r));
    },
    async advance(envId, keyId, counter, at) {
      const r = all.get(id(envId, keyId));
      if (!r || r.counter >= counter) return false;
      r.counter = counter;
      r.usedAt = at;
      return true;
    },
  };
}

/** What the collector records of each client (core/client/service.ts), in an array. */
export function createFakeObservationSink(): ClientObservationSink & { readonly all: ClientObservation[] } {
  const all: ClientObservation[] = [];
  return { all, record: (o) => void all.push(copy(o)) };
}

/** Native apps' events (core/client/events.ts), in an array. */
export function createFakeClientEventSink(): ClientEventSink & { readonly all: ClientEvent[] } {
  const all: ClientEvent[] = [];
  return { all, append: (events) => void all.push(...copy(events)) };
}

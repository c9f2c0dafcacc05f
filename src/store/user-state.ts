/**
 * Users and their devices on the state layer: one document per user (`users`, `_id`
 * `<env>:<user>`) holding the profile and every device under `d.<device key>`, so a verdict
 * reads a user in one look-up (none when cached) and never scans; a per-device copy in `devices`
 * under the device's first token (`<env>:<token>`), for dashboard searches (the read model,
 * refreshed behind the hot path when something a dashboard shows changes) and to find the device
 * a token names; and a token document (`device_tokens`, `<env>:<token>` → user and device key) for
 * a token no copy names (another name of a device, or a device created while its user's document
 * was not at hand), as earlier versions wrote for every token.
 *
 * Every change is a delta: latest times by `$max`, first times by `$min`, tokens and countries by
 * `$addToSet`, review feedback by `$set` of the fields that make the state. Two requests (or two
 * instances) changing one user never lose each other's changes.
 */
import type { Db } from 'mongodb';
import {
  unknownDeviceContext,
  type Device,
  type DeviceContext,
  type EnvId,
  type UserProfile,
} from '../core/model';
import type { DeviceChange, ProfileChange, UserChange, UserState, UserStateStore } from '../core/ports';
import { MAX_LINKED_PROFILES } from '../core/devices/machine';
import {
  emptyBehaviour,
  epochWeight,
  FIRST_SEEN_LEVELS,
  HOSTILE_LEVELS,
  type Behaviour,
  type BehaviourChange,
  type PendingChallenge,
  type Table,
  type TableEntry,
} from '../core/scoring/behaviour-tables';
import { planBehaviourEviction } from '../core/scoring/behaviour-eviction';
import { LEVELS, type FeatureValues, type Level } from '../core/scoring/features';
import type { IndexSpec } from './database';
import { fromJson, idOf, keptIds, toJson } from './ids';
import {
  child,
  delta,
  Edit,
  fieldName,
  fromFieldName,
  incField,
  maxField,
  minField,
  type Changes,
  type Delta,
  type Doc,
  dict,
  type KeyedPaths,
} from './state/delta';
import type { StateLayer } from './state/layer';
import { unpackAs } from './state/pack';
import type { StateStoreDeps } from './deps';

export const USERS = 'users';
export const DEVICE_TOKENS = 'device_tokens';
export const DEVICES = 'devices';

/** Countries remembered per user. */
const MAX_COUNTRIES = 50;
/**
 * Devices kept per user. Beyond it, creating one removes the least recently seen device without
 * feedback (then a removed one): an account hammered from thousands of user agents stays small.
 */
export const MAX_DEVICES_PER_USER = 200;
/**
 * The dashboard copy of a device is refreshed for a mere sighting at most this often (a new
 * device, feedback, a removal or a new country refresh it at once). Dashboards search and sort on
 * the copy, and show each device as its user's document has it now (QueryService.devices).
 */
export const PROJECTION_REFRESH_MS = 10 * 60_000;

/**
 * The objects of a user document keyed by data (see KeyedPaths): its devices by key, its
 * behaviour tables by value, its pending challenges by id.
 */
export const USER_KEYED: KeyedPaths = [['d'], ['p', 't', '*'], ['p', 'h', '*'], ['p', 'pd']];

/** The fields of a user document that queries filter on (kept as they are when packed). */
export const USER_QUERY_FIELDS = ['envId', 'userId', 'email', 'lastSeenAt'] as const;
/**
 * The fields of a device's dashboard copy that the embedded database's queries filter, sort or
 * project on (kept as they are when packed: see state/pack.ts); the rest of a search's filter is
 * checked on each decoded copy. On MongoDB copies are never packed, and its indexes serve every
 * field.
 */
export const DEVICE_QUERY_FIELDS = ['envId', 'userId', 'token', 'feedback', 'lastSeenAt'] as const;

/**
 * The order the state layer writes these collections in (FlushOptions.writeOrder): what names a
 * device by its token (its dashboard copy, a token's own document) only after its user document,
 * so that a token found names a device that exists (a crash or a failed write between the two
 * leaves a user without the copy, never the reverse).
 */
export const USER_WRITE_ORDER: Readonly<Record<string, readonly string[]>> = {
  [DEVICE_TOKENS]: [USERS],
  [DEVICES]: [USERS],
};

export const userStateIndexes: IndexSpec[] = [
  {
    collection: USERS,
    indexes: [
      { key: { envId: 1, lastSeenAt: -1 }, name: 'env_seen' },
      { key: { envId: 1, email: 1 }, name: 'env_email' },
    ],
  },
  { collection: DEVICE_TOKENS, indexes: [{ key: { envId: 1, userId: 1 }, name: 'env_user' }] },
];

interface ContextDoc extends Omit<DeviceContext, 'properties'> {
  properties: string;
}

/** A device inside its user's document. */
interface DeviceSub {
  key: string;
  identity: Device['identity'];
  /** Every token issued for it; the first is its token. */
  tokens: string[];
  createdAt: Date;
  lastSeenAt: Date;
  context?: ContextDoc;
  feedback?: Device['feedback'];
  approvedAt?: Date | null;
  escalatedAt?: Date | null;
  mitigatedAt?: Date | null;
  removedAt?: Date | null;
  lastEventRisk?: number | null;
  /** Sightings (increments). */
  n?: number;
  /** When the dashboard copy was last refreshed (event time). */
  pj?: Date;
  /** A browser's machine vector, as last seen. */
  mk?: string;
  /** Other browser profiles' keys that name this device. */
  lk?: string[];
}

interface UserDocument {
  envId: EnvId;
  userId: string;
  email?: string | null;
  username?: string | null;
  phone?: string | null;
  registeredAt?: Date | null;
  /** Trait key (as a field name) → JSON text of its value. (Earlier versions: one JSON text.) */
  traits?: Record<string, string> | string;
  createdAt?: Date;
  lastSeenAt?: Date;
  /** `<ISO time>|<lat>|<lon>|<country>`: ISO times order as text, so `$max` keeps the latest. */
  lastLoc?: string;
  countries?: string[];
  lastPasswordResetAt?: Date | null;
  /** Events that named the user (increments). */
  n?: number;
  d?: Record<string, DeviceSub>;
  /** The behavioural model (see BehaviourDoc). */
  p?: BehaviourDoc;
}

/**
 * The behavioural model as stored: tables of decayed counts per level, values as field names.
 * `n`/`hn`: decayed totals (legitimate, hostile); `t`/`h`: the tables; `pd`: pending challenges;
 * `ll`: `<ISO time>|<lat>|<lon>|<country>` of the last legitimate location (`$max` keeps the latest).
 */
interface BehaviourDoc {
  n?: number;
  t?: Record<string, Record<string, { c?: number; l?: number; f?: number }>>;
  hn?: number;
  h?: Record<string, Record<string, { c?: number; l?: number; f?: number }>>;
  pd?: Record<
    string,
    { at?: number; v?: Record<string, string>; tw?: number; to?: boolean; ca?: boolean; cr?: string }
  >;
  ll?: string;
}

/** A device as stored in the dashboard copy (`devices`), as earlier versions stored devices. */
/** A device's dashboard copy (the `devices` collection): its score is stored as `risk` (0-100). */
export interface DeviceDoc extends Omit<Device, 'context' | 'riskScore'> {
  _id: string;
  context: ContextDoc;
  risk: number;
}

const toContextDoc = (c: DeviceContext): ContextDoc => ({ ...c, properties: toJson(c.properties) });
const fromContextDoc = (c: ContextDoc | undefined): DeviceContext =>
  c ? { ...c, properties: fromJson(c.properties, {}) } : unknownDeviceContext();

/** A device copy as stored (packed by an embedded Rampart, or plain) as the document it stands for. */
export const storedDevice = (stored: DeviceDoc): DeviceDoc => unpackAs(stored);
export const deviceToDoc = ({ riskScore, ...d }: Device): DeviceDoc => ({
  _id: idOf(d.envId, d.token),
  ...d,
  risk: riskScore,
  context: toContextDoc(d.context),
});
export const deviceFromDoc = ({ _id, risk, ...d }: DeviceDoc): Device => ({
  ...d,
  riskScore: risk,
  context: fromContextDoc(d.context),
});

/** A device's own risk, 0–100: set by feedback once given, else the latest event's risk. */
function deviceRisk(s: DeviceSub): number {
  if (s.feedback === 'approved') return 0;
  if (s.feedback === 'reported') return 100;
  return s.lastEventRisk === null || s.lastEventRisk === undefined ? 0 : Math.round(s.lastEventRisk * 100);
}

function deviceOf(env: EnvId, userId: string, s: DeviceSub): Device {
  return {
    token: s.tokens[0] ?? '',
    envId: env,
    userId,
    identity: s.identity,
    fingerprintKey: s.key,
    createdAt: s.createdAt,
    lastSeenAt: s.lastSeenAt,
    approvedAt: s.approvedAt ?? null,
    escalatedAt: s.escalatedAt ?? null,
    mitigatedAt: s.mitigatedAt ?? null,
    removedAt: s.removedAt ?? null,
    riskScore: deviceRisk(s),
    feedback: s.feedback ?? null,
    context: fromContextDoc(s.context),
    lastEventRisk: s.lastEventRisk ?? null,
    sightings: s.n ?? 0,
    machine: s.mk ?? null,
    linkedKeys: Array.isArray(s.lk) ? s.lk : [],
  };
}

function traitsOf(t: UserDocument['traits']): Record<string, unknown> {
  if (typeof t === 'string') return fromJson(t, {});
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(t ?? {})) out[fromFieldName(k)] = fromJson<unknown>(v, null);
  return out;
}

function lastLocationOf(loc: string | undefined): UserProfile['lastLocation'] {
  if (!loc) return null;
  const [at, lat, lon, country] = loc.split('|');
  const when = new Date(at ?? '');
  if (Number.isNaN(when.getTime())) return null;
  return { at: when, lat: Number(lat), lon: Number(lon), country: country ? country : null };
}

/**
 * The hot path's view of a user document (memoised by the state layer until it changes).
 * `behaviour`: its decoded model when kept (see KeptBehaviour), else decoded here.
 */
function stateOf(env: EnvId, userId: string, doc: Doc | null, behaviour?: Behaviour): UserState | null {
  if (!doc) return null;
  const u = doc as unknown as UserDocument;
  const devices = Object.values(u.d ?? {})
    .filter((s) => s && Array.isArray(s.tokens) && s.tokens.length > 0)
    .map((s) => deviceOf(env, userId, s))
    .sort((a, b) => b.lastSeenAt.getTime() - a.lastSeenAt.getTime());
  const firstSeen = u.createdAt ?? u.lastSeenAt ?? new Date(0);
  const profile: UserProfile = {
    envId: env,
    userId,
    email: u.email ?? null,
    username: u.username ?? null,
    phone: u.phone ?? null,
    registeredAt: u.registeredAt ?? null,
    traits: traitsOf(u.traits),
    createdAt: firstSeen,
    lastSeenAt: u.lastSeenAt ?? firstSeen,
    lastLocation: lastLocationOf(u.lastLoc),
    countries: u.countries ?? [],
    lastPasswordResetAt: u.lastPasswordResetAt ?? null,
    deviceCount: devices.filter((d) => !d.removedAt).length,
    eventCount: u.n ?? 0,
  };
  return { profile, devices, behaviour: behaviour ?? behaviourOf(u.p) };
}

/** A table entry as the model reads it, or null for one it skips (no positive count). */
function entryOf(e: { c?: number; l?: number; f?: number } | undefined): TableEntry | null {
  if (!e || typeof e.c !== 'number' || e.c <= 0) return null;
  // Stored as the model reads it (every entry written since first seen): the model's table holds
  // the stored entry itself, not a copy, so that a user's kept model adds no objects (three boxed
  // numbers each) for the collector to mark, and a change of the stored entry is the model's too.
  if (typeof e.l === 'number' && (e.f === undefined || typeof e.f === 'number')) return e as TableEntry;
  const entry: TableEntry = { c: e.c, l: typeof e.l === 'number' ? e.l : 0 };
  if (typeof e.f === 'number') entry.f = e.f;
  return entry;
}

function tableOf(raw: Record<string, { c?: number; l?: number; f?: number }> | undefined): Table {
  const t: Table = dict();
  for (const k in raw) {
    const entry = entryOf(raw[k]);
    if (entry) t[fromFieldName(k)] = entry;
  }
  return t;
}

function pendingOf(raw: BehaviourDoc['pd']): Behaviour['pending'] {
  const pending: Behaviour['pending'] = dict();
  for (const [id, pd] of Object.entries(raw ?? {})) {
    if (typeof pd?.at !== 'number') continue;
    const values: Partial<FeatureValues> = {};
    for (const [k, v] of Object.entries(pd.v ?? {}))
      if ((LEVELS as readonly string[]).includes(k) && typeof v === 'string') values[k as Level] = v;
    pending[fromFieldName(id)] = {
      at: pd.at,
      values,
      tentative: typeof pd.tw === 'number' ? pd.tw : 0,
      ...(pd.to === true ? { operator: true } : {}),
      ...(typeof pd.ca === 'boolean'
        ? { client: { app: pd.ca, release: typeof pd.cr === 'string' ? pd.cr : null } }
        : {}),
    };
  }
  return pending;
}

function lastLegitOf(ll: string | undefined): Behaviour['lastLegit'] {
  if (!ll) return null;
  const [at, lat, lon, cc] = ll.split('|');
  const when = Date.parse(at ?? '');
  return Number.isNaN(when) ? null : { at: when, lat: Number(lat), lon: Number(lon), cc: cc ? cc : null };
}

function behaviourOf(p: BehaviourDoc | undefined): Behaviour {
  if (!p) return emptyBehaviour();
  const b = emptyBehaviour();
  b.n = Math.max(0, p.n ?? 0);
  b.hostileN = Math.max(0, p.hn ?? 0);
  for (const level of LEVELS) if (p.t?.[level]) b.tables[level] = tableOf(p.t[level]);
  for (const level of HOSTILE_LEVELS) if (p.h?.[level]) b.hostile[level] = tableOf(p.h[level]);
  if (p.pd) b.pending = pendingOf(p.pd);
  b.lastLegit = lastLegitOf(p.ll);
  return b;
}

/**
 * A user's decoded behaviour, kept between verdicts: `b` is `behaviourOf(p)` as long as the user
 * document is at `version` (see StateLayer.version). A change made in place (StateLayer.edit)
 * changes the stored model and this one together and notes the new version; any other change of
 * the document (a delta applied, a look-up's answer, which brings a new model object) leaves the
 * version behind, and the next view decodes the model again.
 */
interface KeptBehaviour {
  b: Behaviour;
  version: number;
}

/**
 * The deltas of a behaviour change; `known` is the stored model as this process holds it. What a
 * full table or the pending challenges forget is the core's eviction policy; this writes it.
 * `kept`: the decoded model of `known` (an Edit only), changed to match; returns false when it
 * could not be kept exact (then it is decoded again).
 */
function behaviourDelta(
  d: Changes,
  c: BehaviourChange,
  known: BehaviourDoc | undefined,
  kept?: Behaviour,
): boolean {
  let exact = true;
  const forget = planBehaviourEviction(
    { legit: known?.t, hostile: known?.h, pending: known?.pd },
    c,
    fieldName,
  );
  const add = (
    section: 't' | 'h',
    total: 'n' | 'hn',
    values: Partial<FeatureValues>,
    weight: number,
    at: number,
    levels: readonly Level[],
    victims: Partial<Record<Level, string>>,
  ) => {
    const w = weight * epochWeight(at);
    if (d instanceof Edit) {
      // In place: each table and entry found once, no path built (the same changes as below).
      const p = child(d.doc, 'p');
      incField(p, total, w);
      const tables = kept ? (section === 't' ? kept.tables : (kept.hostile as typeof kept.tables)) : null;
      if (kept) {
        if (total === 'n') kept.n = Math.max(0, (p.n as number | undefined) ?? 0);
        else kept.hostileN = Math.max(0, (p.hn as number | undefined) ?? 0);
      }
      for (const level of levels) {
        const value = values[level];
        if (value === null || value === undefined) continue;
        // A table is keyed by data (USER_KEYED: `p.t.*`, `p.h.*`).
        const table = child(child(p, section), level, true);
        const victim = weight > 0 ? victims[level] : undefined;
        if (victim) delete table[victim];
        const field = fieldName(value);
        const existed = Object.hasOwn(table, field);
        const entry = child(table, field);
        if (weight > 0) {
          maxField(entry, 'l', at);
          if (section === 't' && FIRST_SEEN_LEVELS.has(level)) minField(entry, 'f', at);
        }
        incField(entry, 'c', w);
        if (!tables || !exact) continue;
        // The decoded table follows: the entry as tableOf reads it, in the stored order.
        const t = (tables[level] ??= dict());
        if (victim) delete t[fromFieldName(victim)];
        // (fromFieldName(fieldName(value)) is value: nothing to decode.)
        const name = value;
        const c = entry.c;
        const was = Object.hasOwn(t, name) ? t[name] : undefined;
        if (typeof c !== 'number' || c <= 0) {
          if (was) delete t[name];
        } else if (was) {
          // Changed where it is (no new entry): as entryOf reads it. A model that holds the
          // stored entry itself (see entryOf) has nothing to follow.
          if (was !== (entry as unknown)) {
            was.c = c;
            was.l = typeof entry.l === 'number' ? entry.l : 0;
            if (typeof entry.f === 'number') was.f = entry.f;
            else if (was.f !== undefined) delete was.f;
          }
        } else if (existed) {
          // Stored before but skipped (no positive count): it would now come back out of the
          // stored order.
          exact = false;
        } else t[name] = entryOf(entry) as TableEntry;
      }
      return;
    }
    d.inc(['p', total], w);
    for (const level of levels) {
      const value = values[level];
      if (value === null || value === undefined) continue;
      const field = fieldName(value);
      if (weight > 0) {
        const victim = victims[level];
        if (victim) d.unset(['p', section, level, victim]);
        d.max(['p', section, level, field, 'l'], at);
        if (section === 't' && FIRST_SEEN_LEVELS.has(level)) d.min(['p', section, level, field, 'f'], at);
      }
      d.inc(['p', section, level, field, 'c'], w);
    }
  };
  if (c.legit) {
    add('t', 'n', c.legit.values, c.legit.weight, c.legit.at, LEVELS, forget.legit);
    const loc = c.legit.location;
    if (loc) d.max(['p', 'll'], `${new Date(loc.at).toISOString()}|${loc.lat}|${loc.lon}|${loc.cc ?? ''}`);
  }
  if (c.hostile)
    add('h', 'hn', c.hostile.values, c.hostile.weight, c.hostile.at, HOSTILE_LEVELS, forget.hostile);
  if (c.pend) {
    if (forget.pending !== null) d.unset(['p', 'pd', forget.pending]);
    const p: PendingChallenge = c.pend.challenge;
    const v: Record<string, string> = {};
    for (const [k, value] of Object.entries(p.values)) if (typeof value === 'string') v[k] = value;
    d.set(['p', 'pd', fieldName(c.pend.id)], {
      at: p.at,
      v,
      tw: p.tentative,
      ...(p.operator === true ? { to: true } : {}),
      ...(p.client
        ? { ca: p.client.app, ...(p.client.release !== null ? { cr: p.client.release } : {}) }
        : {}),
    });
  }
  if (c.resolve) d.unset(['p', 'pd', fieldName(c.resolve)]);
  if (kept && d instanceof Edit) {
    // The rest of the model is small: read again from what is stored when it changed.
    const p = d.doc.p as BehaviourDoc | undefined;
    if (c.legit?.location) kept.lastLegit = lastLegitOf(p?.ll);
    if (c.pend || c.resolve) kept.pending = pendingOf(p?.pd);
  }
  return exact;
}

/** Most users whose `_id` a user store remembers, all environments together (StateUserStore.idOf). */
const MAX_USER_IDS = 10_000;

const locationText = (l: NonNullable<ProfileChange['location']>) =>
  `${l.at.toISOString()}|${l.lat}|${l.lon}|${l.country ?? ''}`;

export class StateUserStore implements UserStateStore {
  private readonly db: Db;
  private readonly state: StateLayer;
  constructor({ db, state }: StateStoreDeps) {
    this.db = db;
    this.state = state;
  }

  cachedDevice(env: EnvId, userId: string, key: string): Device | null | undefined {
    const doc = this.state.peek(USERS, this.idOf(env, userId)) as UserDocument | null | undefined;
    if (doc === undefined) return undefined;
    const sub = doc?.d?.[fieldName(key)];
    return sub && Array.isArray(sub.tokens) && sub.tokens.length > 0 ? deviceOf(env, userId, sub) : null;
  }

  /** A user's `_id`, built once per user while it is among the last MAX_USER_IDS (a verdict asks for it ~5 times). */
  private readonly idOf = keptIds(MAX_USER_IDS);

  /** Each cached user's decoded behaviour, by its stored model (see KeptBehaviour). */
  private readonly behaviours = new WeakMap<BehaviourDoc, KeptBehaviour>();

  private view(env: EnvId, userId: string): UserState | null | undefined {
    const id = this.idOf(env, userId);
    return this.state.view(USERS, id, (doc) =>
      stateOf(env, userId, doc, this.behaviourOf(id, (doc as UserDocument | null)?.p)),
    );
  }

  /** The decoded model of a cached user's `p`: the one kept when still current, else decoded (and kept). */
  private behaviourOf(id: string, p: BehaviourDoc | undefined): Behaviour {
    if (!p) return emptyBehaviour();
    const version = this.state.version(USERS, id);
    const kept = this.behaviours.get(p);
    if (kept && kept.version === version) return kept.b;
    const b = behaviourOf(p);
    if (version === undefined) return b;
    if (kept) {
      kept.b = b;
      kept.version = version;
    } else this.behaviours.set(p, { b, version });
    return b;
  }

  /** The kept model of `p` when it is current, for a change in place to keep it so. */
  private keptBehaviour(id: string, p: BehaviourDoc | undefined): KeptBehaviour | undefined {
    const kept = p ? this.behaviours.get(p) : undefined;
    return kept && kept.version === this.state.version(USERS, id) ? kept : undefined;
  }

  async load(env: EnvId, userId: string, deadline?: number): Promise<UserState | null | undefined> {
    const doc = await this.state.read(USERS, this.idOf(env, userId), deadline);
    if (doc === undefined) return undefined;
    return this.view(env, userId) ?? stateOf(env, userId, doc);
  }

  async loadMany(env: EnvId, userIds: readonly string[]): Promise<Map<string, UserState>> {
    const ids = [...new Set(userIds)];
    const docs = await this.state.readMany(
      USERS,
      ids.map((u) => idOf(env, u)),
    );
    const out = new Map<string, UserState>();
    for (const u of ids) {
      const s = this.view(env, u) ?? stateOf(env, u, docs.get(idOf(env, u)) ?? null);
      if (s) out.set(u, s);
    }
    return out;
  }

  record(env: EnvId, userId: string, change: UserChange): void {
    const id = this.idOf(env, userId);
    const known = this.state.peek(USERS, id) as UserDocument | null | undefined;
    const devices = change.devices ?? [];
    // Written whole from memory (the embedded database): the document is changed in place, with
    // no delta built. Every decision below reads the document as it was before this change, so a
    // change of several devices (a track call's) stays a delta applied at the end.
    const kept = devices.length <= 1 ? this.keptBehaviour(id, known?.p) : undefined;
    const doc = devices.length <= 1 ? this.state.edit(USERS, id) : undefined;
    const d: Changes = doc ? new Edit(doc, known === null, USER_KEYED) : delta();
    d.set(['envId'], env).set(['userId'], userId);
    if (change.profile) profileDelta(d, change.profile, known);
    if (change.behaviour && !behaviourDelta(d, change.behaviour, known?.p, doc ? kept?.b : undefined) && kept)
      this.behaviours.delete(known?.p as BehaviourDoc);
    // Changed with the document: current at its new version.
    else if (doc && kept) kept.version = this.state.version(USERS, id) as number;
    const projections: DeviceChange[] = [];
    for (const c of devices) {
      const sub = known?.d?.[fieldName(c.key)];
      if (c.create && !sub && known) this.makeRoom(d, env, userId, known);
      const project = needsProjection(c, sub);
      deviceDelta(d, c, sub);
      if (project) projections.push(c);
    }
    if (!doc) this.state.apply(USERS, id, d as Delta);
    // The dashboard copy follows the user document as it now is (when this process knows it). A
    // device's copy is filed under its first token, so it also says which device that token names
    // (deviceByToken): a token is given a document of its own only when no copy names it.
    let named: string[] | undefined;
    if (projections.length > 0) {
      const stamped: Changes = doc ? d : delta();
      for (const c of projections) {
        const device = this.cachedDevice(env, userId, c.key);
        if (!device) continue;
        const { _id, ...copy } = deviceToDoc(device);
        // The layer keeps the copy as it is (StateLayer.put): nothing in it may change with the
        // user's document, whose sets grow in place.
        copy.linkedKeys = copy.linkedKeys.slice();
        this.state.put(DEVICES, _id, copy);
        if (c.create && c.create.token === device.token) (named ??= []).push(device.token);
        stamped.set(['d', fieldName(c.key), 'pj'], device.lastSeenAt);
      }
      if (!doc) this.state.apply(USERS, id, stamped as Delta);
    }
    // A token no copy names: another name of a device known already, or a device created while
    // its user's document was not at hand (a degraded verdict, a track call's blind change).
    for (const c of devices)
      if (c.create && !named?.includes(c.create.token))
        this.state.put(DEVICE_TOKENS, idOf(env, c.create.token), {
          envId: env,
          userId,
          key: c.key,
          createdAt: c.create.at,
        });
  }

  /** Keep at most MAX_DEVICES_PER_USER devices: drop the stalest unreviewed one (then a removed one). */
  private makeRoom(d: Changes, env: EnvId, userId: string, known: UserDocument): void {
    const subs = Object.entries(known.d ?? {});
    if (subs.length < MAX_DEVICES_PER_USER) return;
    const stalest = (pick: (s: DeviceSub) => boolean) =>
      subs
        .filter(([, s]) => pick(s))
        .sort(([, a], [, b]) => a.lastSeenAt.getTime() - b.lastSeenAt.getTime())[0];
    const victim = stalest((s) => !s.feedback && !s.removedAt) ?? stalest((s) => Boolean(s.removedAt));
    if (!victim) return;
    const [field, sub] = victim;
    d.unset(['d', field]);
    const token = sub.tokens[0];
    if (token)
      this.state.apply(
        DEVICES,
        idOf(env, token),
        delta()
          .set(['removedAt'], sub.removedAt ?? new Date())
          .set(['userId'], userId),
      );
  }

  async byToken(env: EnvId, token: string): Promise<Device | null> {
    const found = await this.deviceByToken(env, token);
    if (found || !this.state.rereads) return found;
    // Not in this instance's copies: another instance may have seen the device since this one
    // last read the token or its user. Read both again rather than answer 404 for a device that
    // exists (several instances only: a lone writer's copies are whole).
    const tokenId = idOf(env, token);
    const named = (collection: string) =>
      this.state.peek(collection, tokenId) as { userId?: unknown } | null | undefined;
    const users = [named(DEVICES)?.userId, named(DEVICE_TOKENS)?.userId].flatMap((u) =>
      typeof u === 'string' ? [idOf(env, u)] : [],
    );
    this.state.invalidate(
      (collection, id) =>
        ((collection === DEVICES || collection === DEVICE_TOKENS) && id === tokenId) ||
        (collection === USERS && users.includes(id)),
    );
    return this.deviceByToken(env, token);
  }

  /**
   * The device a token names: its dashboard copy, filed under the device's first token, says so;
   * a token without one (another name of the device, or one whose copy was not written) has a
   * document of its own in `device_tokens`, as every token had before.
   */
  private async deviceByToken(env: EnvId, token: string): Promise<Device | null> {
    const id = idOf(env, token);
    const copy = (await this.state.read(DEVICES, id)) as
      { envId?: unknown; userId?: unknown; fingerprintKey?: unknown } | null | undefined;
    const named =
      copy && typeof copy.userId === 'string' && typeof copy.fingerprintKey === 'string'
        ? { envId: copy.envId, userId: copy.userId, key: copy.fingerprintKey }
        : ((await this.state.read(DEVICE_TOKENS, id)) as
            { envId?: unknown; userId?: unknown; key?: unknown } | null | undefined);
    if (!named || named.envId !== env || typeof named.userId !== 'string' || typeof named.key !== 'string')
      return null;
    const key = named.key;
    return (await this.load(env, named.userId))?.devices.find((d) => d.fingerprintKey === key) ?? null;
  }
}

function profileDelta(d: Changes, p: ProfileChange, known: UserDocument | null | undefined): void {
  d.max(['lastSeenAt'], p.seenAt).min(['createdAt'], p.firstSeenAt).inc(['n'], 1);
  if (p.email) d.set(['email'], p.email);
  if (p.username) d.set(['username'], p.username);
  if (p.phone) d.set(['phone'], p.phone);
  if (p.registeredAt) d.set(['registeredAt'], p.registeredAt);
  for (const [k, v] of Object.entries(p.traits ?? {}))
    d.set(['traits', fieldName(k)], JSON.stringify(v ?? null));
  if (p.location) d.max(['lastLoc'], locationText(p.location));
  const countries = known?.countries ?? [];
  if (p.country && !countries.includes(p.country) && countries.length < MAX_COUNTRIES)
    d.addToSet(['countries'], p.country);
  if (p.passwordResetAt) d.max(['lastPasswordResetAt'], p.passwordResetAt);
}

function deviceDelta(d: Changes, c: DeviceChange, sub: DeviceSub | undefined): void {
  const device = fieldName(c.key);
  const at = (field: string) => ['d', device, field];
  // Decided on the device as it was (an Edit changes `sub` as it goes).
  const latest = c.seen !== undefined && (!sub || sub.lastSeenAt.getTime() <= c.seen.at.getTime());
  const links = sub?.lk?.length ?? 0;
  if (c.create) {
    d.set(at('key'), c.key)
      .set(at('identity'), c.create.identity)
      .min(at('createdAt'), c.create.at)
      .max(at('lastSeenAt'), c.create.at);
    // A device known already keeps its first token; this one is added as another of its names.
    d.addToSet(at('tokens'), c.create.token);
  }
  if (c.seen) {
    d.max(at('lastSeenAt'), c.seen.at).inc(at('n'), 1);
    if (c.seen.context && latest) d.set(at('context'), toContextDoc(c.seen.context));
  }
  if (c.eventRisk !== undefined) d.set(at('lastEventRisk'), c.eventRisk);
  if (c.review) {
    // A report clears the approval and an approval clears the report: the latest feedback is the state.
    const approved = c.review.state === 'approved';
    d.set(at('feedback'), c.review.state)
      .set(at('approvedAt'), approved ? c.review.at : null)
      .set(at('escalatedAt'), approved ? null : c.review.at);
  }
  if (c.mitigatedAt) d.set(at('mitigatedAt'), c.mitigatedAt);
  if (c.removedAt) d.set(at('removedAt'), c.removedAt);
  if (c.machine) d.set(at('mk'), c.machine);
  if (c.link && links < MAX_LINKED_PROFILES) d.addToSet(at('lk'), c.link);
}

/** Whether a change is worth refreshing the dashboard copy for. */
function needsProjection(c: DeviceChange, sub: DeviceSub | undefined): boolean {
  if (c.create || c.review || c.mitigatedAt || c.removedAt || c.link || !sub) return true;
  if (!c.seen) return false;
  if (
    c.seen.context &&
    sub.context &&
    (c.seen.context.location?.country_code ?? null) !== (sub.context.location?.country_code ?? null)
  )
    return true;
  return !sub.pj || c.seen.at.getTime() - sub.pj.getTime() >= PROJECTION_REFRESH_MS;
}

/**
 * The device registry: recognising a device from an event, and every transition of the device
 * review state table (approve, report, registration rule, challenge, reset, incident). Devices
 * live in their user's state (one document per user); every transition is a change recorded on
 * it (commutative deltas written behind), never a read-modify-write.
 */
import { hmacSha256, sha256Hex } from '../crypto';
import { NotFound } from '../errors';
import {
  unknownDeviceContext,
  type Device,
  type DeviceContext,
  type EnvId,
  type Environment,
  type EventInput,
} from '../model';
import type { ClientTokens, Clock, DeviceChange, UserState, UserStateStore } from '../ports';
import { fingerprintValue } from '../events/context';
import type { IpIntel, ParsedUserAgent } from '../intel/types';
import type { WebhookSink } from '../webhooks/ports';
import type { DeviceReviewState } from '../policies/model';
import { mobileProperties } from '../client/mobile';

export const REGISTRATION_APPROVAL_WINDOW_MS = 60 * 60 * 1000;

/** The key a device is known by for a user: the fingerprint, or a weaker identity from stable headers. */
export function deviceKey(event: Pick<EventInput, 'context'>): { key: string; identity: Device['identity'] } {
  const fp = event.context.fingerprint;
  if (fp) return { key: fingerprintKeyOf(fp), identity: 'fingerprint' };
  const h = event.context.headers;
  const stable = [event.context.userAgent, h['accept-language'], h['sec-ch-ua-platform'], h['sec-ch-ua']]
    .map((v) => (typeof v === 'string' ? v : ''))
    .join('\n');
  return { key: `d:${sha256Hex(stable).slice(0, 40)}`, identity: 'derived' };
}

/**
 * The token a new device gets: derived from the environment, the user and the device key under a
 * server-side key, so that every request that sees the device before its first sighting is
 * recorded (concurrent first requests, or a verdict that could not read the user within its
 * budget) answers the same token, on every instance sharing the master key. Unguessable without
 * the key, and as long as a random token (24 bytes, 32 characters).
 */
export function deviceTokenFor(tokenKey: Buffer, env: EnvId, userId: string, key: string): string {
  return hmacSha256(tokenKey, `${env}\u0000${userId}\u0000${key}`).subarray(0, 24).toString('base64url');
}

/** The key of the device a fingerprint names (as deviceKey gives it for an event carrying it). */
export function fingerprintKeyOf(fingerprint: string): string {
  return `f:${sha256Hex(fingerprint).slice(0, 40)}`;
}

/** A device of a user's list, and whether it is the one the caller is on now. */
export interface ListedDevice {
  device: Device;
  current: boolean;
}

export function reviewState(device: Device | null): DeviceReviewState {
  if (device?.feedback === 'reported') return 'reported';
  if (device?.feedback === 'approved') return 'approved';
  return 'unreviewed';
}

export function buildContext(
  event: EventInput,
  ip: IpIntel | null,
  ua: ParsedUserAgent,
  identity: Device['identity'],
): DeviceContext {
  return {
    ip: event.context.ip,
    location: ip?.location ?? null,
    userAgent: ua,
    type: ua.type,
    properties: {
      identity,
      ...(event.context.extra.locale !== undefined ? { locale: event.context.extra.locale } : {}),
      ...(event.client?.mobile ? mobileProperties(event.client.mobile) : {}),
    },
  };
}

/** The user's device with this key, if the user has it. */
export const recognise = (state: UserState | null | undefined, key: string): Device | null =>
  state?.devices.find((d) => d.fingerprintKey === key) ??
  state?.devices.find((d) => d.linkedKeys.includes(key)) ??
  null;

/** A sighting of a device by an event for a known user (pure): what to record. */
export interface Sighting {
  key: { key: string; identity: Device['identity'] };
  /** The device as known (null: new, or the user's state could not be read). */
  existing: Device | null;
  context: DeviceContext;
  at: Date;
  /** Risk of the event, or null for feedback events. */
  risk: number | null;
  /** A browser's machine vector (kept as the device's latest). */
  machine?: string | null;
  /** Another profile's key to link to the device (a new profile on its machine, core/devices/machine.ts). */
  link?: string | null;
  /** When the user registered, as far as known (the event's own `registered_at` first). */
  registeredAt: Date | null;
  /** A registration event (devices used to register are approved). */
  registration: boolean;
  /** The verdict denied the event (never auto-approve then). */
  denied: boolean;
  /** False when the user's state is unknown (degraded): no decision may depend on it. */
  stateKnown: boolean;
  /** The token the device gets if it is new (deviceTokenFor), asked only then. */
  newToken: () => string;
}

/**
 * The change a sighting makes: a new device gets its token (a device already known under
 * another token keeps it, this one becoming another name for it); devices used to register, or
 * within 60 minutes of registration, are approved unless they have feedback already.
 */
export function sightingChange(s: Sighting): DeviceChange {
  const registeredAt = s.registeredAt;
  const sinceRegistration = registeredAt ? s.at.getTime() - registeredAt.getTime() : -1;
  const autoApprove =
    s.stateKnown &&
    (s.registration || (sinceRegistration >= 0 && sinceRegistration < REGISTRATION_APPROVAL_WINDOW_MS)) &&
    !s.denied;
  const change: DeviceChange = { key: s.key.key, seen: { at: s.at, context: s.context } };
  if (s.machine && s.machine !== s.existing?.machine) change.machine = s.machine;
  if (s.link && !s.existing?.linkedKeys.includes(s.link)) change.link = s.link;
  if (!s.existing) change.create = { token: s.newToken(), identity: s.key.identity, at: s.at };
  if (s.risk !== null) change.eventRisk = s.risk;
  if (autoApprove && !s.existing?.feedback) change.review = { state: 'approved', at: s.at };
  return change;
}

/**
 * The device a sighting produced, as the answer shows it: the recorded state when it is known,
 * else (degraded) what the change itself says.
 */
export function sightedDevice(
  env: EnvId,
  userId: string,
  change: DeviceChange,
  after: Device | null | undefined,
): Device {
  if (after) return after;
  const at = change.seen?.at ?? new Date(0);
  const approved = change.review?.state === 'approved';
  return {
    token: change.create?.token ?? '',
    envId: env,
    userId,
    identity: change.create?.identity ?? 'derived',
    fingerprintKey: change.key,
    createdAt: at,
    lastSeenAt: at,
    approvedAt: approved ? at : null,
    escalatedAt: null,
    mitigatedAt: null,
    removedAt: null,
    riskScore: approved ? 0 : Math.round((change.eventRisk ?? 0) * 100),
    feedback: approved ? 'approved' : null,
    context: change.seen?.context ?? unknownDeviceContext(),
    lastEventRisk: change.eventRisk ?? null,
    sightings: change.seen ? 1 : 0,
    machine: change.machine ?? null,
    linkedKeys: change.link ? [change.link] : [],
  };
}

export interface DeviceServiceDeps {
  users: UserStateStore;
  webhooks: WebhookSink;
  clock: Clock;
  /** Reads Rampart's client tokens (absent: every client id is an opaque fingerprint). */
  clientTokens?: Pick<ClientTokens, 'fingerprintOf'>;
}

export class DeviceService {
  private readonly users: UserStateStore;
  private readonly webhooks: WebhookSink;
  private readonly clock: Clock;
  private readonly clientTokens?: Pick<ClientTokens, 'fingerprintOf'>;

  constructor(d: DeviceServiceDeps) {
    this.users = d.users;
    this.webhooks = d.webhooks;
    this.clock = d.clock;
    if (d.clientTokens) this.clientTokens = d.clientTokens;
  }

  async get(env: EnvId, token: string): Promise<Device> {
    const d = await this.users.byToken(env, token);
    if (!d) throw new NotFound('device not found');
    return d;
  }

  /**
   * The user's devices (flagged-and-removed ones excluded), for GET /v1/users/{id}/devices and its
   * twins. The user must be known. The client id (`cid`: the first of `clientIds` that is one)
   * marks the device it names as current: the device an event carrying it is recognised as, so a
   * Rampart client token names the device its key identifies. Values that mean "no fingerprint"
   * (`""`, `"?"`, …) mark none.
   */
  async listForUser(
    env: Environment,
    userId: string,
    clientIds: readonly unknown[] = [],
  ): Promise<ListedDevice[]> {
    const state = await this.users.load(env.id, userId);
    if (!state) throw new NotFound('user not found');
    const cid = clientIds.map(fingerprintValue).find((v) => v !== null) ?? null;
    const fingerprint = cid && this.clientTokens ? this.clientTokens.fingerprintOf(env, cid) : cid;
    const currentKey = fingerprint ? fingerprintKeyOf(fingerprint) : null;
    return state.devices
      .filter((d) => !d.removedAt)
      .map((device) => ({ device, current: device.fingerprintKey === currentKey }));
  }

  /** Record feedback on a device and answer it as it now is. */
  private async review(
    env: EnvId,
    device: Device,
    state: 'approved' | 'reported',
    at: Date,
  ): Promise<Device> {
    this.users.record(env, device.userId, {
      devices: [{ key: device.fingerprintKey, review: { state, at } }],
    });
    return this.users.cachedDevice(env, device.userId, device.fingerprintKey) ?? device;
  }

  /** PUT /devices/{token}/approve, `$challenge.succeeded`, and dashboard feedback. */
  async approve(env: EnvId, token: string): Promise<Device> {
    return this.review(env, await this.get(env, token), 'approved', this.clock.now());
  }

  /**
   * PUT /devices/{token}/report (and its gRPC/GraphQL twins), or a tracked `$review.escalated`:
   * the device is reported and `$incident.confirmed` is sent with the trigger.
   */
  async report(
    environment: Environment,
    token: string,
    trigger: 'device_reported' | 'review_escalated' = 'device_reported',
  ): Promise<Device> {
    const now = this.clock.now();
    const d = await this.review(environment.id, await this.get(environment.id, token), 'reported', now);
    this.webhooks.emit({
      type: '$incident.confirmed',
      env: environment,
      userId: d.userId,
      device: d,
      trigger,
      context: { ip: d.context.ip, userAgent: d.context.userAgent, location: d.context.location },
      policy: null,
      userTraits: {},
      properties: {},
      at: now,
    });
    return d;
  }

  /**
   * `$password_reset.succeeded`: approve the resetting device and mark the user's escalated
   * devices mitigated. `state` is the user's state as read by the caller.
   */
  passwordResetChanges(state: UserState | null, resettingDevice: Device | null, at: Date): DeviceChange[] {
    const changes: DeviceChange[] = [];
    if (resettingDevice)
      changes.push({ key: resettingDevice.fingerprintKey, review: { state: 'approved', at } });
    for (const d of state?.devices ?? []) {
      if (d.escalatedAt && !d.mitigatedAt && !d.removedAt && d.token !== resettingDevice?.token)
        changes.push({ key: d.fingerprintKey, mitigatedAt: at });
    }
    return changes;
  }

  /**
   * `$incident.mitigated`: after the user reset the password, flagged devices are removed from the
   * account. Returns the changes, or a reason when nothing could be done.
   */
  incidentMitigatedChanges(
    state: UserState | null,
    onlyToken: string | null,
    at: Date,
  ): { changes: DeviceChange[]; reason: string | null } {
    const flagged = (state?.devices ?? []).filter(
      (d) => d.feedback === 'reported' && !d.removedAt && (!onlyToken || d.token === onlyToken),
    );
    if (flagged.length === 0) return { changes: [], reason: 'no flagged device for this user' };
    const resetAt = state?.profile.lastPasswordResetAt ?? null;
    const changes: DeviceChange[] = flagged
      .filter((d) => resetAt && resetAt >= (d.escalatedAt ?? at))
      .map((d) => ({ key: d.fingerprintKey, removedAt: at, ...(d.mitigatedAt ? {} : { mitigatedAt: at }) }));
    return {
      changes,
      reason: changes.length ? null : 'the password was not reset after the device was flagged',
    };
  }
}

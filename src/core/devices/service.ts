/**
 * The device registry: recognising a device from an event, and every transition of the device
 * review state table (approve, report, registration rule, challenge, reset, incident).
 */
import { randomToken, sha256Hex } from '../crypto';
import { NotFound } from '../errors';
import type { Device, DeviceContext, EnvId, Environment, EventInput, UserProfile } from '../model';
import type { Clock, DeviceStore, UserStore } from '../ports';
import type { IpIntel, ParsedUserAgent } from '../../intel';
import type { WebhookSink } from '../webhooks/port';
import type { DeviceReviewState } from '../policies/model';

export const REGISTRATION_APPROVAL_WINDOW_MS = 60 * 60 * 1000;

/** The key a device is known by for a user: the fingerprint, or a weaker identity from stable headers. */
export function deviceKey(event: Pick<EventInput, 'context'>): { key: string; identity: Device['identity'] } {
  const fp = event.context.fingerprint;
  if (fp) return { key: `f:${sha256Hex(fp).slice(0, 40)}`, identity: 'fingerprint' };
  const h = event.context.headers;
  const stable = [event.context.userAgent, h['accept-language'], h['sec-ch-ua-platform'], h['sec-ch-ua']].map((v) => (typeof v === 'string' ? v : '')).join('\n');
  return { key: `d:${sha256Hex(stable).slice(0, 40)}`, identity: 'derived' };
}

/** Key that a `cid`/`client_id` query value maps to, to mark the current device. */
export function fingerprintKeyOf(clientId: string): string {
  return `f:${sha256Hex(clientId).slice(0, 40)}`;
}

export function reviewState(device: Device | null): DeviceReviewState {
  if (device?.feedback === 'reported') return 'reported';
  if (device?.feedback === 'approved') return 'approved';
  return 'unreviewed';
}

export function buildContext(event: EventInput, ip: IpIntel | null, ua: ParsedUserAgent, identity: Device['identity']): DeviceContext {
  return {
    ip: event.context.ip,
    location: ip?.location ?? null,
    userAgent: ua,
    type: ua.type,
    properties: { identity, ...(event.context.extra.locale !== undefined ? { locale: event.context.extra.locale } : {}) },
  };
}

export class DeviceService {
  constructor(
    private readonly devices: DeviceStore,
    private readonly users: UserStore,
    private readonly webhooks: WebhookSink,
    private readonly clock: Clock,
  ) {}

  async get(env: EnvId, token: string): Promise<Device> {
    const d = await this.devices.byToken(env, token);
    if (!d) throw new NotFound('device not found');
    return d;
  }

  /** The user's devices (flagged-and-removed ones excluded). The user must be known. */
  async listForUser(env: EnvId, userId: string): Promise<Device[]> {
    const user = await this.users.get(env, userId);
    if (!user) throw new NotFound('user not found');
    return this.devices.listForUser(env, userId);
  }

  /** Find the device an event comes from, for its user. */
  async recognise(env: EnvId, userId: string, key: string): Promise<Device | null> {
    const token = await this.devices.tokenForFingerprint(env, userId, key);
    return token ? this.devices.byToken(env, token) : null;
  }

  /** Create the device, or refresh the one we have, after an event for a known user. */
  async observe(args: {
    env: EnvId;
    userId: string;
    existing: Device | null;
    key: { key: string; identity: Device['identity'] };
    context: DeviceContext;
    at: Date;
    risk: number | null;
    user: UserProfile | null;
    registration: boolean;
    denied: boolean;
  }): Promise<Device> {
    const registeredAt = args.user?.registeredAt ?? null;
    const sinceRegistration = registeredAt ? args.at.getTime() - registeredAt.getTime() : -1;
    // Devices used to register, or within 60 minutes of registration, are approved (never over a report).
    const autoApprove = (args.registration || (sinceRegistration >= 0 && sinceRegistration < REGISTRATION_APPROVAL_WINDOW_MS)) && !args.denied;
    if (!args.existing) {
      const fresh: Device = {
        token: randomToken(24),
        envId: args.env,
        userId: args.userId,
        identity: args.key.identity,
        fingerprintKey: args.key.key,
        createdAt: args.at,
        lastSeenAt: args.at,
        approvedAt: null,
        escalatedAt: null,
        mitigatedAt: null,
        removedAt: null,
        risk: args.risk === null ? 0 : Math.round(args.risk * 100),
        feedback: null,
        context: args.context,
        lastEventRisk: args.risk,
      };
      if (autoApprove) approveInPlace(fresh, args.at);
      const stored = await this.devices.insert(fresh);
      if (stored === fresh) return fresh;
      // Another request created it first: refresh that one instead.
      return this.observe({ ...args, existing: stored });
    }
    const device = args.existing;
    if (args.at >= device.lastSeenAt) {
      device.lastSeenAt = args.at;
      device.context = args.context;
    }
    if (args.risk !== null) {
      device.lastEventRisk = args.risk;
      if (device.feedback === null) device.risk = Math.round(args.risk * 100);
    }
    if (autoApprove && device.feedback === null) approveInPlace(device, args.at);
    await this.devices.save(device);
    return device;
  }

  /** PUT /devices/{token}/approve, `$challenge.succeeded`, and dashboard feedback. */
  async approve(env: EnvId, token: string): Promise<Device> {
    const d = await this.get(env, token);
    approveInPlace(d, this.clock.now());
    await this.devices.save(d);
    return d;
  }

  /**
   * PUT /devices/{token}/report (and its gRPC/GraphQL twins), or a tracked `$review.escalated`:
   * the device is reported and `$incident.confirmed` is sent with the trigger.
   */
  async report(environment: Environment, token: string, trigger: 'device_reported' | 'review_escalated' = 'device_reported'): Promise<Device> {
    const d = await this.get(environment.id, token);
    const now = this.clock.now();
    d.feedback = 'reported';
    d.risk = 100;
    d.escalatedAt = now;
    d.approvedAt = null;
    await this.devices.save(d);
    await this.webhooks.emit({
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

  /** `$password_reset.succeeded`: approve the resetting device and mark the user's escalated devices mitigated. */
  async passwordReset(env: EnvId, userId: string, resettingDevice: Device | null, at: Date): Promise<void> {
    if (resettingDevice) {
      approveInPlace(resettingDevice, at);
      await this.devices.save(resettingDevice);
    }
    for (const d of await this.devices.listForUser(env, userId)) {
      if (d.escalatedAt && !d.mitigatedAt && d.token !== resettingDevice?.token) {
        d.mitigatedAt = at;
        await this.devices.save(d);
      }
    }
  }

  /**
   * `$incident.mitigated`: after the user reset the password, flagged devices are removed from the
   * account. Returns the devices removed, or a reason when nothing could be done.
   */
  async incidentMitigated(env: EnvId, userId: string, onlyToken: string | null, at: Date): Promise<{ removed: Device[]; reason: string | null }> {
    const user = await this.users.get(env, userId);
    const flagged = (await this.devices.listForUser(env, userId)).filter((d) => d.feedback === 'reported' && (!onlyToken || d.token === onlyToken));
    if (flagged.length === 0) return { removed: [], reason: 'no flagged device for this user' };
    const removed: Device[] = [];
    for (const d of flagged) {
      if (!user?.lastPasswordResetAt || user.lastPasswordResetAt < (d.escalatedAt ?? at)) continue;
      d.removedAt = at;
      d.mitigatedAt = d.mitigatedAt ?? at;
      await this.devices.save(d);
      removed.push(d);
    }
    return { removed, reason: removed.length ? null : 'the password was not reset after the device was flagged' };
  }
}

function approveInPlace(d: Device, at: Date): void {
  d.feedback = 'approved';
  d.risk = 0;
  d.approvedAt = at;
  d.escalatedAt = null;
}

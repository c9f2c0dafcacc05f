/**
 * Whitelisting mappers from domain objects to response messages: nothing internal leaves unless
 * it is named here (the gRPC counterpart of rest/mappers.ts).
 */
import type { Action, Device, Signals } from '../core/model';
import { castleUserAgent } from '../core/intel/types';
import type { Verdict } from '../core/verdicts/evaluate';
import type { PrivacyJob, PrivacyJobStatus } from '../core/privacy/model';
import { toStruct } from './struct';
import type { Struct } from './generated/google/protobuf/Struct';
import type { Timestamp } from './generated/google/protobuf/Timestamp';
import type { AccessJob } from './generated/rampart/v1/AccessJob';
import type { AccessJobStatus__Output } from './generated/rampart/v1/AccessJobStatus';
import type { Action__Output } from './generated/rampart/v1/Action';
import type { AuthenticateResponse } from './generated/rampart/v1/AuthenticateResponse';
import type { Device as DeviceMessage } from './generated/rampart/v1/Device';
import type { DeviceType__Output } from './generated/rampart/v1/DeviceType';
import type { FilterResponse } from './generated/rampart/v1/FilterResponse';
import type { Policy } from './generated/rampart/v1/Policy';
import type { RiskResponse } from './generated/rampart/v1/RiskResponse';

export const ACTION: Readonly<Record<Action, Action__Output>> = {
  allow: 'ACTION_ALLOW',
  challenge: 'ACTION_CHALLENGE',
  deny: 'ACTION_DENY',
};

const DEVICE_TYPE: Readonly<Record<Device['context']['type'], DeviceType__Output>> = {
  desktop: 'DEVICE_TYPE_DESKTOP',
  mobile: 'DEVICE_TYPE_MOBILE',
  tablet: 'DEVICE_TYPE_TABLET',
  other: 'DEVICE_TYPE_OTHER',
};

const JOB_STATUS: Readonly<Record<PrivacyJobStatus, AccessJobStatus__Output>> = {
  pending: 'ACCESS_JOB_STATUS_PENDING',
  sent: 'ACCESS_JOB_STATUS_SENT',
  failed: 'ACCESS_JOB_STATUS_FAILED',
  expired: 'ACCESS_JOB_STATUS_EXPIRED',
};

export function timestamp(d: Date): Timestamp {
  const ms = d.getTime();
  const seconds = Math.floor(ms / 1000);
  return { seconds: String(seconds), nanos: (ms - seconds * 1000) * 1_000_000 };
}

const optionalTimestamp = (d: Date | null): Timestamp | null => (d ? timestamp(d) : null);

export const policyMessage = (v: Verdict): Policy => ({
  id: v.policy.id,
  revision: v.policy.revision,
  name: v.policy.name,
  action: ACTION[v.policy.action],
});

export function signalsMessage(s: Signals): Record<string, Struct> {
  const out: Record<string, Struct> = {};
  for (const [name, detail] of Object.entries(s)) out[name] = toStruct(detail);
  return out;
}

export const authenticateMessage = (v: Verdict): AuthenticateResponse => ({
  action: ACTION[v.action],
  userId: v.userId ?? '',
  deviceToken: v.device?.token ?? '',
  risk: v.risk,
  policy: policyMessage(v),
  signals: signalsMessage(v.signals),
  degraded: v.degraded,
});

export const riskMessage = (v: Verdict): RiskResponse => ({
  risk: v.risk,
  policy: policyMessage(v),
  signals: signalsMessage(v.signals),
  device: { token: v.device?.token ?? '' },
  degraded: v.degraded,
});

export const filterMessage = (v: Verdict): FilterResponse => ({
  risk: v.risk,
  policy: policyMessage(v),
  signals: signalsMessage(v.signals),
  degraded: v.degraded,
});

/** A device; `current`: it is the one the `client_id` of ListUserDevices names. */
export function deviceMessage(d: Device, current = false): DeviceMessage {
  const ua = d.context.userAgent;
  const loc = d.context.location;
  return {
    token: d.token,
    createdAt: timestamp(d.createdAt),
    lastSeenAt: timestamp(d.lastSeenAt),
    userId: d.userId,
    approvedAt: optionalTimestamp(d.approvedAt),
    escalatedAt: optionalTimestamp(d.escalatedAt),
    mitigatedAt: optionalTimestamp(d.mitigatedAt),
    risk: d.riskScore,
    context: {
      ip: d.context.ip ?? '',
      location: loc
        ? {
            countryCode: loc.country_code ?? '',
            country: loc.country ?? '',
            region: loc.region ?? '',
            regionCode: loc.region_code ?? '',
            city: loc.city ?? '',
            ...(loc.lat !== null ? { lat: loc.lat } : {}),
            ...(loc.lon !== null ? { lon: loc.lon } : {}),
          }
        : null,
      userAgent: castleUserAgent(ua),
      properties: toStruct(d.context.properties),
      type: DEVICE_TYPE[d.context.type] ?? 'DEVICE_TYPE_OTHER',
    },
    isCurrentDevice: current,
  };
}

export const accessJobMessage = (j: PrivacyJob): AccessJob => ({
  id: j.id,
  status: JOB_STATUS[j.status] ?? 'ACCESS_JOB_STATUS_UNSPECIFIED',
  expiresAt: timestamp(j.expiresAt),
  userId: j.userId,
});

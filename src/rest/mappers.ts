/**
 * Whitelisting mappers from domain objects to Castle-compatible JSON. Nothing internal leaves
 * unless it is named here; each answers the body its schema in responses.ts describes.
 */
import type { Device } from '../core/model';
import { castleUserAgent } from '../intel';
import type { Verdict } from '../core/verdicts/evaluate';
import type { PrivacyJob } from '../core/privacy/model';
import type {
  AuthenticateBody,
  DeviceBody,
  FilterBody,
  PrivacyAccessBody,
  PrivacyJobBody,
  RiskBody,
} from './responses';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** A device; `current`: it is the one the `cid` of a device list names. */
export function deviceJson(d: Device, current = false): DeviceBody {
  return {
    token: d.token,
    created_at: d.createdAt.toISOString(),
    last_seen_at: d.lastSeenAt.toISOString(),
    user_id: d.userId,
    approved_at: iso(d.approvedAt),
    escalated_at: iso(d.escalatedAt),
    mitigated_at: iso(d.mitigatedAt),
    risk: d.riskScore,
    context: {
      ip: d.context.ip,
      location: d.context.location,
      user_agent: castleUserAgent(d.context.userAgent),
      properties: d.context.properties,
      type: d.context.type,
    },
    is_current_device: current,
  };
}

export const policyJson = (v: Verdict) => ({
  action: v.policy.action,
  name: v.policy.name,
  id: v.policy.id,
  revision: v.policy.revision,
});

// `degraded`: true when the verdict was computed without all of its state (see README).
export const authenticateJson = (v: Verdict): AuthenticateBody => ({
  action: v.action,
  user_id: v.userId,
  device_token: v.device?.token ?? null,
  risk: v.risk,
  policy: policyJson(v),
  signals: v.signals,
  degraded: v.degraded,
});

export const riskJson = (v: Verdict): RiskBody => ({
  risk: v.risk,
  policy: policyJson(v),
  signals: v.signals,
  device: { token: v.device?.token ?? null },
  degraded: v.degraded,
});

export const filterJson = (v: Verdict): FilterBody => ({
  risk: v.risk,
  policy: policyJson(v),
  signals: v.signals,
  degraded: v.degraded,
});

const privacyJobJson = (j: PrivacyJob): PrivacyJobBody => ({
  id: j.id,
  status: j.status,
  expires_at: j.expiresAt.toISOString(),
  user_id: j.userId,
});

/** The 202 of an access request: the first job's fields (as documented), and every job started. */
export function privacyAccessJson(jobs: readonly PrivacyJob[]): PrivacyAccessBody {
  const [first] = jobs;
  if (!first) throw new Error('an access request answers at least one job');
  return {
    id: first.id,
    status: first.status,
    expires_at: first.expiresAt.toISOString(),
    jobs: jobs.map(privacyJobJson),
  };
}

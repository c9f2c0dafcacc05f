/**
 * Whitelisting mappers from domain objects to Castle-compatible JSON. Nothing internal leaves
 * unless it is named here; each answers the body its schema in responses.ts describes.
 */
import type { Device } from '../core/model';
import { castleUserAgent } from '../intel';
import type { Verdict } from '../core/verdicts/evaluate';
import type { AuthenticateBody, DeviceBody, FilterBody, RiskBody } from './responses';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function deviceJson(d: Device, currentKey: string | null = null): DeviceBody {
  return {
    token: d.token,
    created_at: d.createdAt.toISOString(),
    last_seen_at: d.lastSeenAt.toISOString(),
    user_id: d.userId,
    approved_at: iso(d.approvedAt),
    escalated_at: iso(d.escalatedAt),
    mitigated_at: iso(d.mitigatedAt),
    risk: d.risk,
    context: {
      ip: d.context.ip,
      location: d.context.location,
      user_agent: castleUserAgent(d.context.userAgent),
      properties: d.context.properties,
      type: d.context.type,
    },
    is_current_device: currentKey !== null && d.fingerprintKey === currentKey,
  };
}

export const policyJson = (v: Verdict) => ({ action: v.policy.action, name: v.policy.name, id: v.policy.id, revision: v.policy.revision });

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

export const riskJson = (v: Verdict): RiskBody => ({ risk: v.risk, policy: policyJson(v), signals: v.signals, device: { token: v.device?.token ?? null }, degraded: v.degraded });

export const filterJson = (v: Verdict): FilterBody => ({ risk: v.risk, policy: policyJson(v), signals: v.signals, degraded: v.degraded });

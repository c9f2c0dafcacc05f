/**
 * The webhook body, in the shape Castle's webhooks have (docs/decisions.md): built once when the
 * delivery is recorded and sent byte for byte on every attempt, so its signature is stable.
 */
import type { PolicyRef } from '../model';
import type { CastleUserAgent, GeoLocation, ParsedUserAgent } from '../intel/types';
import { castleUserAgent } from '../intel/types';
import type { WebhookNotice } from './ports';

export interface WebhookBody {
  api_version: 'v1';
  app_id: string;
  type: string;
  created_at: string;
  data: {
    id: string;
    device_token: string | null;
    user_id: string | null;
    trigger: string;
    context: { ip: string | null; user_agent: CastleUserAgent | null; location: GeoLocation | null };
    policy: PolicyRef | null;
  };
  user_traits: Record<string, unknown>;
  properties: Record<string, unknown>;
}

const userAgentJson = (ua: ParsedUserAgent | null): CastleUserAgent | null =>
  ua ? castleUserAgent(ua) : null;

const locationJson = (l: GeoLocation | null): GeoLocation | null =>
  l
    ? {
        country_code: l.country_code,
        country: l.country,
        region: l.region,
        region_code: l.region_code,
        city: l.city,
        lat: l.lat,
        lon: l.lon,
      }
    : null;

const policyJson = (p: PolicyRef | null): PolicyRef | null =>
  p ? { id: p.id, revision: p.revision, name: p.name, action: p.action } : null;

/** The body of the delivery `id` for a notice, created at `createdAt`. */
export function webhookBody(
  id: string,
  notice: Omit<WebhookNotice, 'env' | 'userId'> & { appId: string; userId: string | null },
  createdAt: Date,
): WebhookBody {
  return {
    api_version: 'v1',
    app_id: notice.appId,
    type: notice.type,
    created_at: createdAt.toISOString(),
    data: {
      id,
      device_token: notice.device?.token ?? null,
      user_id: notice.userId,
      trigger: notice.trigger,
      context: {
        ip: notice.context.ip,
        user_agent: userAgentJson(notice.context.userAgent),
        location: locationJson(notice.context.location),
      },
      policy: policyJson(notice.policy),
    },
    user_traits: { ...notice.userTraits },
    properties: { ...notice.properties },
  };
}

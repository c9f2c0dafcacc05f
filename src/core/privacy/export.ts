/**
 * The data access export: every record Rampart holds about one user, as one JSON document.
 * Dates are ISO 8601 UTC strings; webhook bodies are embedded as JSON, not as escaped text.
 */
import type { Device, Environment, RejectedPayload, StoredEvent, UserProfile } from '../model';
import type { WebhookDelivery } from '../webhooks/model';
import type { ClientEvent } from '../client/events';
import { scrubHeaders, scrubRecord, scrubText } from '../events/scrub';

export const EXPORT_FORMAT = 'rampart.privacy-export.v1';

export interface ExportSources {
  env: Pick<Environment, 'id' | 'name'>;
  userId: string;
  jobId: string;
  generatedAt: Date;
  expiresAt: Date;
  profile: UserProfile | null;
  devices: Device[];
  events: StoredEvent[];
  rejected: RejectedPayload[];
  webhooks: WebhookDelivery[];
  /** What the user's installs of the application's app reported (core/client/events.ts). */
  appEvents?: ClientEvent[];
}

function parsedBody(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A webhook body with its user traits and properties scrubbed (the rest is Rampart's own). */
function scrubbedBody(body: unknown): unknown {
  if (!isRecord(body)) return body;
  return {
    ...body,
    ...(isRecord(body.user_traits) ? { user_traits: scrubRecord(body.user_traits) } : {}),
    ...(isRecord(body.properties) ? { properties: scrubRecord(body.properties) } : {}),
  };
}

/**
 * Serialise the export (pretty-printed: it is read by people as much as by programs). What the
 * application sent is scrubbed again by the one rule (events/scrub.ts), so that records kept
 * before a rule was added leave no secret in an export either.
 */
export function buildExport(s: ExportSources): string {
  const doc = {
    format: EXPORT_FORMAT,
    request_id: s.jobId,
    generated_at: s.generatedAt.toISOString(),
    expires_at: s.expiresAt.toISOString(),
    environment: { id: s.env.id, name: s.env.name },
    user_id: s.userId,
    profile: s.profile ? { ...s.profile, traits: scrubRecord(s.profile.traits) } : null,
    // A device's own 0-100 score is its `risk` here, as on every door.
    devices: s.devices.map(({ riskScore, ...d }) => ({
      ...d,
      context: { ...d.context, properties: scrubRecord(d.context.properties) },
      risk: riskScore,
    })),
    events: s.events.map(({ names: _names, ...e }) => ({
      ...e,
      context: {
        ...e.context,
        headers: scrubHeaders(e.context.headers),
        extra: scrubRecord(e.context.extra),
      },
      userTraits: scrubRecord(e.userTraits),
      properties: scrubRecord(e.properties),
    })),
    rejected_payloads: s.rejected.map(({ names: _names, ...r }) => ({ ...r, payload: scrubText(r.payload) })),
    webhooks: s.webhooks.map(({ body, ...rest }) => ({ ...rest, payload: scrubbedBody(parsedBody(body)) })),
    app_events: (s.appEvents ?? []).map((e) => ({ ...e, properties: scrubRecord(e.properties) })),
    counts: {
      devices: s.devices.length,
      events: s.events.length,
      rejected_payloads: s.rejected.length,
      webhooks: s.webhooks.length,
      app_events: s.appEvents?.length ?? 0,
    },
  };
  return JSON.stringify(doc, null, 2);
}

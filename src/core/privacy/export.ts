/**
 * The data access export: every record Rampart holds about one user, as one JSON document.
 * Dates are ISO 8601 UTC strings; webhook bodies are embedded as JSON, not as escaped text.
 */
import type { Device, Environment, RejectedPayload, StoredEvent, UserProfile } from '../model';
import type { WebhookDelivery } from '../webhooks/model';
import type { ClientEvent } from '../client/events';

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

/** Serialise the export (pretty-printed: it is read by people as much as by programs). */
export function buildExport(s: ExportSources): string {
  const doc = {
    format: EXPORT_FORMAT,
    request_id: s.jobId,
    generated_at: s.generatedAt.toISOString(),
    expires_at: s.expiresAt.toISOString(),
    environment: { id: s.env.id, name: s.env.name },
    user_id: s.userId,
    profile: s.profile,
    // A device's own 0-100 score is its `risk` here, as on every door.
    devices: s.devices.map(({ riskScore, ...d }) => ({ ...d, risk: riskScore })),
    events: s.events,
    rejected_payloads: s.rejected,
    webhooks: s.webhooks.map(({ body, ...rest }) => ({ ...rest, payload: parsedBody(body) })),
    app_events: s.appEvents ?? [],
    counts: { devices: s.devices.length, events: s.events.length, rejected_payloads: s.rejected.length, webhooks: s.webhooks.length, app_events: s.appEvents?.length ?? 0 },
  };
  return JSON.stringify(doc, null, 2);
}

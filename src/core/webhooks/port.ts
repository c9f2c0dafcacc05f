/**
 * What the core asks of webhook delivery: emit a notification about a user and device. The
 * webhooks module turns it into a durable, deduplicated, signed delivery.
 */
import type { Device, Environment, PolicyRef } from '../model';
import type { GeoLocation, ParsedUserAgent } from '../../intel';

export type WebhookType = '$incident.confirmed' | '$review.opened';

export interface WebhookNotice {
  type: WebhookType;
  env: Environment;
  userId: string;
  device: Device | null;
  /** Why it was sent: `device_reported`, `review_escalated`, `verdict_deny`, `verdict_challenge`, `test`. */
  trigger: string;
  context: { ip: string | null; userAgent: ParsedUserAgent | null; location: GeoLocation | null };
  policy: PolicyRef | null;
  userTraits: Record<string, unknown>;
  properties: Record<string, unknown>;
  at: Date;
}

export interface WebhookSink {
  /**
   * Queue a notification for durable delivery, without making the caller wait: the promise
   * resolves once it is recorded and never rejects. Deduplicated per (user, device, type)
   * within a window.
   */
  emit(notice: WebhookNotice): Promise<void>;
}

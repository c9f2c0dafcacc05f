/**
 * Webhook deliveries as the core sees them: one durable outbox entry per notification, with the
 * exact body that is (re)sent on every attempt and the history of those attempts.
 */
import type { EnvId } from '../model';

/**
 * `pending`: waiting for its next attempt; `delivering`: claimed under a lease by one instance;
 * `delivered`: a 2xx answer was received; `failed`: attempts exhausted or permanently undeliverable.
 */
export type DeliveryStatus = 'pending' | 'delivering' | 'delivered' | 'failed';

/** One HTTP attempt: the status code answered, or the error that prevented an answer. */
export interface DeliveryAttempt {
  at: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** The instance that made the attempt. */
  instance: string;
  url: string;
}

export interface WebhookDelivery {
  /** UUID; also `data.id` in the body. */
  id: string;
  envId: EnvId;
  userId: string | null;
  deviceToken: string | null;
  type: string;
  trigger: string;
  /** Where the last attempt went (or the next one goes). */
  url: string;
  /** The raw JSON body, byte for byte what is signed and sent. */
  body: string;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  maxAttempts: number;
  nextAttemptAt: Date | null;
  leaseOwner: string | null;
  leaseUntil: Date | null;
  /** Incremented by every claim; a claim is exclusive per (delivery, leaseVersion). */
  leaseVersion: number;
  createdAt: Date;
  /**
   * Creation order among deliveries created in the same millisecond by one process (a challenge
   * makes two). A user's deliveries are sent in (createdAt, seq) order.
   */
  seq: number;
  deliveredAt: Date | null;
  lastError: string | null;
  /** Sent by `sendTest`: attempted once, never deduplicated. */
  test: boolean;
}

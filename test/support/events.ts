/** Stored events built by tests that write straight to the event store (no verdict path). */
import type { StoredEvent } from '../../src/core/model';

export const TEST_UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36';

/** A stored event of `fields`, the rest filled as a verdict with nothing remarkable would store it. */
export function storedEvent(
  fields: Pick<StoredEvent, 'id' | 'envId' | 'occurredAt'> & Partial<StoredEvent>,
): StoredEvent {
  const ip = fields.ip ?? null;
  const userAgent = fields.userAgent ?? TEST_UA;
  return {
    name: '$login',
    endpoint: 'risk',
    userId: null,
    email: null,
    deviceToken: null,
    ip,
    country: null,
    asn: null,
    userAgent,
    action: 'allow',
    risk: 0.1,
    signals: [],
    signalDetails: {},
    policy: null,
    context: { ip, userAgent, headers: {}, fingerprint: null, extra: {} },
    userTraits: {},
    properties: {},
    receivedAt: fields.occurredAt,
    degraded: false,
    ...fields,
  } as StoredEvent;
}

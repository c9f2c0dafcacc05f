/**
 * GraphQL enum names → the core's values, in one place: codegen.ts types the resolvers with it
 * (`enumValues`) and the server maps with it (resolvers/enums.ts).
 */
export const ENUM_VALUES = {
  Action: { ALLOW: 'allow', CHALLENGE: 'challenge', DENY: 'deny' },
  RiskLevel: { LOW: 'low', MEDIUM: 'medium', HIGH: 'high' },
  CredentialKind: { SECRET: 'secret', ANALYST: 'analyst' },
  ReviewState: { APPROVED: 'approved', REPORTED: 'reported', UNREVIEWED: 'unreviewed' },
  DeviceType: { DESKTOP: 'desktop', MOBILE: 'mobile', TABLET: 'tablet', OTHER: 'other' },
  DeviceIdentity: { FINGERPRINT: 'fingerprint', DERIVED: 'derived' },
  Endpoint: { AUTHENTICATE: 'authenticate', RISK: 'risk', FILTER: 'filter', TRACK: 'track' },
  EventKind: { VERDICT: 'verdict', FEEDBACK: 'feedback', ACTIVITY: 'activity' },
  TimeBucket: { MINUTE: 'minute', HOUR: 'hour', DAY: 'day' },
  TopDimension: { IP: 'ip', ASN: 'asn', COUNTRY: 'country', DEVICE: 'device', USER: 'user' },
  PolicyGroup: { BEFORE: 'before', EVENT: 'event', AFTER: 'after' },
  DeliveryStatus: { PENDING: 'pending', DELIVERING: 'delivering', DELIVERED: 'delivered', FAILED: 'failed' },
  PrivacyJobStatus: { PENDING: 'pending', SENT: 'sent', FAILED: 'failed', EXPIRED: 'expired' },
  ListType: {
    USER_ID: 'user_id',
    EMAIL: 'email',
    EMAIL_DOMAIN: 'email_domain',
    IP: 'ip',
    ASN: 'asn',
    COUNTRY: 'country',
    DEVICE: 'device',
    MACHINE: 'machine',
    REQUEST_SHAPE: 'request_shape',
  },
} as const;

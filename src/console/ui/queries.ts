/**
 * The console's GraphQL query texts, in one plain module (no JSX, no DOM): the pages send them,
 * and the dashboards bench (bench/dashboards.ts) times the very same texts. The server build
 * compiles this file when the bench imports it (tsconfig.build.json excludes src/console/ui only
 * from its own file list), so it must stay plain TypeScript that runs anywhere.
 */

/** The fields of an event row (events page, a user's timeline). */
export const EVENT_ROW = `id occurredAt name kind action risk riskLevel userId email ip country asn deviceToken signals { name }`;

/** The fields of a webhook delivery (webhooks page, a user's deliveries). */
export const DELIVERY_FIELDS = `id type trigger url status userId deviceToken test maxAttempts nextAttemptAt createdAt deliveredAt lastError body
  attempts { at statusCode error durationMs url }`;

/** The fields of a privacy job (privacy page, a user's jobs). */
export const JOB_FIELDS = `id userId status recipient createdAt expiresAt sentAt exportBytes error`;

/** A page of events, newest first (the events page asks for 25 at a time). */
export const eventsQuery = (first: number): string => `query Events($filter: EventFilter, $after: String) {
  events(filter: $filter, first: ${first}, after: $after) {
    edges { cursor node { ${EVENT_ROW} } }
    pageInfo { hasNextPage endCursor }
  }
}`;

/** The events page: 25 events of a filter, and the next 25 after a cursor. */
export const EVENTS = eventsQuery(25);

/** One event in full. */
export const EVENT = `query Event($id: ID!) {
  event(id: $id) {
    id name kind endpoint occurredAt receivedAt action risk riskLevel degraded userId email ip country asn userAgent deviceToken
    device { token reviewState risk }
    signals { name details }
    policy {
      id revision name action testToken
      revisionDetails { id createdAt name action conditions { events riskLevels minRisk maxRisk signalsAny signalsAll countries deviceStates inLists notInLists } }
      current { id revision name archived }
    }
    headers properties userTraits
  }
}`;

/** The user page: profile, devices, timeline, webhooks about the user, privacy jobs. */
export const USER = `query User($id: ID!, $after: String) {
  user(id: $id) {
    id email username phone registeredAt createdAt lastSeenAt countries lastPasswordResetAt
    lastLocation { lat lon country at }
    riskSummary { level deviceCount approvedDevices reportedDevices unreviewedDevices highestDeviceRisk eventCount countsPartial actions { action count } topSignals { signal count } }
    devices(includeRemoved: true, first: 100) {
      token reviewState risk type lastSeenAt createdAt approvedAt escalatedAt removedAt ip
      location { country city } userAgent { browser version os mobile } app { id version model os }
    }
    events(first: 25, after: $after) { edges { node { ${EVENT_ROW} } } pageInfo { hasNextPage endCursor } }
  }
  webhookDeliveries(userId: $id, first: 20) { edges { node { ${DELIVERY_FIELDS} } } }
  privacyJobs(userId: $id, first: 20) { edges { node { ${JOB_FIELDS} } } }
}`;

/** The overview's series: totals, verdicts, signals and counts over time of a range. */
export const SERIES = `query OverviewSeries($filter: EventFilter, $bucket: TimeBucket) {
  analytics(filter: $filter) {
    total
    actions { action count }
    signals(first: 12) { signal count }
    timeSeries(bucket: $bucket) { truncated buckets { start total actions { action count } } }
  }
}`;

/** The overview's "denied from" and "challenged" panels: where the events of a verdict come from. */
export const SOURCES = `query OverviewSources($filter: EventFilter) {
  analytics(filter: $filter) {
    total
    ips: top(dimension: IP, first: 8) { distinct entries { key count } }
    asns: top(dimension: ASN, first: 8) { distinct entries { key count } }
    countries: top(dimension: COUNTRY, first: 8) { distinct entries { key count } }
  }
}`;

const DEVICE_ROW = `token userId reviewState risk lastSeenAt ip location { country city } userAgent { browser os }`;

/** The device review: risky unreviewed devices and reported ones. */
export const REVIEW = `query Review($risky: DeviceFilter, $reported: DeviceFilter) {
  risky: devices(filter: $risky, first: 20) { edges { node { ${DEVICE_ROW} } } }
  reported: devices(filter: $reported, first: 20) { edges { node { ${DEVICE_ROW} } } }
}`;

/** The lists page: every list with its type and counts (an environment has at most 100). */
export const LISTS = `query Lists {
  lists { id name color description type primaryField secondaryField createdAt updatedAt itemCount active: itemCount(archived: false) usedBy }
}`;

/** The lists an "add to list" form and the policy form choose from. */
export const LIST_CHOICES = `query ListChoices { lists { id name type } }`;

/** The fields of a list item (a list's page). */
export const ITEM_FIELDS = `id value secondaryValue comment author { type identifier } createdAt updatedAt expiresAt archived archivedAt active`;

/** One list: its items (25 at a time, newest first, filtered by value and archived) and its history. */
export const LIST = `query List($id: ID!, $filter: ListItemFilter, $after: String) {
  list(id: $id) {
    id name color description type primaryField secondaryField createdAt updatedAt usedBy
    itemCount active: itemCount(archived: false)
    items(filter: $filter, first: 25, after: $after) { edges { node { ${ITEM_FIELDS} } } pageInfo { hasNextPage endCursor } }
    auditEntries(first: 30) { id at action targetId actor { type identifier } detail }
  }
}`;

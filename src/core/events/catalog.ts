/**
 * The events Rampart recognises, which endpoints take each, what each one cannot be processed
 * without, and what each one should carry. This table is the single source for validation; tests
 * run every row of it.
 *
 * docs/decisions.md: the per-event fields of Castle's API are what to send, not a gate. An event is
 * refused (422) only where it cannot be processed at all; a recommended field that is missing is
 * scored with less evidence and named in the verdict's `missing_fields` signal.
 */
import type { Action, Endpoint } from '../model';

/**
 * What an event cannot be processed without, beyond what its endpoint requires:
 * - `user_id`: the event is about a known user (a successful login);
 * - `registration_identifier`: a registration needs the e-mail or phone it registers;
 * - `device_or_user`: feedback that changes a device needs the device or its user;
 * - `name`: a custom event is nothing without its name.
 */
export type Requirement = 'user_id' | 'registration_identifier' | 'device_or_user' | 'name';

/**
 * A field an application should send with an event, as Castle's API reference spells it. Sent means the
 * value arrived in any of the places Rampart reads it from (`user_traits`, `user`, `params`,
 * `properties`): `a|b` is satisfied by either.
 */
export type Recommendation =
  'user_traits.email' | 'properties.email' | 'user_traits.email|username' | 'properties.email|username|phone';

export interface EventSpec {
  name: string;
  endpoints: readonly Endpoint[];
  /** What the event cannot be processed without, per endpoint (422 when missing). */
  requires: Partial<Record<Endpoint, readonly Requirement[]>>;
  /** What the event should carry, per endpoint (named in `missing_fields` when missing). */
  recommends: Partial<Record<Endpoint, readonly Recommendation[]>>;
  purpose: string;
  /** What the event is when it has no verdict (sent to track or log): see EventRole. */
  tracked: 'feedback' | 'activity';
}

/**
 * What a stored event is to Rampart: `verdict`, Rampart decided it (it has an action);
 * `feedback`, the application reported how something ended (a challenge, a review, an incident,
 * a password reset), which may change a device's state; `activity`, a record of what the user did
 * (a logout, a failed login, a profile update) without a verdict. Feedback and activity both come
 * through track or log, so that is not what tells them apart: the event's name is.
 */
export type EventRole = 'verdict' | 'feedback' | 'activity';

const VERDICT: readonly Endpoint[] = ['risk', 'filter', 'track'];
const TRACK_ONLY: readonly Endpoint[] = ['track'];

interface Fields {
  requires?: EventSpec['requires'];
  recommends?: EventSpec['recommends'];
  /** Default `activity`. */
  tracked?: EventSpec['tracked'];
}

const spec = (
  name: string,
  endpoints: readonly Endpoint[],
  purpose: string,
  fields: Fields = {},
): EventSpec => ({
  name,
  endpoints,
  requires: fields.requires ?? {},
  recommends: fields.recommends ?? {},
  purpose,
  tracked: fields.tracked ?? 'activity',
});
const FEEDBACK = 'feedback' as const;

export const EVENTS: readonly EventSpec[] = [
  spec('$login', VERDICT, 'Login risk evaluation'),
  spec('$login.attempted', ['authenticate', ...VERDICT], 'Login attempt with the submitted e-mail', {
    recommends: { authenticate: ['properties.email'] },
  }),
  spec(
    '$login.succeeded',
    ['authenticate', ...VERDICT],
    'Valid credentials; verdict before the session starts',
    {
      requires: { authenticate: ['user_id'] },
      recommends: { authenticate: ['user_traits.email'] },
    },
  ),
  spec('$login.failed', VERDICT, 'Failed login'),
  spec('$logout', VERDICT, 'Logout'),
  spec('$logout.succeeded', VERDICT, 'Logout'),
  spec('$registration', VERDICT, 'Registration'),
  spec('$registration.attempted', ['authenticate', ...VERDICT], 'Registration attempt', {
    requires: { authenticate: ['registration_identifier'] },
  }),
  spec('$registration.succeeded', VERDICT, 'Completed registration'),
  spec('$registration.failed', VERDICT, 'Failed registration'),
  spec('$password_reset_request', VERDICT, 'Password reset request'),
  spec('$password_reset_request.attempted', VERDICT, 'Password reset request attempt'),
  spec('$password_reset_request.succeeded', ['authenticate', ...VERDICT], 'Evaluated reset request', {
    recommends: { authenticate: ['user_traits.email|username', 'properties.email|username|phone'] },
  }),
  spec('$password_reset_request.failed', VERDICT, 'Failed reset request', {
    recommends: { track: ['properties.email|username|phone'] },
  }),
  spec(
    '$password_reset.succeeded',
    VERDICT,
    'Completed reset; marks threats mitigated; approves the device',
    {
      requires: { track: ['device_or_user'] },
      tracked: FEEDBACK,
    },
  ),
  spec('$password_reset.failed', VERDICT, 'Failed reset (feedback only)', { tracked: FEEDBACK }),
  spec('$challenge.requested', VERDICT, 'Challenge started', {
    requires: { track: ['device_or_user'] },
    tracked: FEEDBACK,
  }),
  spec('$challenge.succeeded', VERDICT, 'Challenge passed; approves the device', {
    requires: { track: ['device_or_user'] },
    tracked: FEEDBACK,
  }),
  spec('$challenge.failed', VERDICT, 'Challenge failed; raises the risk of similar contexts', {
    requires: { track: ['device_or_user'] },
    tracked: FEEDBACK,
  }),
  spec('$profile_update', VERDICT, 'Profile update'),
  spec('$profile_update.attempted', VERDICT, 'Profile update attempt'),
  spec('$profile_update.succeeded', VERDICT, 'Profile update'),
  spec('$profile_update.failed', VERDICT, 'Failed profile update'),
  spec('$incident.mitigated', TRACK_ONLY, 'Password reset done after an incident; removes flagged devices', {
    requires: { track: ['device_or_user'] },
    tracked: FEEDBACK,
  }),
  // Castle's Go SDK names it among its events; no device changes state on it.
  spec(
    '$review.resolved',
    TRACK_ONLY,
    'End user resolved a review (the activity was theirs); kept as feedback',
    { tracked: FEEDBACK },
  ),
  spec('$review.escalated', TRACK_ONLY, 'End user reports a device; triggers $incident.confirmed', {
    requires: { track: ['device_or_user'] },
    tracked: FEEDBACK,
  }),
  spec('$custom', VERDICT, "An application's own event, named by `name`", {
    requires: { risk: ['name'], filter: ['name'], track: ['name'] },
  }),
];

const BY_NAME = new Map(EVENTS.map((e) => [e.name, e]));

export function eventSpec(name: string): EventSpec | undefined {
  return BY_NAME.get(name);
}

/**
 * What a stored event is (see EventRole): a verdict when it has an action, else what its name
 * says. A name the catalog does not know (a custom event, `$custom:<name>`) is activity.
 */
export function eventRole(name: string, action: Action | null): EventRole {
  if (action !== null) return 'verdict';
  return BY_NAME.get(name)?.tracked ?? 'activity';
}

/** Newer SDKs send `type` + `status` (e.g. `$login` + `$succeeded`); map to the dotted name. */
export function nameFromTypeStatus(type: string, status: string | undefined): string {
  if (!status) return type;
  return `${type}.${status.startsWith('$') ? status.slice(1) : status}`;
}

/** Event families whose default policies (docs/decisions.md) apply. */
export const LOGIN_EVENTS = ['$login', '$login.succeeded'];
/**
 * A registration: the events in which a user registers (an attempt, or the registration itself).
 * Their device is the one used to register (approved, see sightingChange), their default policies
 * are the registration ones, and the engine scores them as registrations. A failed registration is
 * none of these: it is a failure.
 */
export const REGISTRATION_EVENTS: readonly string[] = [
  '$registration',
  '$registration.attempted',
  '$registration.succeeded',
];
/** The pre-auth check: a login attempt before the password is checked. */
export const PREAUTH_EVENTS = ['$login.attempted'];
/** A failed login (the password was wrong, or the account is not there). */
export const FAILED_LOGIN_EVENTS = ['$login.failed'];

export const isRegistration = (name: string): boolean => REGISTRATION_EVENTS.includes(name);

/** The registrations after which the user has registered (an attempt has not yet): they set `registered_at`. */
export const completesRegistration = (name: string): boolean =>
  name === '$registration' || name === '$registration.succeeded';

/**
 * The events Rampart recognises, which endpoints take each, and what each one requires.
 * This table is the single source for validation; tests run every row of it.
 */
import type { Endpoint } from '../model';

/** A requirement an event places on its payload, beyond what its endpoint requires. */
export type Requirement =
  | 'user_id'
  | 'user_traits.email'
  | 'user_traits.email_or_phone'
  | 'user_traits.identifier'
  | 'properties.email'
  | 'properties.identifier'
  | 'device_or_user'
  | 'name';

export interface EventSpec {
  name: string;
  endpoints: readonly Endpoint[];
  /** Requirements per endpoint. */
  requires: Partial<Record<Endpoint, readonly Requirement[]>>;
  /** Whether device effects treat the event as a successful registration/login etc. */
  purpose: string;
}

const VERDICT: readonly Endpoint[] = ['risk', 'filter', 'track'];
const TRACK_ONLY: readonly Endpoint[] = ['track'];

const spec = (name: string, endpoints: readonly Endpoint[], purpose: string, requires: EventSpec['requires'] = {}): EventSpec => ({
  name,
  endpoints,
  requires,
  purpose,
});

export const EVENTS: readonly EventSpec[] = [
  spec('$login', VERDICT, 'Login risk evaluation'),
  spec('$login.attempted', ['authenticate', ...VERDICT], 'Login attempt with the submitted e-mail', {
    authenticate: ['properties.email'],
  }),
  spec('$login.succeeded', ['authenticate', ...VERDICT], 'Valid credentials; verdict before the session starts', {
    authenticate: ['user_id', 'user_traits.email'],
  }),
  spec('$login.failed', VERDICT, 'Failed login'),
  spec('$logout', VERDICT, 'Logout'),
  spec('$logout.succeeded', VERDICT, 'Logout'),
  spec('$registration', VERDICT, 'Registration'),
  spec('$registration.attempted', ['authenticate', ...VERDICT], 'Registration attempt', {
    authenticate: ['user_traits.email_or_phone'],
  }),
  spec('$registration.succeeded', VERDICT, 'Completed registration'),
  spec('$registration.failed', VERDICT, 'Failed registration'),
  spec('$password_reset_request', VERDICT, 'Password reset request'),
  spec('$password_reset_request.attempted', VERDICT, 'Password reset request attempt'),
  spec('$password_reset_request.succeeded', ['authenticate', ...VERDICT], 'Evaluated reset request', {
    authenticate: ['user_traits.identifier', 'properties.identifier'],
  }),
  spec('$password_reset_request.failed', VERDICT, 'Failed reset request', { track: ['properties.identifier'] }),
  spec('$password_reset.succeeded', VERDICT, 'Completed reset; marks threats mitigated; approves the device', {
    track: ['device_or_user'],
  }),
  spec('$password_reset.failed', VERDICT, 'Failed reset (feedback only)'),
  spec('$challenge.requested', VERDICT, 'Challenge started', { track: ['device_or_user'] }),
  spec('$challenge.succeeded', VERDICT, 'Challenge passed; approves the device', { track: ['device_or_user'] }),
  spec('$challenge.failed', VERDICT, 'Challenge failed; raises the risk of similar contexts', { track: ['device_or_user'] }),
  spec('$profile_update', VERDICT, 'Profile update'),
  spec('$profile_update.attempted', VERDICT, 'Profile update attempt'),
  spec('$profile_update.succeeded', VERDICT, 'Profile update'),
  spec('$profile_update.failed', VERDICT, 'Failed profile update'),
  spec('$incident.mitigated', TRACK_ONLY, 'Password reset done after an incident; removes flagged devices', {
    track: ['device_or_user'],
  }),
  spec('$review.escalated', TRACK_ONLY, 'End user reports a device; triggers $incident.confirmed', {
    track: ['device_or_user'],
  }),
  spec('$custom', VERDICT, "An application's own event, named by `name`", {
    risk: ['name'],
    filter: ['name'],
    track: ['name'],
  }),
];

const BY_NAME = new Map(EVENTS.map((e) => [e.name, e]));

export function eventSpec(name: string): EventSpec | undefined {
  return BY_NAME.get(name);
}

/** Newer SDKs send `type` + `status` (e.g. `$login` + `$succeeded`); map to the dotted name. */
export function nameFromTypeStatus(type: string, status: string | undefined): string {
  if (!status) return type;
  return `${type}.${status.startsWith('$') ? status.slice(1) : status}`;
}

/** Event families whose default policies (decisions.md) apply. */
export const LOGIN_EVENTS = ['$login', '$login.succeeded'];
export const REGISTRATION_EVENTS = ['$registration', '$registration.attempted', '$registration.succeeded'];
/** The pre-auth check: a login attempt before the password is checked. */
export const PREAUTH_EVENTS = ['$login.attempted'];

export const isRegistration = (name: string): boolean => name === '$registration' || name.startsWith('$registration.');

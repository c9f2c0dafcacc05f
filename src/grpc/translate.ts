/**
 * Decodes the typed request messages into the Castle-shaped JSON bodies the core validates, so
 * that every rule about what an event needs lives once, in core/events/parse.ts. proto3 cannot
 * tell "absent" from "empty": empty strings, unset messages and empty maps are left out of the
 * body, exactly as a REST client would leave the key out. Also maps the core's field paths back
 * to the request message's fields, for INVALID_ARGUMENT details.
 */
import { InvalidParameters } from '../core/errors';
import type { Endpoint } from '../core/model';
import type { FieldPathMapper } from './errors';
import { fromStruct, put, type JsonObject } from './struct';
import type { Context__Output } from './generated/rampart/v1/Context';
import type { EventStatus__Output } from './generated/rampart/v1/EventStatus';
import type { Timestamp__Output } from './generated/google/protobuf/Timestamp';
import type { TrackRequest__Output } from './generated/rampart/v1/TrackRequest';
import type { User__Output } from './generated/rampart/v1/User';

/** The fields every event request shares (Authenticate has no `name`, only Track a `deviceToken`). */
export type EventMessage = Pick<TrackRequest__Output, 'event' | 'user' | 'context' | 'properties' | 'requestToken' | 'timestamp'> & {
  /** An enum value this contract does not know arrives as its number. */
  status: EventStatus__Output | number;
  name?: string;
  deviceToken?: string;
};

const STATUS: Readonly<Record<EventStatus__Output, string | null>> = {
  EVENT_STATUS_UNSPECIFIED: null,
  EVENT_STATUS_ATTEMPTED: '$attempted',
  EVENT_STATUS_SUCCEEDED: '$succeeded',
  EVENT_STATUS_FAILED: '$failed',
  EVENT_STATUS_REQUESTED: '$requested',
};

/** The keys of a Castle `context` that Context's typed fields own; `extra` cannot override them. */
const CONTEXT_FIELDS = new Set(['ip', 'headers', 'client_id', 'user_agent']);
/** User fields that are typed in User; any other user key is one of `traits`. */
const USER_FIELDS = new Set(['id', 'email', 'username', 'phone', 'registered_at']);

type Body = Record<string, unknown>;

function statusName(status: EventStatus__Output | number): string | null {
  const name = typeof status === 'string' ? STATUS[status] : undefined;
  if (name === undefined) throw new InvalidParameters([{ field: 'status', message: `unknown EventStatus value ${JSON.stringify(status)}` }]);
  return name;
}

/** A Timestamp as an ISO 8601 string, or an error naming `field` when it is out of range. */
export function isoTime(t: Timestamp__Output, field: string): string {
  const ms = Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
  const d = new Date(ms);
  if (!Number.isFinite(d.getTime())) throw new InvalidParameters([{ field, message: 'is out of range' }]);
  return d.toISOString();
}

function userFields(u: User__Output, field: string, withId: boolean): Body {
  const out: Body = {};
  for (const [k, v] of Object.entries(fromStruct(u.traits, `${field}.traits`) ?? {})) if (!USER_FIELDS.has(k)) put(out, k, v);
  if (withId && u.id) out.id = u.id;
  if (u.email) out.email = u.email;
  if (u.username) out.username = u.username;
  if (u.phone) out.phone = u.phone;
  if (u.registeredAt) out.registered_at = isoTime(u.registeredAt, `${field}.registered_at`);
  return out;
}

function contextBody(c: Context__Output): Body {
  const out: Body = {};
  const extra: JsonObject = fromStruct(c.extra, 'context.extra') ?? {};
  for (const [k, v] of Object.entries(extra)) if (!CONTEXT_FIELDS.has(k)) put(out, k, v);
  if (c.ip) out.ip = c.ip;
  const headers: Body = {};
  for (const [name, value] of Object.entries(c.headers ?? {})) put(headers, name, value);
  for (const name of c.scrubbedHeaders ?? []) put(headers, name, true);
  if (Object.keys(headers).length > 0) out.headers = headers;
  if (c.clientId) out.client_id = c.clientId;
  if (c.userAgent) out.user_agent = c.userAgent;
  return out;
}

/**
 * The Castle body for an event request: the older form (`user_id` + `user_traits`) for
 * authenticate, the newer form (`user`) for risk, filter and track, as Castle's SDKs send them.
 */
export function eventBody(endpoint: Endpoint, m: EventMessage): Body {
  const body: Body = {};
  if (m.event) body.event = m.event;
  const status = statusName(m.status);
  if (status) body.status = status;
  if (m.name) body.name = m.name;
  if (m.user) {
    if (endpoint === 'authenticate') {
      if (m.user.id) body.user_id = m.user.id;
      const traits = userFields(m.user, 'user', false);
      if (Object.keys(traits).length > 0) body.user_traits = traits;
    } else {
      body.user = userFields(m.user, 'user', true);
    }
  }
  if (m.context) body.context = contextBody(m.context);
  const properties = fromStruct(m.properties, 'properties');
  if (properties) body.properties = properties;
  if (m.requestToken) body.request_token = m.requestToken;
  if (m.deviceToken) body.device_token = m.deviceToken;
  if (m.timestamp) body.timestamp = isoTime(m.timestamp, 'timestamp');
  return body;
}

/** Field paths of the body eventBody built, back as paths of the request message. */
export function eventFieldPath(endpoint: Endpoint): FieldPathMapper {
  return (path) => {
    if (path === '(body)') return '(message)';
    if (path === 'user_id') return 'user.id';
    if (path === 'created_at') return 'timestamp';
    const user = /^(user_traits|user)\.([^.[]+)(.*)$/.exec(path);
    if (user && (endpoint === 'authenticate' || user[1] === 'user')) {
      const [, , key, rest] = user;
      return USER_FIELDS.has(key) ? `user.${key}${rest}` : `user.traits.${key}${rest}`;
    }
    const context = /^context\.([^.[]+)(.*)$/.exec(path);
    if (context && !CONTEXT_FIELDS.has(context[1])) return `context.extra.${context[1]}${context[2]}`;
    return path;
  };
}

/** A field that proto3 cannot mark required (the path parameters of the REST routes). */
export function required(field: string, value: string): string {
  if (!value) throw new InvalidParameters([{ field, message: 'is required' }]);
  return value;
}

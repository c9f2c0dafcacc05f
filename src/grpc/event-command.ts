/**
 * The gRPC door's decoder: a typed event request message into the core's EventCommand, which
 * the core validates as it validates REST's (core/events/parse.ts). proto3 cannot tell "absent"
 * from "empty": empty strings, unset messages and empty maps are left out, exactly as a REST
 * client would leave the key out. Times go as Dates. Errors name the message's fields: where a
 * request's field is not at Castle's JSON path (Authenticate's user), the command says so in
 * `names`.
 */
import { InvalidParameters } from '../core/errors';
import type { EventCommand, FieldNames } from '../core/events/command';
import type { Endpoint } from '../core/model';
import { fromStruct, put, type JsonObject } from './struct';
import type { Context__Output } from './generated/rampart/v1/Context';
import type { EventStatus__Output } from './generated/rampart/v1/EventStatus';
import type { Timestamp__Output } from './generated/google/protobuf/Timestamp';
import type { TrackRequest__Output } from './generated/rampart/v1/TrackRequest';
import type { User__Output } from './generated/rampart/v1/User';

/** The fields every event request shares (Authenticate has no `name`, only Track a `deviceToken`). */
export type EventMessage = Pick<
  TrackRequest__Output,
  'event' | 'user' | 'context' | 'properties' | 'requestToken' | 'timestamp'
> & {
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

/**
 * Authenticate takes Castle's older form (`user_id` + `user_traits`), whose fields the request
 * calls `user.*`; the other requests take the newer `user`, at the same paths as in Castle's JSON.
 */
const AUTHENTICATE_NAMES: FieldNames = {
  user_id: 'user.id',
  'user_traits.email': 'user.email',
  'user_traits.username': 'user.username',
  'user_traits.phone': 'user.phone',
  'user_traits.registered_at': 'user.registered_at',
  'user_traits.created_at': 'user.traits.created_at',
};

type Obj = Record<string, unknown>;

function statusName(status: EventStatus__Output | number): string | null {
  const name = typeof status === 'string' ? STATUS[status] : undefined;
  if (name === undefined)
    throw new InvalidParameters([
      { field: 'status', message: `unknown EventStatus value ${JSON.stringify(status)}` },
    ]);
  return name;
}

/** A Timestamp as a Date (an invalid Date when out of range: the core names it). */
const timeOf = (t: Timestamp__Output): Date =>
  new Date(Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6));

function userFields(u: User__Output, withId: boolean): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(fromStruct(u.traits, 'user.traits') ?? {}))
    if (!USER_FIELDS.has(k)) put(out, k, v);
  if (withId && u.id) out.id = u.id;
  if (u.email) out.email = u.email;
  if (u.username) out.username = u.username;
  if (u.phone) out.phone = u.phone;
  if (u.registeredAt) out.registered_at = timeOf(u.registeredAt);
  return out;
}

function contextOf(c: Context__Output): Obj {
  const out: Obj = {};
  const extra: JsonObject = fromStruct(c.extra, 'context.extra') ?? {};
  for (const [k, v] of Object.entries(extra)) if (!CONTEXT_FIELDS.has(k)) put(out, k, v);
  if (c.ip) out.ip = c.ip;
  const headers: Obj = {};
  for (const [name, value] of Object.entries(c.headers ?? {})) put(headers, name, value);
  for (const name of c.scrubbedHeaders ?? []) put(headers, name, true);
  if (Object.keys(headers).length > 0) out.headers = headers;
  if (c.clientId) out.client_id = c.clientId;
  if (c.userAgent) out.user_agent = c.userAgent;
  return out;
}

/** The command of an event request for `endpoint`. */
export function eventCommand(endpoint: Endpoint, m: EventMessage): EventCommand {
  const command: EventCommand = endpoint === 'authenticate' ? { names: AUTHENTICATE_NAMES } : {};
  if (m.event) command.event = m.event;
  const status = statusName(m.status);
  if (status) command.status = status;
  if (m.name) command.name = m.name;
  if (m.user) {
    if (endpoint === 'authenticate') {
      if (m.user.id) command.userId = m.user.id;
      const traits = userFields(m.user, false);
      if (Object.keys(traits).length > 0) command.userTraits = traits;
    } else {
      command.user = userFields(m.user, true);
    }
  }
  if (m.context) command.context = contextOf(m.context);
  const properties = fromStruct(m.properties, 'properties');
  if (properties) command.properties = properties;
  if (m.requestToken) command.requestToken = m.requestToken;
  if (m.deviceToken) command.deviceToken = m.deviceToken;
  if (m.timestamp) command.timestamp = timeOf(m.timestamp);
  return command;
}

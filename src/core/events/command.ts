/**
 * EventCommand: an event as a door received it, the core's one input for the verdict and track
 * use cases. Each door builds it from its own wire format (REST decodes Castle's JSON body,
 * rest/event-command.ts; gRPC builds it from the request message, grpc/event-command.ts); the core
 * validates it (validateEvent, parse.ts) into an EventInput. No door re-serialises its input into
 * another door's format.
 *
 * The members are Castle's fields. Their values are as sent, since JSON types nothing and the
 * rules about them (types, lengths, formats, which event needs which field) live once, in the
 * core: a typed wire format simply sends values that pass (a Date for a time). Errors name a
 * field by its path in Castle's JSON (EventField) unless the door says, in `names`, how its own
 * wire format calls it.
 */
import type { EventField } from './schema';

/** A value as the door received it: the core checks it against the field's schema (schema.ts). */
export type Sent = unknown;

/**
 * How a door names fields in its errors, where its wire format differs from Castle's JSON
 * paths (e.g. gRPC's Authenticate calls `user_traits.email` `user.email`). One constant table
 * per door and endpoint.
 */
export type FieldNames = Readonly<Partial<Record<EventField, string>>>;

export interface EventCommand {
  /** The event's name (`$login.succeeded`, or `$login` with `status`, or an application's own name). */
  event?: Sent;
  /** Newer SDKs: the event's type and status (`$login`, `$succeeded`). */
  type?: Sent;
  status?: Sent;
  /** A `$custom` event's own name. */
  name?: Sent;
  /** Older SDKs' user: `user_id` and `user_traits`. */
  userId?: Sent;
  userTraits?: Sent;
  /** Newer SDKs' user: one object with `id`, `email`, `phone`, `registered_at` and traits. */
  user?: Sent;
  /** Newer SDKs: the identifiers submitted in a form. */
  params?: Sent;
  /** The identifiers submitted in a form, and anything else about the event. */
  properties?: Sent;
  /** The end user's request: `ip`, `headers`, `client_id`, `user_agent`, and other keys stored as sent. */
  context?: Sent;
  /** A fingerprint token sent beside the context (as `context.client_id`). */
  clientId?: Sent;
  deviceToken?: Sent;
  requestToken?: Sent;
  /** When the event happened: ISO 8601 text, or a Date from a typed wire format. */
  timestamp?: Sent;
  /** As `timestamp` (older SDKs). */
  createdAt?: Sent;
  /** When the SDK sent the event: stored as sent. */
  sentAt?: Sent;
  /** Members no rule reads, stored with the event as sent. */
  extra?: Readonly<Record<string, unknown>>;
  /** How the door names fields in its errors (absent: Castle's JSON paths). */
  names?: FieldNames;
}

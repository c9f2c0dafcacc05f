/**
 * The wire shape of an event body, as zod schemas: each field's type, length and format, and the
 * fields each endpoint cannot do without. parse.ts validates every field with these schemas, and
 * the REST door's OpenAPI document is generated from them, so the two cannot drift apart.
 * What JSON Schema cannot say (which event needs which field: catalog.ts; header names in any
 * case: context.ts) stays in code, and the document describes it from the same tables.
 */
import { z } from 'zod';
import { normaliseIp } from '../intel/ip';
import type { Endpoint } from '../model';
import { EVENTS } from './catalog';
import { MAX_HEADER_NAME, MAX_HEADER_VALUE, MAX_HEADERS } from './context';

const MAX_ID = 256;
const MAX_EMAIL = 320;
const MAX_PHONE = 64;

/** A string of at most `max` characters, with the messages parse.ts answers. */
const str = (max: number) =>
  z.string({ invalid_type_error: 'must be a string' }).max(max, `must be at most ${max} characters`);

export const TIMESTAMP_MESSAGE = 'must be an ISO 8601 timestamp';
/** An ISO 8601 timestamp: a date first, and something `Date.parse` reads. */
const timestamp = str(64)
  .regex(/^\d{4}-\d{2}-\d{2}/, TIMESTAMP_MESSAGE)
  .refine((s) => !Number.isNaN(Date.parse(s)), TIMESTAMP_MESSAGE)
  .describe('ISO 8601 timestamp (UTC), e.g. 2024-05-01T12:00:00.000Z');

const object = z.record(z.unknown(), { invalid_type_error: 'must be an object' });

/** A header's value: a string, or `true` / `"true"` (sent, scrubbed by the SDK); `false` and null are dropped. */
const headerValue = z.union([z.string().max(MAX_HEADER_VALUE), z.boolean()]).nullable();

/**
 * `context.headers`: an object of name to value, or an array of [name, value] pairs; names in any
 * case. context.ts's normaliseHeaders checks them, with these limits.
 */
export const HEADER_NAME_PATTERN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
export const headersSchema = z
  .union([
    z.record(z.string().min(1).max(MAX_HEADER_NAME).regex(HEADER_NAME_PATTERN), headerValue),
    z
      .array(z.tuple([z.string().min(1).max(MAX_HEADER_NAME).regex(HEADER_NAME_PATTERN), headerValue]))
      .max(MAX_HEADERS),
  ])
  .describe(
    `Request headers of the end user's client: an object of name to value, or an array of [name, value] pairs (at most ${MAX_HEADERS}); names in any case. A value may be a string or true ("sent, scrubbed"). The verdict endpoints need User-Agent.`,
  );

/**
 * Every field parse.ts reads, by its JSON path. An object-valued path (`user`) holds the fields
 * below it (`user.id`); anything else in the body is accepted and stored as it came.
 */
export const EVENT_FIELDS = {
  event: str(100).describe('Event name, e.g. $login.succeeded (or `type` + `status`)'),
  type: str(100).describe('Newer SDKs: the event type, e.g. $login (with `status`)'),
  status: str(100).describe('Newer SDKs: the event status, e.g. $succeeded (with `type`)'),
  name: str(200).describe('Name of a $custom event'),
  user_id: str(MAX_ID).describe("The user's id in the application"),
  user: object.describe('Newer SDKs: the user'),
  'user.id': str(MAX_ID),
  'user.email': str(MAX_EMAIL),
  'user.phone': str(MAX_PHONE),
  'user.registered_at': timestamp,
  user_traits: object.describe('Older SDKs: the user'),
  'user_traits.email': str(MAX_EMAIL),
  'user_traits.username': str(MAX_ID),
  'user_traits.phone': str(MAX_PHONE),
  'user_traits.registered_at': timestamp,
  'user_traits.created_at': timestamp,
  params: object.describe('Newer SDKs: the identifiers submitted in a form'),
  'params.email': str(MAX_EMAIL),
  'params.username': str(MAX_ID),
  'params.phone': str(MAX_PHONE),
  properties: object.describe('The identifiers submitted in a form, and anything else about the event'),
  'properties.email': str(MAX_EMAIL),
  'properties.username': str(MAX_ID),
  'properties.phone': str(MAX_PHONE),
  context: object.describe("The end user's request"),
  'context.ip': str(64)
    .refine((s) => normaliseIp(s) !== null, 'is not a valid IP address')
    .describe("IP address of the end user's client (IPv4 or IPv6)"),
  'context.headers': headersSchema,
  'context.client_id': z
    .union([z.string(), z.literal(false)], { errorMap: () => ({ message: 'must be a string or false' }) })
    .describe('Fingerprint token of the client library, or false'),
  'context.user_agent': str(4096).describe('Older SDKs: the User-Agent, when not in headers'),
  client_id: z
    .union([z.string(), z.literal(false)], { errorMap: () => ({ message: 'must be a string or false' }) })
    .describe('Fingerprint token (as context.client_id)'),
  device_token: str(256).describe('A device token, to address a device directly (track)'),
  request_token: z
    .string({ invalid_type_error: 'must be a string' })
    .describe("Token of Rampart's browser client (or a fingerprint token; sandbox test tokens)"),
  timestamp: timestamp.describe('When the event happened (ISO 8601 UTC); the receive time when absent'),
  created_at: timestamp.describe('As timestamp (older SDKs)'),
  sent_at: z.unknown().describe('When the SDK sent the event (stored)'),
} as const satisfies Record<string, z.ZodTypeAny>;

export type EventField = keyof typeof EVENT_FIELDS;

/** The fields an endpoint cannot do without, whatever the event (parse.ts answers 422 `is required`). */
export const ENDPOINT_REQUIRES: Readonly<Record<Endpoint, readonly EventField[]>> = {
  authenticate: ['context', 'context.ip'],
  risk: ['context', 'context.ip', 'context.headers', 'user', 'user.id'],
  filter: ['context', 'context.ip', 'context.headers'],
  track: [],
};

/** The events an endpoint accepts (catalog.ts). */
export const eventNames = (endpoint: Endpoint): string[] =>
  EVENTS.filter((e) => e.endpoints.includes(endpoint)).map((e) => e.name);

/** What each event an endpoint accepts needs beyond the endpoint's own fields (catalog.ts). */
export function eventRequirements(endpoint: Endpoint): Record<string, readonly string[]> {
  const out: Record<string, readonly string[]> = {};
  for (const e of EVENTS) {
    const needs = e.requires[endpoint];
    if (e.endpoints.includes(endpoint) && needs && needs.length > 0) out[e.name] = needs;
  }
  return out;
}

/**
 * The whole body an endpoint validates, assembled from EVENT_FIELDS and ENDPOINT_REQUIRES: nested
 * objects for dotted paths, the endpoint's required fields required, everything else optional, and
 * unknown members allowed (they are stored). For documents; parse.ts validates field by field.
 * `describe` lets a document add what it says about a field (formats, examples) to a copy.
 */
export function eventBodySchema(
  endpoint: Endpoint,
  describe: (path: EventField, schema: z.ZodTypeAny) => z.ZodTypeAny = (_p, s) => s,
): z.ZodObject<z.ZodRawShape> {
  const required = new Set<string>(ENDPOINT_REQUIRES[endpoint]);
  const children = new Map<string, [string, z.ZodTypeAny][]>();
  const top: [string, z.ZodTypeAny][] = [];
  for (const [path, schema] of Object.entries(EVENT_FIELDS) as [string, z.ZodTypeAny][]) {
    const dot = path.indexOf('.');
    if (dot < 0) top.push([path, schema]);
    else {
      const parent = path.slice(0, dot);
      children.set(parent, [...(children.get(parent) ?? []), [path.slice(dot + 1), schema]]);
    }
  }
  const shape = (entries: [string, z.ZodTypeAny][], prefix: string): z.ZodRawShape => {
    const out: z.ZodRawShape = {};
    for (const [key, schema] of entries) {
      const path = prefix + key;
      const kids = children.get(path);
      const field = kids
        ? z
            .object(shape(kids, `${path}.`))
            .passthrough()
            .describe(schema.description ?? '')
        : describe(path as EventField, schema);
      out[key] = required.has(path) ? field : field.optional();
    }
    return out;
  };
  return z.object(shape(top, '')).passthrough();
}

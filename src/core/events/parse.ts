/**
 * Validates an EventCommand (command.ts) of any accepted form (older authenticate/track, newer
 * risk/filter/log with `type`+`status`, `params`), whichever door built it, into one EventInput,
 * or throws with every offending field, named as the door names it. Only what makes an event
 * impossible to process is an offending field; recommended fields that were not sent are listed
 * on the event (`missing`) for the verdict to name.
 * Each field is checked with its schema in schema.ts (which the OpenAPI document is generated from).
 */
import { z } from 'zod';
import { normaliseIp } from '../intel/ip';
import { FieldProblem, InvalidParameters, InvalidRequestToken } from '../errors';
import type { Endpoint, EventInput } from '../model';
import type { EventCommand, FieldNames } from './command';
import { eventSpec, nameFromTypeStatus, type Recommendation, type Requirement } from './catalog';
import { MAX_TOKEN_LENGTH, normaliseHeaders, parseTestToken, pickFingerprint, tokenShapeOk } from './context';
import { scrubHeaders, scrubRecord } from './scrub';
import { ENDPOINT_REQUIRES, EVENT_FIELDS, TIMESTAMP_MESSAGE, type EventField } from './schema';

/** How far in the future an event's own time may be (later is refused). */
export const FUTURE_TOLERANCE_MS = 5 * 60 * 1000;
const CUSTOM_EVENT = '$custom';
const CONTEXT_KNOWN = new Set(['ip', 'headers', 'client_id', 'user_agent']);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * What a value must be for its field's schema to take it as it is, where that is a cheap test: a
 * string field with only length limits and patterns (`str` in schema.ts), one refined by a check
 * that answers true (`context.ip`, the timestamps), an object field (`object`, a record of
 * anything). Such a value is answered without running the schema (which copies it, and makes a
 * context for each parse); anything else goes through the schema, so that its answer and its
 * problems are the schema's.
 */
function passOf(schema: z.ZodTypeAny): ((value: unknown) => boolean) | undefined {
  if (schema instanceof z.ZodString) {
    const checks = schema._def.checks;
    if (schema._def.coerce || !checks.every((c) => c.kind === 'max' || c.kind === 'regex')) return undefined;
    return (v) => {
      if (typeof v !== 'string') return false;
      for (const c of checks) {
        if (c.kind === 'max' && v.length > c.value) return false;
        if (c.kind === 'regex') {
          c.regex.lastIndex = 0;
          if (!c.regex.test(v)) return false;
        }
      }
      return true;
    };
  }
  if (schema instanceof z.ZodEffects) {
    const effect = (schema as z.ZodEffects<z.ZodTypeAny>)._def.effect;
    const inner = passOf((schema as z.ZodEffects<z.ZodTypeAny>)._def.schema);
    if (effect.type !== 'refinement' || inner === undefined) return undefined;
    // As zod decides: the value passes when the refinement added no issue (a promise, which
    // zod refuses in a synchronous parse, goes through the schema).
    return (v) => {
      if (!inner(v)) return false;
      issued = false;
      const result: unknown = effect.refinement(v, ISSUES);
      return !issued && !(result instanceof Promise);
    };
  }
  if (schema instanceof z.ZodRecord && schema._def.valueType instanceof z.ZodUnknown) {
    // zod's own test for an object (getParsedType): not an array, a promise, a Map, a Set or a Date.
    return (v) => {
      if (typeof v !== 'object' || v === null) return false;
      const proto = Object.getPrototypeOf(v) as unknown;
      if (proto !== Object.prototype && proto !== null) return false;
      const o = v as { then?: unknown; catch?: unknown };
      return !(typeof o.then === 'function' && typeof o.catch === 'function');
    };
  }
  return undefined;
}
/** Whether a refinement run by a pass added an issue (the schema is then run for the issue itself). */
let issued = false;
const ISSUES: z.RefinementCtx = {
  addIssue: () => {
    issued = true;
  },
  path: [],
};
const PASSES: Partial<Record<EventField, (value: unknown) => boolean>> = {};
for (const [path, schema] of Object.entries(EVENT_FIELDS) as [EventField, z.ZodTypeAny][]) {
  const passes = passOf(schema);
  if (passes) PASSES[path] = passes;
}

/** Reads one field at a time with its schema (schema.ts), collecting every problem. */
class Reader {
  readonly problems: FieldProblem[] = [];

  /** The field's value when present and valid; null when absent (undefined or null) or invalid. */
  valid(path: EventField, value: unknown): unknown {
    if (value === undefined || value === null) return null;
    const passes = PASSES[path];
    if (passes !== undefined && passes(value)) return value;
    const r = EVENT_FIELDS[path].safeParse(value);
    if (r.success) return r.data;
    this.problems.push({ field: path, message: r.error.issues[0]?.message ?? 'is invalid' });
    return null;
  }

  obj(path: EventField, value: unknown): Obj | null {
    const v = this.valid(path, value);
    return isObj(v) ? (value as Obj) : null;
  }

  str(path: EventField, value: unknown): string | null {
    const v = this.valid(path, value);
    return typeof v === 'string' ? v : null;
  }

  /** A time: ISO 8601 text, or a Date a typed wire format sent (within the years ISO 8601 text can say). */
  date(path: EventField, value: unknown): Date | null {
    if (value instanceof Date) {
      const year = value.getUTCFullYear();
      if (year >= 0 && year <= 9999) return value;
      this.problems.push({
        field: path,
        message: Number.isNaN(year) ? 'is out of range' : TIMESTAMP_MESSAGE,
      });
      return null;
    }
    const s = this.str(path, value);
    return s === null ? null : new Date(Date.parse(s));
  }
}

export interface ParseOptions {
  sandbox: boolean;
  now: Date;
}

/** The problems, each field named as the door that sent it names it. */
function named(problems: FieldProblem[], names: FieldNames | undefined): FieldProblem[] {
  return names
    ? problems.map((q) => ({ field: names[q.field as EventField] ?? q.field, message: q.message }))
    : problems;
}

/**
 * Validate an event command for `endpoint`. Throws InvalidParameters or InvalidRequestToken,
 * naming each field as `command.names` says (Castle's JSON paths by default).
 */
export function validateEvent(endpoint: Endpoint, command: EventCommand, opts: ParseOptions): EventInput {
  try {
    return validate(endpoint, command, opts);
  } catch (err) {
    const names = command.names;
    if (names && err instanceof InvalidParameters) throw new InvalidParameters(named(err.fields, names));
    if (names && err instanceof InvalidRequestToken)
      throw new InvalidRequestToken(names[err.field as EventField] ?? err.field, err.message);
    throw err;
  }
}

function validate(endpoint: Endpoint, command: EventCommand, opts: ParseOptions): EventInput {
  const r = new Reader();
  const p = r.problems;

  // Event name: `event`, or newer `type` + `status`.
  const event = r.str('event', command.event);
  const type = r.str('type', command.type);
  const status = r.str('status', command.status);
  // `event` + `status` (as some SDK versions send) and `type` + `status` both name a dotted event.
  let name: string | null =
    event && status && !event.includes('.') ? nameFromTypeStatus(event, status) : event;
  if (!name && type) name = nameFromTypeStatus(type, status ?? undefined);
  if (!name) {
    if (command.event === undefined && command.type === undefined)
      p.push({ field: 'event', message: 'is required' });
    throw new InvalidParameters(p);
  }
  // A name without `$` is the application's own event (Castle's v1 track took any name; Castle's
  // Go SDK sends `castle.Event("custom-event")`): a `$custom` event of that name, where `$custom`
  // is accepted.
  let ownName: string | null = null;
  if (!name.startsWith('$') && name.trim() !== '' && eventSpec(CUSTOM_EVENT)?.endpoints.includes(endpoint)) {
    ownName = name;
    name = CUSTOM_EVENT;
  }
  const spec = eventSpec(name);
  if (!spec)
    throw new InvalidParameters([
      ...p,
      { field: event ? 'event' : 'type', message: `unknown event ${JSON.stringify(name.slice(0, 100))}` },
    ]);
  if (!spec.endpoints.includes(endpoint)) {
    const where = spec.endpoints.includes('track') ? ' send it to /v1/track' : '';
    throw new InvalidParameters([
      ...p,
      { field: 'event', message: `${name} is not accepted by /v1/${endpoint};${where}`.replace(/;$/, '') },
    ]);
  }

  const user = r.obj('user', command.user);
  const traits = r.obj('user_traits', command.userTraits) ?? {};
  const params = r.obj('params', command.params) ?? {};
  const properties = r.obj('properties', command.properties) ?? {};
  const context = r.obj('context', command.context);

  const userId = r.str('user_id', command.userId) ?? (user ? r.str('user.id', user.id) : null);
  const email =
    r.str('user_traits.email', traits.email) ??
    (user ? r.str('user.email', user.email) : null) ??
    r.str('params.email', params.email) ??
    r.str('properties.email', properties.email);
  const username =
    r.str('user_traits.username', traits.username) ??
    r.str('params.username', params.username) ??
    r.str('properties.username', properties.username);
  const phone =
    r.str('user_traits.phone', traits.phone) ??
    (user ? r.str('user.phone', user.phone) : null) ??
    r.str('params.phone', params.phone) ??
    r.str('properties.phone', properties.phone);
  const registeredAt =
    r.date('user_traits.registered_at', traits.registered_at) ??
    (user ? r.date('user.registered_at', user.registered_at) : null) ??
    r.date('user_traits.created_at', traits.created_at);
  const deviceToken = r.str('device_token', command.deviceToken);
  const customName = ownName ?? r.str('name', command.name);

  // Context.
  const ipRaw = context ? r.str('context.ip', context.ip) : null;
  const ip = ipRaw === null ? null : normaliseIp(ipRaw);
  const headers = normaliseHeaders(context?.headers, 'context.headers', p);
  const uaFromHeader = headers['user-agent'];
  // Older SDKs send `context.user_agent` as `false` when the request had none (castle-java).
  const contextUa =
    context && typeof context.user_agent !== 'boolean'
      ? r.str('context.user_agent', context.user_agent)
      : null;
  const userAgent = (typeof uaFromHeader === 'string' ? uaFromHeader : null) ?? contextUa ?? '';
  const requestToken = r.str('request_token', command.requestToken);
  const clientIdSent = context?.client_id ?? command.clientId;
  const clientId = r.valid('context.client_id', clientIdSent) === null ? null : clientIdSent;
  const fingerprint = pickFingerprint([requestToken, clientId], headers);

  // Event time.
  const occurred = r.date('timestamp', command.timestamp) ?? r.date('created_at', command.createdAt);
  if (occurred && occurred.getTime() > opts.now.getTime() + FUTURE_TOLERANCE_MS) {
    p.push({
      field: command.timestamp !== undefined ? 'timestamp' : 'created_at',
      message: 'is more than 5 minutes in the future',
    });
  }

  // Endpoint requirements (schema.ts): a field is required once its parent object was sent.
  const sent: Partial<Record<EventField, boolean>> = {
    context: context !== null,
    'context.ip': ipRaw !== null,
    'context.headers': context?.headers !== undefined && context?.headers !== null,
    user: user !== null,
    'user.id': userId !== null,
  };
  for (const field of ENDPOINT_REQUIRES[endpoint]) {
    const dot = field.indexOf('.');
    if (dot > 0 && !sent[field.slice(0, dot) as EventField]) continue;
    if (!sent[field]) {
      if (!p.some((x) => x.field === field)) p.push({ field, message: 'is required' });
    } else if (
      field === 'context.headers' &&
      typeof uaFromHeader !== 'string' &&
      !p.some((x) => x.field.startsWith('context.headers'))
    ) {
      p.push({ field: 'context.headers.User-Agent', message: 'is required' });
    }
  }
  const identifiers: Sent = { email, username, phone, submitted: submittedIdentifier(properties, params) };
  for (const req of spec.requires[endpoint] ?? [])
    checkRequirement(req, { userId, deviceToken, customName, sent: identifiers }, p);
  const missing = (spec.recommends[endpoint] ?? []).filter((rec) => !recommendationSent(rec, identifiers));

  // Tokens: shape, sandbox test tokens.
  let testToken: EventInput['testToken'] = null;
  for (const [field, token] of [
    ['request_token', requestToken],
    ['context.client_id', typeof clientId === 'string' ? clientId : null],
  ] as const) {
    if (!token || testToken) continue;
    if (!tokenShapeOk(token)) {
      throw new InvalidRequestToken(
        field,
        `is malformed (printable ASCII, at most ${MAX_TOKEN_LENGTH} characters)`,
      );
    }
    let parsed;
    try {
      parsed = parseTestToken(token);
    } catch (err) {
      throw new InvalidRequestToken(field, `is not a valid test token: ${(err as Error).message}`);
    }
    if (parsed && !opts.sandbox)
      throw new InvalidRequestToken(field, 'is a test token, accepted only in sandbox environments');
    testToken = parsed;
  }

  if (p.length > 0) throw new InvalidParameters(p);

  // What is kept of the event is scrubbed here, once, by the one rule (scrub.ts): everything
  // stored or sent on (the event, the profile's traits, device contexts, webhooks, exports) is
  // made from these.
  const extra: Record<string, unknown> = { ...command.extra };
  if (command.sentAt !== undefined) extra.sent_at = command.sentAt;
  const contextExtra: Record<string, unknown> = {};
  if (context)
    for (const k in context)
      if (Object.prototype.hasOwnProperty.call(context, k) && !CONTEXT_KNOWN.has(k))
        contextExtra[k] = context[k];

  const userTraits: Record<string, unknown> = { ...traits };
  if (user)
    for (const k in user)
      if (Object.prototype.hasOwnProperty.call(user, k) && k !== 'id' && userTraits[k] === undefined)
        userTraits[k] = user[k];

  return {
    endpoint,
    name,
    customName,
    userId,
    email: email ? email.trim().toLowerCase() : null,
    username,
    phone,
    registeredAt,
    userTraits: scrubRecord(userTraits),
    properties: scrubRecord({ ...params, ...properties }),
    context: {
      ip,
      headers: scrubHeaders(headers),
      userAgent,
      fingerprint: testToken?.device ? `test-device:${testToken.device}` : fingerprint,
      extra: scrubRecord(contextExtra),
    },
    deviceToken,
    requestToken,
    testToken,
    missing,
    occurredAt: occurred ?? opts.now,
    receivedAt: opts.now,
    extra: scrubRecord(extra),
  };
}

/** The identifiers an event carries, wherever it carried them. */
interface Sent {
  email: string | null;
  username: string | null;
  phone: string | null;
  /** The identifier submitted in a form (`properties` or `params`: e-mail, user name or phone). */
  submitted: boolean;
}

interface RequirementInput {
  userId: string | null;
  deviceToken: string | null;
  customName: string | null;
  sent: Sent;
}

function nonEmpty(v: unknown): boolean {
  return typeof v === 'string' && v.trim().length > 0;
}

function submittedIdentifier(properties: Obj, params: Obj): boolean {
  return [
    properties.email,
    properties.username,
    properties.phone,
    params.email,
    params.username,
    params.phone,
  ].some(nonEmpty);
}

function checkRequirement(req: Requirement, x: RequirementInput, p: FieldProblem[]): void {
  switch (req) {
    case 'user_id':
      if (!x.userId && !p.some((q) => q.field === 'user_id'))
        p.push({ field: 'user_id', message: 'is required for this event' });
      break;
    case 'registration_identifier':
      if (!nonEmpty(x.sent.email) && !nonEmpty(x.sent.phone))
        p.push({
          field: 'user_traits.email',
          message:
            'a registration needs the e-mail (user_traits.email) or phone (user_traits.phone) it registers',
        });
      break;
    case 'device_or_user':
      if (!x.deviceToken && !x.userId)
        p.push({ field: 'device_token', message: 'device_token or user_id is required for this event' });
      break;
    case 'name':
      if (!nonEmpty(x.customName)) p.push({ field: 'name', message: 'is required for $custom events' });
      break;
  }
}

/** Whether a recommended field arrived, in any of the places it is read from. */
function recommendationSent(rec: Recommendation, x: Sent): boolean {
  switch (rec) {
    case 'user_traits.email':
    case 'properties.email':
      return nonEmpty(x.email);
    case 'user_traits.email|username':
      return nonEmpty(x.email) || nonEmpty(x.username);
    case 'properties.email|username|phone':
      return x.submitted;
  }
}

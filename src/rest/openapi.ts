/**
 * The REST door's OpenAPI 3.1 document (served at GET /v1/openapi.json), generated at start-up
 * from the schemas that validate requests (core/events/schema.ts, core/privacy/schema.ts) and
 * the schemas the mappers answer (responses.ts), with the event catalog's rules in the text.
 * Nothing here restates a field: a change to validation changes the document.
 */
import {
  extendZodWithOpenApi,
  OpenAPIRegistry,
  OpenApiGeneratorV31,
  type ResponseConfig,
  type RouteConfig,
} from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import type { Endpoint } from '../core/model';
import {
  ENDPOINT_REQUIRES,
  eventBodySchema,
  eventNames,
  eventRequirements,
  HEADER_NAME_PATTERN,
  type EventField,
} from '../core/events/schema';
import { MAX_TOKEN_LENGTH, TOKEN_CHARS } from '../core/events/context';
import { PUBLISHABLE_KEY_PATTERN } from '../core/client/service';
import { componentsSchema } from '../core/client/components';
import { behaviourSchema, proofSchema } from '../core/client/proof';
import { APP_ID, mobileSchema } from '../core/client/mobile';
import { clientEventsSchema } from '../core/client/events';
import { privacyIdentifierSchema } from '../core/privacy/schema';
import * as body from './responses';
import * as lists from './lists';

extendZodWithOpenApi(z);

export interface OpenApiOptions {
  /** The body limit the server enforces (413 above it). */
  bodyLimit: number;
  /** GET /metrics is served; `token`: it needs a bearer token. */
  metrics: { token: boolean } | null;
  /** The demo login page is served (development). */
  demo: boolean;
  /** Longest path parameter the router matches (longer: 404 route_not_found). */
  maxParamLength: number;
}

/** Why each error status can answer. */
const ERROR_WHY: Readonly<Record<number, string>> = {
  400: 'bad_request: the body is not JSON or not an object, or the URL or request is malformed',
  401: 'unauthorized: the API secret is missing or wrong (a read-only key answers the same)',
  403: 'forbidden: the environment is disabled (`reason: environment_disabled`), or an analyst key (read-only) asked for a change (`read_only_key`)',
  404: 'not_found: nothing has this id or token; route_not_found: no such path',
  413: 'payload_too_large: the body is over the limit',
  422: 'invalid_parameters: the body does not conform (`fields` lists every offending field); invalid_request_token: the request token is malformed, forged, expired or replayed',
  429: 'rate_limited: too many requests for the environment, or too many failed secrets from this address; wait Retry-After seconds',
  431: 'bad_request: the request headers (or the URL) are too large',
  500: 'server_error: an internal error, logged under `correlation_id`',
  503: 'service_unavailable: the database does not answer, writes are more than a second behind (overload), or the service is shutting down; nothing was taken: wait Retry-After seconds and send it again',
};

/** Shared bodies, as components of their own. */
const errorBody = body.errorBody.openapi('Error');
const device = body.deviceBody.openapi('Device');
const devices = z.object({ total_count: body.devicesBody.shape.total_count, data: z.array(device) });

const retryAfter = {
  'Retry-After': {
    description: 'Seconds to wait',
    required: true,
    schema: { type: 'string' as const, pattern: '^[0-9]+$' },
  },
};

/** `why`: what a status means for this operation, where it is not what ERROR_WHY says. */
function errors(
  codes: readonly number[],
  why: Readonly<Record<number, string>> = {},
): Record<string, ResponseConfig> {
  const out: Record<string, ResponseConfig> = {};
  for (const code of codes) {
    out[String(code)] = {
      description: why[code] ?? ERROR_WHY[code] ?? 'error',
      content: { 'application/json': { schema: errorBody } },
      ...(code === 429 || code === 503 ? { headers: retryAfter } : {}),
    };
  }
  return out;
}

const json = (description: string, schema: z.ZodTypeAny): ResponseConfig => ({
  description,
  content: { 'application/json': { schema } },
});

/** Every request can be refused before it is routed (malformed URL, headers too large). */
const ANY = [400, 431];
/** Every call that authenticates with the API secret and reads the database. */
const AUTHENTICATED = [...ANY, 401, 403, 429, 500, 503];
/** Every call whose body the server reads. */
const WITH_BODY = [413];

const VERDICT_ANSWER: Readonly<Record<Exclude<Endpoint, 'track'>, z.ZodTypeAny>> = {
  authenticate: body.authenticateBody,
  risk: body.riskBody,
  filter: body.filterBody,
};

/** What the document adds to a field beyond its schema: what JSON Schema's vocabulary can say more precisely. */
const DESCRIBE: Partial<Record<EventField, (s: z.ZodTypeAny, names: string[]) => z.ZodTypeAny>> = {
  event: (s, names) => s.openapi({ enum: names }),
  'context.ip': (s) => s.openapi({ anyOf: [{ format: 'ipv4' }, { format: 'ipv6' }] }),
  // Header names in any case; the object form documents User-Agent by the name browsers send.
  'context.headers': (s) =>
    s.openapi({
      propertyNames: { pattern: HEADER_NAME_PATTERN.source },
      properties: { 'User-Agent': { type: 'string', maxLength: 8192 } },
    } as Record<string, unknown>),
  // Tokens: printable ASCII (context.ts); anything else answers 422 invalid_request_token.
  request_token: (s) => s.openapi({ pattern: TOKEN_CHARS.source, maxLength: MAX_TOKEN_LENGTH }),
  timestamp: (s) => s.openapi({ format: 'date-time' }),
  created_at: (s) => s.openapi({ format: 'date-time' }),
  'user.registered_at': (s) => s.openapi({ format: 'date-time' }),
  'user_traits.registered_at': (s) => s.openapi({ format: 'date-time' }),
  'user_traits.created_at': (s) => s.openapi({ format: 'date-time' }),
};

/** The request body of an event endpoint, with what JSON Schema cannot say written out. */
function eventBody(endpoint: Endpoint) {
  const names = eventNames(endpoint);
  const needs = eventRequirements(endpoint);
  const rules = Object.entries(needs).map(([name, fields]) => `\`${name}\`: ${fields.join(', ')}`);
  const required = ENDPOINT_REQUIRES[endpoint];
  const description = [
    'The event is named by `event`, or by `type` + `status` (newer SDKs).',
    required.length
      ? `This endpoint needs ${required.map((f) => `\`${f}\``).join(', ')}${required.includes('context.headers') ? ' (with a User-Agent header)' : ''}.`
      : '',
    rules.length ? `Some events need more (422 when missing): ${rules.join('; ')}.` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return eventBodySchema(endpoint, (path, schema) => DESCRIBE[path]?.(schema, names) ?? schema).openapi({
    description,
    anyOf: [{ required: ['event'] }, { required: ['type'] }],
    'x-rampart-event-requirements': needs,
  } as Record<string, unknown>);
}

const param = (name: string, description: string, max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .openapi({ param: { name, in: 'path' }, description });

/** The whole document, for the routes these options serve. */
export function openApiDocument(o: OpenApiOptions): object {
  const r = new OpenAPIRegistry();
  const basic = r.registerComponent('securitySchemes', 'apiSecret', {
    type: 'http',
    scheme: 'basic',
    description: "HTTP Basic with an empty user name and the environment's API secret as the password",
  });
  const secured = [{ [basic.name]: [] }];
  const open: RouteConfig['security'] = [];
  const route = (c: RouteConfig) => r.registerPath(c);
  const pathParams = (names: Record<string, string>) =>
    z.object(Object.fromEntries(Object.entries(names).map(([n, d]) => [n, param(n, d, o.maxParamLength)])));

  for (const endpoint of ['authenticate', 'risk', 'filter'] as const) {
    route({
      method: 'post',
      path: `/v1/${endpoint}`,
      operationId: endpoint,
      tags: ['verdicts'],
      summary: {
        authenticate: 'A verdict for an event (older style)',
        risk: 'Risk of an event of a known user',
        filter: 'Risk of an event before the user is known',
      }[endpoint],
      security: secured,
      request: { body: { required: true, content: { 'application/json': { schema: eventBody(endpoint) } } } },
      responses: {
        '201': json('The verdict', VERDICT_ANSWER[endpoint]),
        ...errors([...AUTHENTICATED, ...WITH_BODY, 422]),
      },
    });
  }
  for (const path of ['/v1/track', '/v1/log']) {
    route({
      method: 'post',
      path,
      operationId: path === '/v1/track' ? 'track' : 'log',
      tags: ['events'],
      summary:
        path === '/v1/track' ? 'Record an event (no verdict)' : 'Record an event (newer SDKs; as track)',
      description:
        'Answers 204 once authenticated, also to a malformed body: rejected payloads are kept, with the reason, in the debugger (GraphQL).',
      security: secured,
      request: { body: { required: true, content: { 'application/json': { schema: eventBody('track') } } } },
      responses: { '204': { description: 'Received' }, ...errors([...AUTHENTICATED, ...WITH_BODY]) },
    });
  }

  const devicesQuery = z.object({
    cid: z
      .string()
      .optional()
      .openapi({ description: 'A client_id: the device it matches answers is_current_device: true' }),
    client_id: z.string().optional().openapi({ description: 'As cid' }),
  });
  route({
    method: 'get',
    path: '/v1/users/{userId}/devices',
    operationId: 'listUserDevices',
    tags: ['devices'],
    security: secured,
    request: { params: pathParams({ userId: "The user's id in the application" }), query: devicesQuery },
    responses: { '200': json("The user's devices", devices), ...errors([...AUTHENTICATED, 404]) },
  });
  const deviceParams = pathParams({ token: 'A device token (as risk and authenticate answer it)' });
  route({
    method: 'get',
    path: '/v1/devices/{token}',
    operationId: 'getDevice',
    tags: ['devices'],
    security: secured,
    request: { params: deviceParams },
    responses: { '200': json('The device', device), ...errors([...AUTHENTICATED, 404]) },
  });
  for (const [verb, what] of [
    ['approve', 'approved_at set, risk 0'],
    ['report', 'escalated_at set, risk 100; an $incident.confirmed webhook is sent'],
  ] as const) {
    route({
      method: 'put',
      path: `/v1/devices/{token}/${verb}`,
      operationId: `${verb}Device`,
      tags: ['devices'],
      security: secured,
      request: { params: deviceParams },
      responses: {
        '200': json(`The device, ${what}`, device),
        ...errors([...AUTHENTICATED, ...WITH_BODY, 404]),
      },
    });
  }

  // Lists (docs/lists.md): Castle's Lists API, and Rampart's CSV import and export of items.
  const list = lists.listBody.openapi('List');
  const item = lists.itemBody.openapi('ListItem');
  const importJob = lists.importJobBody.openapi('ListImport');
  const listParams = pathParams({ listId: "The list's id" });
  const itemParams = pathParams({ listId: "The list's id", itemId: "The item's id" });
  const jsonRequest = (schema: z.ZodTypeAny, required = true) => ({
    body: { required, content: { 'application/json': { schema } } },
  });
  const listRoutes: RouteConfig[] = [
    {
      method: 'post',
      path: '/v1/lists',
      operationId: 'createList',
      request: jsonRequest(lists.listCreateRequest),
      responses: { '201': json('The list', list), ...errors([...AUTHENTICATED, ...WITH_BODY, 422]) },
    },
    {
      method: 'get',
      path: '/v1/lists',
      operationId: 'getAllLists',
      responses: { '200': json('Every list, oldest first', z.array(list)), ...errors(AUTHENTICATED) },
    },
    {
      method: 'post',
      path: '/v1/lists/query',
      operationId: 'queryLists',
      request: jsonRequest(lists.queryRequest, false),
      responses: {
        '200': json('A page of lists', z.array(list)),
        ...errors([...AUTHENTICATED, ...WITH_BODY, 422]),
      },
    },
    {
      method: 'get',
      path: '/v1/lists/{listId}',
      operationId: 'getList',
      request: { params: listParams },
      responses: { '200': json('The list', list), ...errors([...AUTHENTICATED, 404]) },
    },
    {
      method: 'put',
      path: '/v1/lists/{listId}',
      operationId: 'updateList',
      request: { params: listParams, ...jsonRequest(lists.listUpdateRequest) },
      responses: { '200': json('The list', list), ...errors([...AUTHENTICATED, ...WITH_BODY, 404, 422]) },
    },
    {
      method: 'delete',
      path: '/v1/lists/{listId}',
      operationId: 'deleteList',
      description: 'The list and its items are deleted; a list an active policy names is refused (422).',
      request: { params: listParams },
      responses: { '204': { description: 'Deleted' }, ...errors([...AUTHENTICATED, ...WITH_BODY, 404, 422]) },
    },
    {
      method: 'post',
      path: '/v1/lists/{listId}/items',
      operationId: 'createListItem',
      description: 'A value already active in the list is refused (422); an archived one comes back.',
      request: { params: listParams, ...jsonRequest(lists.itemCreateRequest) },
      responses: { '201': json('The item', item), ...errors([...AUTHENTICATED, ...WITH_BODY, 404, 422]) },
    },
    {
      method: 'post',
      path: '/v1/lists/{listId}/items/batch',
      operationId: 'createListItemsBatch',
      description: 'Adds or replaces up to 1000 items; nothing is written unless every item is valid.',
      request: { params: listParams, ...jsonRequest(lists.itemBatchRequest) },
      responses: {
        '201': json('The items', z.array(item)),
        ...errors([...AUTHENTICATED, ...WITH_BODY, 404, 422]),
      },
    },
    {
      method: 'post',
      path: '/v1/lists/{listId}/items/query',
      operationId: 'queryListItems',
      request: { params: listParams, ...jsonRequest(lists.queryRequest, false) },
      responses: {
        '200': json('A page of items', z.array(item)),
        ...errors([...AUTHENTICATED, ...WITH_BODY, 404, 422]),
      },
    },
    {
      method: 'post',
      path: '/v1/lists/{listId}/items/count',
      operationId: 'countListItems',
      request: { params: listParams, ...jsonRequest(lists.countRequest, false) },
      responses: {
        '200': json('How many items match', lists.countBody),
        ...errors([...AUTHENTICATED, ...WITH_BODY, 404, 422]),
      },
    },
    {
      method: 'post',
      path: '/v1/lists/{listId}/items/import',
      operationId: 'importListItems',
      description: `CSV with a header naming \`value\` (or \`primary_value\`) and optionally \`secondary_value\`, \`comment\`, \`expires_at\`; at most ${lists.IMPORT_MAX_BYTES} bytes and 100,000 rows. Every line is checked first: one bad line answers 422 naming each bad line and imports nothing. Up to 1,000 items are written before the answer (201); more, or any import sent with \`Prefer: respond-async\`, are written by a job (202) followed at its \`Location\`.`,
      request: {
        params: listParams,
        headers: z.object({
          prefer: z
            .string()
            .optional()
            .openapi({ description: '`respond-async`: answer 202 with a job whatever the size' }),
        }),
        body: { required: true, content: { 'text/csv': { schema: z.string() } } },
      },
      responses: {
        '201': json('What was imported', lists.importBody),
        '202': {
          description: 'The import job writing the items (follow it at Location)',
          headers: { Location: { required: true, schema: { type: 'string' } } },
          content: { 'application/json': { schema: importJob } },
        },
        ...errors([...AUTHENTICATED, ...WITH_BODY, 404, 422]),
      },
    },
    {
      method: 'get',
      path: '/v1/lists/{listId}/items/import/{importId}',
      operationId: 'getListImport',
      description:
        'An import job: its progress (written of items), and in the end succeeded, or failed with why and how far it got.',
      request: { params: pathParams({ listId: "The list's id", importId: "The import's id" }) },
      responses: { '200': json('The import job', importJob), ...errors([...AUTHENTICATED, 404]) },
    },
    {
      method: 'get',
      path: '/v1/lists/{listId}/items/export',
      operationId: 'exportListItems',
      request: {
        params: listParams,
        query: z.object({
          include_archived: z
            .enum(['true', 'false'])
            .optional()
            .openapi({ description: 'Also archived items (default false)' }),
        }),
      },
      responses: {
        '200': {
          description: 'The items as CSV (docs/lists.md)',
          content: { 'text/csv': { schema: z.string() } },
        },
        ...errors([...AUTHENTICATED, 404]),
      },
    },
    {
      method: 'get',
      path: '/v1/lists/{listId}/items/{itemId}',
      operationId: 'getListItem',
      request: { params: itemParams },
      responses: { '200': json('The item', item), ...errors([...AUTHENTICATED, 404]) },
    },
    {
      method: 'put',
      path: '/v1/lists/{listId}/items/{itemId}',
      operationId: 'updateListItem',
      request: { params: itemParams, ...jsonRequest(lists.itemUpdateRequest) },
      responses: { '200': json('The item', item), ...errors([...AUTHENTICATED, ...WITH_BODY, 404, 422]) },
    },
    {
      method: 'delete',
      path: '/v1/lists/{listId}/items/{itemId}/archive',
      operationId: 'archiveListItem',
      request: { params: itemParams },
      responses: {
        '200': json('The item, archived', item),
        ...errors([...AUTHENTICATED, ...WITH_BODY, 404]),
      },
    },
    {
      method: 'put',
      path: '/v1/lists/{listId}/items/{itemId}/unarchive',
      operationId: 'unarchiveListItem',
      request: { params: itemParams },
      responses: {
        '200': json('The item, active again', item),
        ...errors([...AUTHENTICATED, ...WITH_BODY, 404, 422]),
      },
    },
  ];
  for (const c of listRoutes) route({ ...c, tags: ['lists'], security: secured });

  const privacyUser = pathParams({ userId: "The user's id in the application" });
  const privacyBody = {
    required: true,
    content: { 'application/json': { schema: privacyIdentifierSchema } },
  };
  const access = json(
    'Access request accepted: the export is compiled and a signed link e-mailed to the privacy address',
    body.privacyAccessBody,
  );
  const purged = json(
    'The user and every record about them deleted (also for an unknown id)',
    body.privacyPurgeBody,
  );
  for (const byBody of [false, true]) {
    const path = byBody ? '/v1/privacy/users' : '/v1/privacy/users/{userId}';
    const request = byBody ? { body: privacyBody } : { params: privacyUser };
    const suffix = byBody ? 'ByIdentifier' : '';
    route({
      method: 'post',
      path,
      operationId: `requestPrivacyAccess${suffix}`,
      tags: ['privacy'],
      security: secured,
      request,
      responses: { '202': access, ...errors([...AUTHENTICATED, ...WITH_BODY, 404, 422]) },
    });
    route({
      method: 'delete',
      path,
      operationId: `purgeUser${suffix}`,
      tags: ['privacy'],
      security: secured,
      request,
      responses: {
        '202': purged,
        ...errors([...AUTHENTICATED, ...WITH_BODY, 422, ...(byBody ? [] : [404])]),
      },
    });
  }
  route({
    method: 'get',
    path: '/v1/privacy/exports/{jobId}',
    operationId: 'downloadPrivacyExport',
    tags: ['privacy'],
    description: 'The link e-mailed after an access request: signed, valid 48 hours; no API secret.',
    security: open,
    request: {
      params: pathParams({ jobId: 'The access request id' }),
      query: z.object({
        expires: z.string().openapi({ description: 'Unix time the link ends' }),
        signature: z.string().openapi({ description: "The link's signature" }),
      }),
    },
    responses: {
      '200': {
        description: "The user's records",
        headers: { 'Content-Disposition': { required: true, schema: { type: 'string' } } },
        content: { 'application/json': { schema: z.record(z.unknown()) } },
      },
      ...errors([...ANY, 404, 500, 503]),
    },
  });

  // The clients' calls carry the publishable key, never a secret: their refusals say so.
  const CLIENT_401 =
    'unauthorized: the publishable key is missing, unknown, or of a disabled environment (no API secret is involved)';
  const CLIENT_429 =
    'rate_limited: more than RAMPART_CLIENT_RATE_LIMIT requests a second (default 10, bursts of three times that) from this address for this environment (the message names the setting); wait Retry-After seconds';
  const ORIGIN_403 =
    "`origin_not_allowed`: the request's `Origin` is not one of the environment's origins (`rampart env set-origins`); `no_origins_listed`: a production environment that lists no origins yet. A request without an `Origin` is no page's (a native or server-side client) and is never refused for it";
  const clientErrors = (why403: string, why422?: string, codes: readonly number[] = [401, 403, 422, 429]) => {
    const why: Record<number, string> = { 401: CLIENT_401, 403: `forbidden: ${why403}`, 429: CLIENT_429 };
    if (why422) why[422] = why422;
    return errors([...ANY, ...WITH_BODY, ...codes, 500, 503], why);
  };
  const corsHeaders = {
    'Access-Control-Allow-Origin': {
      description: "The page's Origin, when it sent one",
      schema: { type: 'string' as const },
    },
  };
  route({
    method: 'post',
    path: '/v1/client/token',
    operationId: 'collectClientToken',
    tags: ['browser client'],
    description:
      "Called by the browser client from the application's pages, or by a native app (docs/mobile.md), with the environment's publishable key (not a secret). A browser sends `components` and gets a signed, single-use request token; an app sends `mobile` and also gets a session and its key, to mint a fresh token for each of its requests.",
    security: open,
    request: {
      body: {
        required: true,
        content: {
          'application/json': {
            schema: z
              .object({
                publishable_key: z.string().openapi({
                  pattern: PUBLISHABLE_KEY_PATTERN.source,
                  description: "The environment's publishable key",
                }),
                components: componentsSchema
                  .optional()
                  .openapi({ description: "A browser's components (docs/client.md)" }),
                mobile: mobileSchema.optional().openapi({
                  description: "A native app's device and app (docs/mobile.md); instead of components",
                }),
                proof: proofSchema.optional().openapi({
                  description:
                    'With components, optional: the answer to a challenge from POST /v1/client/challenge (docs/client.md, "What a token costs")',
                }),
                behaviour: behaviourSchema.optional().openapi({
                  description: 'With components, optional: what the page saw before it asked (counts only)',
                }),
              })
              .passthrough(),
          },
        },
      },
    },
    responses: {
      '201': {
        description: 'A request token for the next verdict (and, to an app, its session)',
        headers: corsHeaders,
        content: { 'application/json': { schema: body.clientTokenBody } },
      },
      ...clientErrors(
        `a browser's components: ${ORIGIN_403}. An app's \`mobile\`: \`app_not_allowed\`: \`mobile.app.id\` is not one of the environment's apps (\`rampart env set-apps\`); \`no_apps_listed\`: a production environment that lists no apps yet`,
        'invalid_parameters: `components`, `mobile`, `proof` or `behaviour` does not conform, or a proof does not answer its challenge (`fields` names each: `proof.challenge` says why, e.g. expired or not valid yet)',
      ),
    },
  });
  route({
    method: 'post',
    path: '/v1/client/events',
    operationId: 'clientEvents',
    tags: ['mobile client'],
    description:
      "Called by a native app (docs/mobile.md) with the environment's publishable key and the session the collector gave it: a batch of the install's events (installs, updates, opens, closes, screens, custom events, identifies); or by a page (docs/client.md) with a request token the collector gave it: castle-js 2.x's page, form and custom events, CORS as for the collector. Each event's `timestamp` is when it happened, on the clock of the verdicts' `timestamp`; kept 7 days from its arrival. A body is at most the service's body limit, and never more than 256 KiB.",
    security: open,
    request: { body: { required: true, content: { 'application/json': { schema: clientEventsSchema } } } },
    responses: {
      '202': {
        description:
          "The batch taken: the events kept (`accepted`), those older than RAMPART_MAX_EVENT_AGE_DAYS and not kept (`dropped`), and of the kept ones those that named their user with a signature or JWT (`signed`) and those that verified under one of the environment's live API secrets (`verified`)",
        headers: corsHeaders,
        content: { 'application/json': { schema: body.clientEventsBody } },
      },
      ...clientErrors(
        `with a page's \`request_token\`: ${ORIGIN_403}. An app's \`session\` is never refused for its origin`,
        'invalid_parameters: the body does not conform (`fields` names each event and member, `events.3.name`); invalid_request_token: the `session` or `request_token` does not verify, the message naming the field and why (malformed, forged, expired, not_yet_valid, other_environment): register again, or ask the collector for a new token',
      ),
    },
  });
  route({
    method: 'post',
    path: '/v1/client/challenge',
    operationId: 'clientChallenge',
    tags: ['browser client'],
    description:
      'Optional first step of a browser\'s token (docs/client.md, "What a token costs"): a signed challenge, valid five minutes and for one token request, which the client answers with a nonce such that SHA-256(salt ‖ nonce) begins with `difficulty` zero bits. The publishable key and the page\'s origin are checked as for a token. A native app asks with its `app` id for the challenge its platform attestation is made over (docs/mobile.md, "Attestation").',
    security: open,
    request: {
      body: {
        required: true,
        content: {
          'application/json': {
            schema: z
              .object({
                publishable_key: z.string().openapi({
                  pattern: PUBLISHABLE_KEY_PATTERN.source,
                  description: "The environment's publishable key",
                }),
                app: z.string().optional().openapi({
                  pattern: APP_ID.source,
                  description:
                    "A native app's id, for the challenge of its attestation (docs/mobile.md, \"Attestation\"): checked against the environment's apps instead of the page's origin",
                }),
              })
              .passthrough(),
          },
        },
      },
    },
    responses: {
      '201': {
        description: 'A challenge',
        headers: corsHeaders,
        content: { 'application/json': { schema: body.clientChallengeBody } },
      },
      ...clientErrors(
        `a page's challenge: ${ORIGIN_403}. An app's (with \`app\`): \`app_not_allowed\`: \`app\` is not one of the environment's apps; \`no_apps_listed\`: a production environment that lists no apps yet`,
        'invalid parameters: `app` is not an app id',
      ),
    },
  });
  route({
    method: 'options',
    path: '/v1/client/challenge',
    operationId: 'clientChallengePreflight',
    tags: ['browser client'],
    security: open,
    responses: { '204': { description: 'CORS preflight', headers: corsHeaders }, ...errors(ANY) },
  });
  route({
    method: 'options',
    path: '/v1/client/token',
    operationId: 'clientTokenPreflight',
    tags: ['browser client'],
    security: open,
    responses: { '204': { description: 'CORS preflight', headers: corsHeaders }, ...errors(ANY) },
  });
  route({
    method: 'options',
    path: '/v1/client/events',
    operationId: 'clientEventsPreflight',
    tags: ['browser client'],
    security: open,
    responses: { '204': { description: 'CORS preflight', headers: corsHeaders }, ...errors(ANY) },
  });
  route({
    method: 'get',
    path: '/client/v1/{file}',
    operationId: 'browserClientScript',
    tags: ['browser client'],
    security: open,
    request: {
      params: z.object({
        file: z
          .string()
          .min(1)
          .max(o.maxParamLength)
          .openapi({ param: { name: 'file', in: 'path' }, examples: ['rampart.js', 'rampart.mjs'] }),
      }),
    },
    responses: {
      '200': { description: 'The script', content: { 'text/javascript': { schema: z.string() } } },
      ...errors([...ANY, 404]),
    },
  });
  if (o.demo) {
    route({
      method: 'get',
      path: '/client/demo',
      operationId: 'demoPage',
      tags: ['browser client'],
      description: 'Development only: a demo login page using the browser client.',
      security: open,
      responses: {
        '200': { description: 'The page', content: { 'text/html': { schema: z.string() } } },
        ...errors([...ANY, 404, 500, 503]),
      },
    });
    route({
      method: 'post',
      path: '/client/demo/login',
      operationId: 'demoLogin',
      tags: ['browser client'],
      description: "Development only: the demo page's form, answered with the sandbox's verdict.",
      security: open,
      request: {
        body: {
          content: {
            'application/x-www-form-urlencoded': {
              schema: z.object({
                email: z.string().optional(),
                rampart_request_token: z.string().optional(),
              }),
            },
          },
        },
      },
      responses: {
        '200': { description: 'The verdict, as a page', content: { 'text/html': { schema: z.string() } } },
        ...errors([...ANY, ...WITH_BODY, 404, 422, 429, 500, 503]),
      },
    });
  }

  route({
    method: 'get',
    path: '/v1/openapi.json',
    operationId: 'openapi',
    tags: ['service'],
    summary: 'This document',
    security: open,
    responses: { '200': json('OpenAPI 3.1', z.record(z.unknown())), ...errors(ANY) },
  });
  route({
    method: 'get',
    path: '/',
    operationId: 'home',
    tags: ['service'],
    summary: 'The web console: a redirect to /console',
    security: open,
    responses: {
      '302': {
        description: 'To the web console',
        headers: { Location: { required: true, schema: { type: 'string', enum: ['/console'] } } },
      },
      ...errors(ANY),
    },
  });
  route({
    method: 'get',
    path: '/healthz',
    operationId: 'healthz',
    tags: ['service'],
    summary: 'Liveness: the process answers',
    security: open,
    responses: { '200': json('Alive', body.healthBody), ...errors(ANY) },
  });
  route({
    method: 'get',
    path: '/readyz',
    operationId: 'readyz',
    tags: ['service'],
    summary: 'Readiness: the database answers its ping within 500 ms',
    security: open,
    responses: {
      '200': json('Ready', body.readyBody),
      '503': json('Not ready', body.readyBody),
      ...errors(ANY),
    },
  });
  if (o.metrics) {
    const bearer = o.metrics.token
      ? r.registerComponent('securitySchemes', 'metricsToken', {
          type: 'http',
          scheme: 'bearer',
          description: 'RAMPART_METRICS_TOKEN',
        })
      : null;
    route({
      method: 'get',
      path: '/metrics',
      operationId: 'metrics',
      tags: ['service'],
      summary: 'Prometheus metrics',
      security: bearer ? [{ [bearer.name]: [] }] : open,
      responses: {
        '200': { description: 'Prometheus text format', content: { 'text/plain': { schema: z.string() } } },
        ...errors([...ANY, 500, ...(bearer ? [401] : [])]),
      },
    });
  }

  return new OpenApiGeneratorV31(r.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Rampart',
      version: 'v1',
      description: `Castle's v1 REST API, as Rampart serves it. Every error answers \`{type, message}\` (more fields may follow). Bodies over ${o.bodyLimit} bytes answer 413.`,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: '/' }],
  });
}

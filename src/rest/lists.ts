/**
 * Castle's Lists API on the REST door: lists and their items under /v1/lists, with the API
 * secret, plus Rampart's CSV import and export of items. Each route decodes the body, calls one
 * ListService use case and encodes the answer with the mappers below (whitelisting what leaves).
 */
import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { BadRequest, PayloadTooLarge } from '../core/errors';
import type { ItemDraft, List, ListImport, ListItem, ListQuery } from '../core/lists/model';
import { actorOf, linesOf, type ListCommand } from '../core/lists/service';
import type { Services } from '../core/services';
import { requireApiSecret } from './auth';
import { jsonBody } from './request';

/** Largest CSV import body (streamed; about 100,000 rows of addresses with comments). */
export const IMPORT_MAX_BYTES = 32 * 1024 * 1024;

const timestamp = z.string().describe('ISO 8601 UTC timestamp with milliseconds');

export const listBody = z.object({
  id: z.string(),
  name: z.string(),
  color: z.string(),
  description: z.string().nullable(),
  primary_field: z
    .string()
    .describe('The event field items are matched on (e.g. ip, user.email); see docs/lists.md'),
  secondary_field: z.string().nullable(),
  type: z
    .string()
    .describe(
      'What the primary field means to Rampart: user_id, email, email_domain, ip, asn, country, device, machine, request_shape',
    ),
  archived_at: timestamp.nullable().describe('Always null: a deleted list is gone'),
  created_at: timestamp,
  updated_at: timestamp,
});
export type ListBody = z.infer<typeof listBody>;

export const itemBody = z.object({
  id: z.string(),
  list_id: z.string(),
  primary_value: z.string(),
  secondary_value: z.string().nullable(),
  comment: z.string().nullable(),
  author: z.object({ type: z.string(), identifier: z.string() }),
  auto_archives_at: timestamp.nullable().describe('When the item stops matching by itself'),
  expires_at: timestamp.nullable().describe('As auto_archives_at'),
  archived: z.boolean(),
  archived_at: timestamp.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type ItemBody = z.infer<typeof itemBody>;

export const countBody = z.object({ total_count: z.number().int().min(0) });
export const importBody = z.object({
  rows: z.number().int(),
  created: z.number().int(),
  updated: z.number().int(),
});
export const importJobBody = z.object({
  id: z.string(),
  list_id: z.string(),
  status: z
    .enum(['queued', 'running', 'succeeded', 'failed'])
    .describe(
      'queued: after another import of the list; running; succeeded: every item written; failed: see error (written says how far it got)',
    ),
  rows: z.number().int().min(0).describe('Data rows of the CSV'),
  items: z.number().int().min(0).describe('Distinct items they make, all to be written'),
  written: z.number().int().min(0).describe('Items done so far (created + updated)'),
  created: z.number().int().min(0).describe('Items the list did not hold'),
  updated: z.number().int().min(0).describe('Items the list held already'),
  unchanged: z.number().int().min(0).describe('Of updated, items the CSV left as stored (not rewritten)'),
  error: z.string().nullable(),
  created_at: timestamp,
  updated_at: timestamp.describe('Last progress'),
  finished_at: timestamp.nullable(),
});
export type ImportJobBody = z.infer<typeof importJobBody>;

const filter = z.object({
  field: z.string(),
  op: z.string().describe('$eq, $ne, $in, $nin, $gt, $gte, $lt, $lte, $contains'),
  value: z.unknown(),
});
export const queryRequest = z
  .object({
    filters: z.array(filter).max(20).optional(),
    sort: z.object({ field: z.string(), order: z.enum(['asc', 'desc']) }).optional(),
    page: z.number().int().min(1).optional(),
    results_size: z.number().int().min(1).max(100).optional(),
  })
  .passthrough();
export const countRequest = z.object({ filters: z.array(filter).max(20).optional() }).passthrough();
export const listCreateRequest = z
  .object({
    name: z.string().min(1).max(200),
    color: z.string().describe('$red, $green, $blue, … (Castle requires one)'),
    primary_field: z.string().describe('ip, user.email, user.id, device.fingerprint, … (docs/lists.md)'),
    secondary_field: z.string().nullable().optional(),
    description: z.string().max(1000).nullable().optional(),
  })
  .passthrough();
export const listUpdateRequest = listCreateRequest.partial().passthrough();
const author = z
  .union([z.object({ type: z.string(), identifier: z.string() }), z.string()])
  .describe('Who added it: {type, identifier}; default: the API secret');
export const itemCreateRequest = z
  .object({
    primary_value: z
      .string()
      .describe("A value of the list's type (an address or CIDR network, an e-mail, …)"),
    secondary_value: z.string().nullable().optional(),
    comment: z.string().max(1000).nullable().optional(),
    author: author.optional(),
    auto_archives_at: z
      .string()
      .nullable()
      .optional()
      .describe('ISO 8601 time it stops matching (or expires_at)'),
    expires_at: z.string().nullable().optional(),
  })
  .passthrough();
export const itemBatchRequest = z
  .object({ items: z.array(itemCreateRequest).min(1).max(1000) })
  .passthrough();
export const itemUpdateRequest = z
  .object({
    comment: z.string().max(1000).nullable(),
    auto_archives_at: z.string().nullable().optional(),
    expires_at: z.string().nullable().optional(),
  })
  .passthrough();

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export const listJson = (l: List): ListBody => ({
  id: l.id,
  name: l.name,
  color: l.color,
  description: l.description,
  primary_field: l.primaryField,
  secondary_field: l.secondaryField,
  type: l.type,
  archived_at: null,
  created_at: l.createdAt.toISOString(),
  updated_at: l.updatedAt.toISOString(),
});

export const itemJson = (i: ListItem): ItemBody => ({
  id: i.id,
  list_id: i.listId,
  primary_value: i.primaryValue,
  secondary_value: i.secondaryValue,
  comment: i.comment,
  author: { type: i.author.type, identifier: i.author.identifier },
  auto_archives_at: iso(i.expiresAt),
  expires_at: iso(i.expiresAt),
  archived: i.archived,
  archived_at: iso(i.archivedAt),
  created_at: i.createdAt.toISOString(),
  updated_at: i.updatedAt.toISOString(),
});

export const importJobJson = (j: ListImport): ImportJobBody => ({
  id: j.id,
  list_id: j.listId,
  status: j.state,
  rows: j.rows,
  items: j.items,
  written: j.written,
  created: j.created,
  updated: j.updated,
  unchanged: j.unchanged,
  error: j.error,
  created_at: j.createdAt.toISOString(),
  updated_at: j.updatedAt.toISOString(),
  finished_at: iso(j.finishedAt),
});

/** Where a job is followed. */
export const importJobPath = (listId: string, importId: string): string =>
  `/v1/lists/${encodeURIComponent(listId)}/items/import/${encodeURIComponent(importId)}`;

/** `Prefer: respond-async` (RFC 7240): the caller wants a job whatever the size. */
const prefersAsync = (req: FastifyRequest): boolean =>
  String(req.headers.prefer ?? '')
    .split(',')
    .some((p) => p.trim().toLowerCase() === 'respond-async');

const queryOf = (b: Record<string, unknown>): ListQuery => ({
  filters: b.filters as ListQuery['filters'],
  sort: b.sort as ListQuery['sort'],
  ...(b.page !== undefined ? { page: b.page as number } : {}),
  ...(b.results_size !== undefined ? { resultsSize: b.results_size as number } : {}),
});
const expiryOf = (b: Record<string, unknown>): unknown =>
  b.auto_archives_at !== undefined ? b.auto_archives_at : b.expires_at;
/** A list's fields as a create or update body names them (the core checks them). */
const listFieldsOf = (b: Record<string, unknown>): ListCommand => ({
  name: b.name,
  color: b.color,
  primaryField: b.primary_field,
  secondaryField: b.secondary_field,
  description: b.description,
});
/** An item's fields as a create body, or one of a batch's items, names them. */
const itemFieldsOf = (x: Record<string, unknown>): ItemDraft => ({
  primaryValue: x.primary_value,
  secondaryValue: x.secondary_value,
  comment: x.comment,
  author: x.author,
  expiresAt: expiryOf(x),
});

/** A body that may be empty (queries and counts: all of them). */
const optionalBody = (req: FastifyRequest): Record<string, unknown> =>
  Buffer.isBuffer(req.body) && req.body.length > 0 ? jsonBody(req) : {};
const params = (req: FastifyRequest) => req.params as { listId: string; itemId: string };

export async function listRoutes(app: FastifyInstance, o: { services: Services }): Promise<void> {
  const lists = o.services.lists;
  requireApiSecret(app, o.services);

  app.post('/v1/lists', async (req, reply) => {
    const p = req.principal;
    const list = await lists.create(p.env.id, actorOf(p), listFieldsOf(jsonBody(req)));
    return reply.code(201).send(listJson(list));
  });
  app.get('/v1/lists', async (req, reply) => {
    const p = req.principal;
    return reply.code(200).send((await lists.all(p.env.id)).map(listJson));
  });
  app.post('/v1/lists/query', async (req, reply) => {
    const p = req.principal;
    return reply.code(200).send((await lists.query(p.env.id, queryOf(optionalBody(req)))).map(listJson));
  });
  app.get('/v1/lists/:listId', async (req, reply) => {
    const p = req.principal;
    return reply.code(200).send(listJson(await lists.get(p.env.id, params(req).listId)));
  });
  app.put('/v1/lists/:listId', async (req, reply) => {
    const p = req.principal;
    const list = await lists.update(p.env.id, actorOf(p), params(req).listId, listFieldsOf(jsonBody(req)));
    return reply.code(200).send(listJson(list));
  });
  app.delete('/v1/lists/:listId', async (req, reply) => {
    const p = req.principal;
    await lists.delete(p.env.id, actorOf(p), params(req).listId);
    return reply.code(204).send();
  });

  app.post('/v1/lists/:listId/items', async (req, reply) => {
    const p = req.principal;
    const item = await lists.createItem(
      p.env.id,
      actorOf(p),
      params(req).listId,
      itemFieldsOf(jsonBody(req)),
    );
    return reply.code(201).send(itemJson(item));
  });
  app.post('/v1/lists/:listId/items/batch', async (req, reply) => {
    const p = req.principal;
    const b = jsonBody(req);
    const drafts = Array.isArray(b.items)
      ? b.items.map((i: unknown) => {
          if (typeof i !== 'object' || i === null || Array.isArray(i)) return i as never;
          return itemFieldsOf(i as Record<string, unknown>);
        })
      : (b.items as never);
    const items = await lists.createItems(p.env.id, actorOf(p), params(req).listId, drafts);
    return reply.code(201).send(items.map(itemJson));
  });
  app.post('/v1/lists/:listId/items/query', async (req, reply) => {
    const p = req.principal;
    return reply
      .code(200)
      .send((await lists.queryItems(p.env.id, params(req).listId, queryOf(optionalBody(req)))).map(itemJson));
  });
  app.post('/v1/lists/:listId/items/count', async (req, reply) => {
    const p = req.principal;
    const b = optionalBody(req);
    return reply.code(200).send({
      total_count: await lists.countItems(p.env.id, params(req).listId, b.filters as ListQuery['filters']),
    });
  });
  // A CSV body reaches its route as the request stream (the listener's `text/csv` parser), read a
  // line at a time.
  app.post('/v1/lists/:listId/items/import', async (req, reply) => {
    const p = req.principal;
    const raw = req.body;
    if (!(raw instanceof Readable))
      throw new BadRequest('send the CSV as the request body, with Content-Type: text/csv');
    const chunks = limited(raw, IMPORT_MAX_BYTES);
    const { listId } = params(req);
    const outcome = await lists
      .importCsv(p.env.id, actorOf(p), listId, linesOf(chunks), { async: prefersAsync(req) })
      .catch((e: unknown) => {
        // Refused before the whole body was read (a bad line, too many rows or bytes): the answer
        // closes the connection, so that the rest of the body is not read.
        if (!raw.readableEnded) reply.header('connection', 'close');
        throw e;
      });
    if (outcome.report) return reply.code(201).send(outcome.report);
    return reply
      .code(202)
      .header('location', importJobPath(listId, outcome.job.id))
      .send(importJobJson(outcome.job));
  });
  app.get('/v1/lists/:listId/items/import/:importId', async (req, reply) => {
    const p = req.principal;
    const { listId, importId } = req.params as { listId: string; importId: string };
    return reply
      .code(200)
      .header('cache-control', 'no-store')
      .send(importJobJson(await lists.importJob(p.env.id, listId, importId)));
  });
  app.get('/v1/lists/:listId/items/export', async (req, reply) => {
    const p = req.principal;
    const { listId } = params(req);
    const list = await lists.get(p.env.id, listId);
    const q = req.query as Record<string, unknown>;
    const stream = Readable.from(lists.exportCsv(p.env.id, listId, q.include_archived === 'true'));
    return reply
      .code(200)
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="list-${list.id}.csv"`)
      .header('cache-control', 'no-store')
      .send(stream);
  });
  app.get('/v1/lists/:listId/items/:itemId', async (req, reply) => {
    const p = req.principal;
    const { listId, itemId } = params(req);
    return reply.code(200).send(itemJson(await lists.getItem(p.env.id, listId, itemId)));
  });
  app.put('/v1/lists/:listId/items/:itemId', async (req, reply) => {
    const p = req.principal;
    const { listId, itemId } = params(req);
    const b = jsonBody(req);
    return reply.code(200).send(
      itemJson(
        await lists.updateItem(p.env.id, actorOf(p), listId, itemId, {
          comment: b.comment,
          expiresAt: expiryOf(b),
        }),
      ),
    );
  });
  app.delete('/v1/lists/:listId/items/:itemId/archive', async (req, reply) => {
    const p = req.principal;
    const { listId, itemId } = params(req);
    return reply.code(200).send(itemJson(await lists.archiveItem(p.env.id, actorOf(p), listId, itemId)));
  });
  app.put('/v1/lists/:listId/items/:itemId/unarchive', async (req, reply) => {
    const p = req.principal;
    const { listId, itemId } = params(req);
    return reply.code(200).send(itemJson(await lists.unarchiveItem(p.env.id, actorOf(p), listId, itemId)));
  });
}

/**
 * The request's chunks, failing past `max` bytes (413; the answer closes the connection). Each
 * chunk is checked line by line as it is handed on; the event loop gets a turn between two, so
 * that a body already received in full (megabytes of CSV) never holds up the requests beside it,
 * nor the database's health probe, for longer than one chunk.
 */
async function* limited(stream: Readable, max: number): AsyncGenerator<Uint8Array> {
  let seen = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    seen += chunk.length;
    if (seen > max) throw new PayloadTooLarge(`a CSV import is at most ${max} bytes`);
    yield chunk;
    await nextTurn();
  }
}

/**
 * The MongoDB connection (official driver) and the index declarations of every repository,
 * applied at start-up. Works against MongoDB and FerretDB 1.24 alike: no transactions, no change
 * streams; hot look-ups go by _id.
 */
import type {
  Collection,
  CommandStartedEvent,
  Db,
  Document,
  Filter,
  IndexDescription,
  MongoClient,
  OptionalUnlessRequiredId,
  WithoutId,
} from 'mongodb';
import { ObjectId } from 'mongodb';

export interface IndexSpec {
  collection: string;
  /** Created on MongoDB; on FerretDB only the unique ones, unless named in `servedOnEmbedded`. */
  indexes: IndexDescription[];
  /**
   * Non-unique indexes of `indexes` also created on Rampart's FerretDB build, whose patch 0009
   * reads equality, range and keyset filters (with their sort and limit) through them.
   */
  servedOnEmbedded?: readonly string[];
  /** Indexes created on Rampart's FerretDB build only (what MongoDB serves otherwise). */
  embeddedOnly?: IndexDescription[];
}

export interface Database {
  client: MongoClient;
  db: Db;
  close(): Promise<void>;
}

export interface ConnectOptions {
  monitorCommands?: (e: CommandStartedEvent) => void;
  /** Most connections, hence most operations at once (default 50). */
  maxPoolSize?: number;
  /**
   * How long connecting, and a heartbeat of the driver's monitor, may take (default 5 s). The
   * embedded database is on loopback: a second is plenty, and a hung one is noticed sooner.
   */
  connectTimeoutMS?: number;
  /** Connect on the first operation rather than now (a server that is not started yet). */
  lazy?: boolean;
  /**
   * How long a connection may wait for an answer before the driver closes it and fails the
   * operation (default: none). The writer's connections have one, so that nothing waits forever.
   */
  socketTimeoutMS?: number;
}

/** The option names a connection string sets (lower-cased): `mongodb://h1,h2/db?w=majority&maxPoolSize=20`. */
export function uriOptionNames(uri: string): Set<string> {
  const query = uri.includes('?') ? uri.slice(uri.indexOf('?') + 1) : '';
  return new Set(
    query
      .split('&')
      .map((pair) => (pair.split('=')[0] ?? '').trim().toLowerCase())
      .filter((name) => name !== ''),
  );
}

export async function connect(uri: string, dbName: string, opts: ConnectOptions = {}): Promise<Database> {
  // Options given in code win over the connection string's in the driver, so Rampart's defaults
  // apply only where MONGODB_URI says nothing: an operator's `maxPoolSize=200` or
  // `serverSelectionTimeoutMS=30000` (a replica set's elections) is kept.
  const given = uriOptionNames(uri);
  const defaults: Record<string, number> = {
    serverSelectionTimeoutMS: 5000,
    connectTimeoutMS: opts.connectTimeoutMS ?? 5000,
    maxPoolSize: opts.maxPoolSize ?? 50,
    // The driver checks the server every second (default 10 s), so that an outage is noticed and
    // the end of one is too (see health.ts) within about a second.
    heartbeatFrequencyMS: 1000,
    ...(opts.socketTimeoutMS !== undefined ? { socketTimeoutMS: opts.socketTimeoutMS } : {}),
  };
  // The driver is loaded here, when a connection is made: the repositories and the state layer
  // only speak its types, so that what runs without a database (the unit tests) never loads it.
  const { MongoClient } = await import('mongodb');
  const client = new MongoClient(uri, {
    ...Object.fromEntries(Object.entries(defaults).filter(([name]) => !given.has(name.toLowerCase()))),
    monitorCommands: Boolean(opts.monitorCommands),
  });
  if (opts.monitorCommands) client.on('commandStarted', opts.monitorCommands);
  if (!opts.lazy) await client.connect();
  const db = client.db(dbName);
  return { client, db, close: () => client.close() };
}

/**
 * Create every declared index that is missing, one at a time. (FerretDB 1.24 panics when one
 * `createIndexes` command names several indexes that already exist, so existing ones are skipped.)
 */
/**
 * Create the indexes `specs` name that a collection lacks. `drop` names, per collection, indexes
 * to drop first (on FerretDB: non-unique ones no read uses, see staleIndexes).
 */
export async function applyIndexes(
  db: Db,
  specs: readonly IndexSpec[],
  drop?: (collection: string, existing: { name?: unknown; unique?: unknown }[]) => string[],
): Promise<void> {
  for (const spec of specs) {
    const col = db.collection(spec.collection);
    const listed: { name?: unknown; unique?: unknown }[] = await col
      .listIndexes()
      .toArray()
      .catch(() => []);
    for (const name of drop?.(spec.collection, listed) ?? []) await col.dropIndex(name);
    const existing = new Set(listed.map((i) => String(i.name)));
    for (const index of spec.indexes) {
      if (index.name && existing.has(index.name)) continue;
      const { key, ...options } = index;
      await col.createIndex(key, options);
    }
  }
}

export const isDuplicateKey = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 11000;

export interface WriteErrorLike {
  index: number;
  error: unknown;
}

/** The most bytes of documents one `insert` command carries (a command may be at most 16 MiB). */
export const MAX_INSERT_BYTES = 8 * 1024 * 1024;

/**
 * Insert `docs`, unordered, with `insert` commands, as `insertMany` does but without the driver's
 * bulk-write machinery (its operation, batch and result objects: ~4 KB and ~2% of a verdict's CPU
 * when every flush writes a few documents). Like the driver, it splits them into commands of at
 * most MAX_INSERT_BYTES (`sizeOf`: a document's BSON size), so that large documents never make a
 * command the database must refuse, and gives a document without an `_id` one, so that a retried
 * insert finds it already there. The database's write errors, by index in `docs` (none when every
 * document was written), and the bytes sent (the sizes it split by); a command that fails throws.
 *
 * For Rampart's own embedded database: it sends no write concern or session options of its own.
 */
export async function insertCommand(
  db: Db,
  collection: string,
  docs: Document[],
  options: { comment?: string; sizeOf: (doc: Document) => number },
): Promise<{ errors: WriteErrorLike[]; bytes: number }> {
  for (const d of docs) if (d._id === undefined || d._id === null) d._id = new ObjectId();
  const errors: WriteErrorLike[] = [];
  let total = 0;
  for (let from = 0; from < docs.length;) {
    let to = from;
    let bytes = 0;
    while (to < docs.length) {
      const size = options.sizeOf(docs[to] as Document);
      if (to > from && bytes + size > MAX_INSERT_BYTES) break;
      bytes += size;
      to++;
    }
    total += bytes;
    const command: Document = {
      insert: collection,
      documents: from === 0 && to === docs.length ? docs : docs.slice(from, to),
      ordered: false,
    };
    if (options.comment !== undefined) command.comment = options.comment;
    const reply = await db.command(command);
    const listed: unknown = reply.writeErrors;
    if (Array.isArray(listed))
      for (const w of listed as ListedWriteError[]) errors.push(writeErrorOf(w, from));
    from = to;
  }
  return { errors, bytes: total };
}

/** A write error as a server reply or the driver's bulk write error lists it. */
type ListedWriteError = { index?: unknown; err?: unknown; code?: unknown; errmsg?: unknown };

/** `w`, its index counted from `offset` (where its command's documents start). */
const writeErrorOf = (w: ListedWriteError, offset = 0): WriteErrorLike => ({
  index: offset + (typeof w.index === 'number' ? w.index : 0),
  error: w.err ?? { code: w.code, message: String(w.errmsg ?? 'write error') },
});

/** The write errors of a bulk write error (null when the error is not one). */
export function writeErrors(err: unknown): WriteErrorLike[] | null {
  const e = err as { writeErrors?: unknown; name?: unknown } | null;
  if (!e || typeof e !== 'object' || e.name !== 'MongoBulkWriteError') return null;
  const list = Array.isArray(e.writeErrors) ? e.writeErrors : e.writeErrors ? [e.writeErrors] : [];
  return list.map((w: ListedWriteError) => writeErrorOf(w));
}

/** The write error of an ordered bulk write: the first, by index (null when the error is not one). */
export function firstWriteError(err: unknown): WriteErrorLike | null {
  const list = writeErrors(err);
  if (!list || list.length === 0) return null;
  return list.reduce((a, b) => (b.index < a.index ? b : a));
}

/** Delete the documents of a collection whose `expiresAt` has passed (FerretDB 1.24 has no TTL indexes). */
export async function sweepExpired(db: Db, collection: string, now: Date): Promise<number> {
  return (await db.collection(collection).deleteMany({ expiresAt: { $lt: now } })).deletedCount;
}

/**
 * Replace a versioned document (`{_id, version, …}`) only if the stored one is still at
 * `expectedVersion`; version 0 means it must not exist yet. False when another writer got there
 * first (the caller reads again and retries): optimistic concurrency without transactions.
 */
export async function putVersioned<T extends { _id: string; version: number }>(
  col: Collection<T>,
  doc: T,
  expectedVersion: number,
): Promise<boolean> {
  if (expectedVersion === 0) {
    try {
      await col.insertOne(doc as OptionalUnlessRequiredId<T>);
      return true;
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
  }
  const r = await col.replaceOne(
    { _id: doc._id, version: expectedVersion } as Filter<T>,
    doc as WithoutId<T>,
  );
  return r.modifiedCount === 1;
}

/**
 * The embedded database's write-ahead log stays bounded while an analyst's read is open and
 * writes go on: the primary FerretDB and the analysts' reader on the same files, as the runtime
 * starts them, and Rampart's WAL watcher (store/embedded-wal.ts) with a small limit. A cursor on
 * the reader is kept open, read a little between writes, while many times the limit is written;
 * a read that held its snapshot (FerretDB before patch 0010) kept every checkpoint back, and the
 * log grew by all of it. Sizes are asserted, never times.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { MongoClient, type Document } from 'mongodb';
import {
  embeddedSqliteDir,
  startEmbedded,
  startEmbeddedReader,
  type EmbeddedDatabase,
} from '../../src/store/embedded';
import { WalGuard, type CheckpointOutcome } from '../../src/store/embedded-wal';
import { waitFor } from '../support/wait';

const MB = 1024 * 1024;
const DB = 'rampart_test_wal';
/** The watcher's limit here: small, so that a few seconds of writes are many times it. */
const LIMIT = 8 * MB;
/** What the test writes while the read is open: twelve times the limit. */
const WRITTEN = 12 * LIMIT;

let dir: string;
let primary: EmbeddedDatabase;
let reader: EmbeddedDatabase;
let writer: MongoClient;
let analyst: MongoClient;
let guard: WalGuard;
const checkpoints: Record<CheckpointOutcome, number> = { truncated: 0, busy: 0, failed: 0 };

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'rampart-wal-'));
  primary = await startEmbedded(dir, { supervise: false });
  writer = await new MongoClient(primary.uri, { serverSelectionTimeoutMS: 10_000 }).connect();
  // Documents for the analyst's cursor to read, in the collection the writes then rewrite.
  const docs = writer.db(DB).collection<Document>('docs');
  for (let i = 0; i < 2000; i += 200)
    await docs.insertMany(Array.from({ length: 200 }, (_, k) => doc(i + k)));
  reader = await startEmbeddedReader(dir, { nice: 10, supervise: false });
  analyst = await new MongoClient(reader.uri, { serverSelectionTimeoutMS: 10_000 }).connect();
  guard = new WalGuard({
    db: writer.db(DB),
    dir: embeddedSqliteDir(dir),
    dbName: DB,
    collection: 'docs',
    limitBytes: LIMIT,
    everyMs: 100,
    onCheckpoint: (o) => checkpoints[o]++,
  });
  guard.start();
});

afterAll(async () => {
  await guard?.stop();
  await analyst?.close();
  await writer?.close();
  await reader?.stop();
  await primary?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A ~4 KB document (rewritten whole by the writes, as the state layer writes users). */
function doc(i: number): Document {
  return { _id: `d${i}`, n: i, blob: randomBytes(2048).toString('hex') };
}

const walBytes = () => {
  try {
    return statSync(path.join(embeddedSqliteDir(dir), `${DB}.sqlite-wal`)).size;
  } catch {
    return 0;
  }
};

it('keeps the write-ahead log bounded while an analyst cursor stays open and writes go on', async () => {
  const docs = writer.db(DB).collection<Document>('docs');
  // The analyst's read: a cursor on the reader, two documents per batch, kept open throughout.
  const cursor = analyst.db(DB).collection<Document>('docs').find({}, { batchSize: 2 });
  let read = 0;
  let peak = 0;
  let written = 0;
  try {
    expect(await cursor.next()).not.toBeNull();
    read++;
    for (let round = 0; written < WRITTEN; round++) {
      // 100 documents replaced whole (~400 KB) per round, as the state layer's flushes write them.
      const batch = Array.from({ length: 100 }, (_, k) => doc((round * 100 + k) % 2000));
      await docs.insertMany(batch, { ordered: false, comment: 'rampart:upsert' });
      written += batch.reduce((n, d) => n + JSON.stringify(d).length, 0);
      // The read goes on: one more document (a getMore every other one).
      if (await cursor.hasNext()) {
        await cursor.next();
        read++;
      }
      peak = Math.max(peak, walBytes());
      // Past this the assertion below fails: no need to write the rest.
      if (peak >= WRITTEN / 2) break;
    }
    // The cursor was open across all of it, and still is.
    expect(read).toBeGreaterThan(1);
    expect(cursor.closed).toBe(false);
    expect(cursor.id?.isZero() ?? true).toBe(false);
    // Bounded: the log never held more than half of what was written (it held all of it, and
    // more, when the open read kept checkpoints back)...
    expect(peak).toBeLessThan(WRITTEN / 2);
    expect(written).toBeGreaterThanOrEqual(WRITTEN);
    // ...and with the read still open, the watcher brings it back under its limit.
    await waitFor(() => walBytes() <= LIMIT, {
      what: `the WAL back under ${LIMIT} bytes`,
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    expect(walBytes()).toBeLessThanOrEqual(LIMIT);
    expect(checkpoints.truncated).toBeGreaterThan(0);
    expect(guard.sizes()?.databaseBytes).toBeGreaterThan(0);
  } finally {
    await cursor.close();
  }
  // Generous: on a busy machine the writes alone may take a while.
}, 180_000);

/**
 * The embedded FerretDB: it starts on loopback with its files in the data directory, stops on
 * request, and a FerretDB left running by a killed Rampart is stopped before a new one starts.
 * The analysts' reader: a second FerretDB on the same files, at a lower priority, that reads what
 * the primary writes, also in collections created after it started.
 */
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import {
  embeddedInfoFile,
  ferretdbCores,
  startEmbedded,
  startEmbeddedReader,
} from '../../src/store/embedded';
import { alive } from '../support/process';

it('starts, serves, and replaces an orphan left by a killed owner', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rampart-embedded-'));
  // Unsupervised: the Rampart that started it is about to be "killed", so nothing may restart it.
  const first = await startEmbedded(dir, { supervise: false });
  // Rampart reaches it through a Unix domain socket in its owner-only directory (loopback TCP
  // where the path is too long for a socket address, as a long temporary directory can make it).
  const socket = path.join(dir, 'ferretdb', 'ferretdb.sock');
  if (Buffer.byteLength(socket) < 100) expect(first.uri).toBe(`mongodb://${encodeURIComponent(socket)}/`);
  else expect(first.uri).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+\/$/);
  const orphanPid = first.pid as number;
  expect(orphanPid).toEqual(expect.any(Number));
  // As if the Rampart that started it had been killed: its pid is gone, FerretDB is not.
  writeFileSync(
    embeddedInfoFile(dir),
    JSON.stringify({ uri: first.uri, pid: 2 ** 22 + 1, ferretdbPid: orphanPid }),
  );
  const second = await startEmbedded(dir);
  try {
    expect(alive(orphanPid)).toBe(false);
    const client = new MongoClient(second.uri, { serverSelectionTimeoutMS: 5000 });
    await client.connect();
    const col = client.db('rampart_test_embedded').collection<{ _id: string; n: number }>('probe');
    await col.insertOne({ _id: 'x', n: 1 });
    expect(await col.findOne({ _id: 'x' })).toEqual({ _id: 'x', n: 1 });
    await client.close();
  } finally {
    await second.stop();
  }
  expect(alive(second.pid as number)).toBe(false);
});

it('keeps its files readable by this user only', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rampart-embedded-'));
  chmodSync(dir, 0o755);
  // A file left by an older start, world-readable.
  mkdirSync(path.join(dir, 'ferretdb'), { mode: 0o755 });
  writeFileSync(path.join(dir, 'ferretdb', 'leftover.txt'), 'x', { mode: 0o644 });
  const db = await startEmbedded(dir, { supervise: false });
  const client = new MongoClient(db.uri, { serverSelectionTimeoutMS: 5000 });
  try {
    const others = (p: string) => statSync(p).mode & 0o077;
    expect(others(dir)).toBe(0);
    expect(others(path.join(dir, 'ferretdb'))).toBe(0);
    expect(others(path.join(dir, 'ferretdb', 'leftover.txt'))).toBe(0);
    expect(others(path.join(dir, 'ferretdb.log'))).toBe(0);
    // The SQLite files FerretDB creates while it runs (a database, its WAL and shared memory).
    await client
      .db('rampart_test_modes')
      .collection('events')
      .insertOne({ _id: 'e1', email: 'ada@example.com' } as never);
    const created = readdirSync(path.join(dir, 'ferretdb')).filter((f) => f !== 'leftover.txt');
    expect(created.some((f) => f.endsWith('.sqlite'))).toBe(true);
    expect(created.map((f) => [f, others(path.join(dir, 'ferretdb', f))])).toEqual(
      created.map((f) => [f, 0]),
    );
  } finally {
    await client.close();
    await db.stop();
  }
});

it("runs the analysts' reader on the same files at a lower priority, reading collections created after it started", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rampart-embedded-'));
  const primary = await startEmbedded(dir, { supervise: false });
  const writer = new MongoClient(primary.uri, { serverSelectionTimeoutMS: 5000 });
  let reading: MongoClient | null = null;
  let reader: Awaited<ReturnType<typeof startEmbeddedReader>> | null = null;
  try {
    const db = writer.db('rampart_test_reader');
    // The database exists before the reader starts (the runtime starts it once the indexes are applied).
    await db.collection('events').insertOne({ _id: 'e1', n: 1 } as never);
    reader = await startEmbeddedReader(dir, { supervise: false, nice: 7, memoryMb: 96 });
    expect(getPriority(reader.pid as number)).toBe(7);
    // Its Go runtime is bounded: a soft memory limit and the default collector pace (the
    // primary's GOGC=200 let a dashboard's scans grow it to 907 MB in a 12-minute soak).
    const environ = readFileSync(`/proc/${reader.pid}/environ`, 'utf8').split('\0');
    expect(environ).toEqual(expect.arrayContaining(['GOMEMLIMIT=96MiB', 'GOGC=100']));
    expect(readFileSync(`/proc/${primary.pid}/environ`, 'utf8').split('\0')).not.toContain(
      'GOMEMLIMIT=96MiB',
    );
    // Both leave Rampart's event loop a core, unless the caller's environment says otherwise.
    const cores = `GOMAXPROCS=${process.env.GOMAXPROCS ?? ferretdbCores()}`;
    expect(environ).toContain(cores);
    expect(readFileSync(`/proc/${primary.pid}/environ`, 'utf8').split('\0')).toContain(cores);
    reading = new MongoClient(reader.uri, { serverSelectionTimeoutMS: 5000 });
    const seen = reading.db('rampart_test_reader');
    expect(await seen.collection('events').find({}).toArray()).toEqual([{ _id: 'e1', n: 1 }]);
    // Written by the primary after the reader started: a new document, and a new collection.
    await db.collection('events').insertOne({ _id: 'e2', n: 2 } as never);
    await db.collection('privacy_jobs').insertOne({ _id: 'j1', status: 'pending' } as never);
    expect(await seen.collection('events').countDocuments({})).toBe(2);
    expect(await seen.collection('privacy_jobs').find({}).toArray()).toEqual([
      { _id: 'j1', status: 'pending' },
    ]);
  } finally {
    await reading?.close();
    await writer.close();
    await reader?.stop();
    await primary.stop();
  }
});

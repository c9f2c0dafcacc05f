/**
 * The embedded FerretDB: it starts on loopback with its files in the data directory, stops on
 * request, and a FerretDB left running by a killed Rampart is stopped before a new one starts.
 */
import { chmodSync, mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { embeddedInfoFile, startEmbedded } from '../../src/store/embedded';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it('starts, serves, and replaces an orphan left by a killed owner', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rampart-embedded-'));
  // Unsupervised: the Rampart that started it is about to be "killed", so nothing may restart it.
  const first = await startEmbedded(dir, { supervise: false });
  expect(first.uri).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+\/$/);
  const orphanPid = first.pid as number;
  expect(orphanPid).toEqual(expect.any(Number));
  // As if the Rampart that started it had been killed: its pid is gone, FerretDB is not.
  writeFileSync(embeddedInfoFile(dir), JSON.stringify({ uri: first.uri, pid: 2 ** 22 + 1, ferretdbPid: orphanPid }));
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
  try {
    const others = (p: string) => statSync(p).mode & 0o077;
    expect(others(dir)).toBe(0);
    expect(others(path.join(dir, 'ferretdb'))).toBe(0);
    expect(others(path.join(dir, 'ferretdb', 'leftover.txt'))).toBe(0);
    expect(others(path.join(dir, 'ferretdb.log'))).toBe(0);
  } finally {
    await db.stop();
  }
});

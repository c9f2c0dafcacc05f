/**
 * The health probe on a loaded machine (store/health.ts): with busy loops taking every core, the
 * embedded database answers its pings late, sometimes very late; the probe judges the silence
 * over a window of pings and never takes that database for a hung one. Stopped (SIGSTOP), it is
 * taken as hung within the bar's cap, and as answering again once it resumes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect, type Database } from '../../src/store/database';
import { startEmbedded, type EmbeddedDatabase } from '../../src/store/embedded';
import { watchDatabase, type DatabaseHealth } from '../../src/store/health';
import { delay, waitFor } from '../support/wait';

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;

embeddedOnly('the health probe', () => {
  let dir: string;
  let ferret: EmbeddedDatabase;
  let database: Database;
  let health: DatabaseHealth;
  const changes: (string | null)[] = [];
  const pings: number[] = [];
  let hogs: ChildProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.resolve(__dirname, '..', '..', '.data', 'probe-'));
    ferret = await startEmbedded(dir);
    database = await connect(ferret.uri, 'rampart_probe', { connectTimeoutMS: 10_000 });
    // The runtime's defaults (config.ts): a ping every 100 ms, the bar within [300 ms, 5 s].
    health = await watchDatabase(database.client, ferret.uri, 'rampart_probe', {
      probeEveryMs: 100,
      stallMs: 300,
      stallMaxMs: 5000,
      onChange: (why) => changes.push(why),
      onProbe: (s) => pings.push(s * 1000),
    });
  });
  afterAll(async () => {
    for (const h of hogs) h.kill('SIGKILL');
    if (ferret?.pid) process.kill(ferret.pid, 'SIGCONT');
    await health?.close();
    await database?.close();
    await ferret?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('does not take a database slowed by a loaded machine for a hung one, and notices one that stopped', async () => {
    hogs = Array.from({ length: os.availableParallelism() + 2 }, () =>
      spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
    );
    // Writes keep the database busy too, as a service's flushes do.
    const col = database.db.collection('load');
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++)
        await col
          .insertMany(Array.from({ length: 200 }, (_, j) => ({ i, j, pad: 'x'.repeat(500) })))
          .catch(() => undefined);
    })();
    await delay(15_000);
    writing = false;
    await writer;
    for (const h of hogs) h.kill('SIGKILL');
    hogs = [];
    process.stdout.write(
      `health probe under load: ${pings.length} pings, slowest ${Math.max(...pings).toFixed(0)} ms, changes ${JSON.stringify(changes)}\n`,
    );
    expect(pings.length).toBeGreaterThan(10);
    expect(changes).toEqual([]);
    expect(health.down()).toBeNull();

    process.kill(ferret.pid as number, 'SIGSTOP');
    try {
      await waitFor(() => health.down(), {
        what: 'the stopped database to be taken as hung',
        timeoutMs: 30_000,
      });
      expect(health.down()).toMatch(/has not answered for \d+ ms/);
    } finally {
      process.kill(ferret.pid as number, 'SIGCONT');
    }
    await waitFor(() => health.down() === null, {
      what: 'the database to be taken as answering again',
      timeoutMs: 30_000,
    });
  });
});

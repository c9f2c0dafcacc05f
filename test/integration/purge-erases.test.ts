/**
 * A purge erases: Rampart runs as `npm start` runs it (its own embedded database in its data
 * directory), two users send events (each one rewrites the user's documents, so SQLite holds
 * many old copies on free space and in the write-ahead log), and anonymous events (no user id)
 * name each by phone or user name only, as a filter call carries them; one user is purged over
 * REST, and the raw files of the data directory (database, WAL, shared memory) are read byte by
 * byte: nothing of the purged user (id, e-mail, phone, name, user name) is left, while the other
 * user's data is there.
 * The files are read while the service runs, then again after it stopped (SQLite's final
 * checkpoint).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/app/logger';
import { run, type Running } from '../../src/app/runtime';
import { call } from '../support/app';

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;
const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36';

/** Every regular file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    const st = statSync(p);
    return st.isDirectory() ? filesUnder(p) : st.isFile() ? [p] : [];
  });
}

/** How many times each needle occurs in the raw bytes of the SQLite files under `dir`. */
function occurrences(dir: string, needles: Record<string, string>): Record<string, number> {
  const found: Record<string, number> = {};
  for (const file of filesUnder(dir).filter((f) => /\.sqlite(-wal|-shm)?$/.test(f))) {
    const bytes = readFileSync(file);
    for (const [what, needle] of Object.entries(needles)) {
      const n = Buffer.from(needle, 'utf8');
      for (let at = bytes.indexOf(n); at !== -1; at = bytes.indexOf(n, at + 1))
        found[what] = (found[what] ?? 0) + 1;
    }
  }
  return found;
}

interface Person {
  id: string;
  email: string;
  phone: string;
  name: string;
  username: string;
}

const person = (tag: string): Person => {
  const r = randomBytes(5).toString('hex');
  return {
    id: `${tag}-${r}`,
    email: `${tag}.${r}@example.org`,
    phone: `+4477${parseInt(r.slice(0, 8), 16).toString().padStart(9, '0').slice(0, 9)}`,
    name: `${tag} Q${r}`,
    username: `${tag}_u${r}`,
  };
};

embeddedOnly('purging a user on the embedded database', () => {
  let dir: string;
  let running: Running | null = null;
  const secret = `sk_purge_${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    dir = mkdtempSync(path.resolve(__dirname, '..', '..', '.data', 'purge-'));
    const config = loadConfig({
      RAMPART_DATA_DIR: dir,
      RAMPART_DB_NAME: 'rampart',
      RAMPART_HTTP_PORT: '0',
      RAMPART_GRPC_PORT: '0',
      RAMPART_API_SECRET: secret,
      RAMPART_RATE_LIMIT: '1000000',
      // Not what is tested here: nothing is refused for a busy machine's slow event loop.
      RAMPART_MAX_LOOP_DELAY_MS: '0',
      RAMPART_LOG_LEVEL: 'silent',
    });
    running = await run(config, createLogger('silent'));
  });

  afterAll(async () => {
    await running?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves none of the user in the raw database files, and keeps the others', async () => {
    const app = { baseUrl: running!.httpUrl, secret };
    const victim = person('victim');
    const keeper = person('keeper');
    for (const p of [victim, keeper]) {
      const user = { id: p.id, email: p.email, phone: p.phone, name: p.name, username: p.username };
      for (let i = 0; i < 12; i++) {
        // Each login rewrites the user's documents (devices, profile, counters) a little differently.
        const context = {
          ip: `81.2.69.${10 + i}`,
          headers: { 'User-Agent': UA, 'Accept-Language': `en-GB,en;q=0.${(i % 9) + 1}` },
        };
        const event = i % 3 === 2 ? '$login.failed' : '$login';
        const risk = await call(app, 'POST', '/v1/risk', {
          event,
          status: i % 3 === 2 ? '$failed' : '$succeeded',
          user,
          context,
          request_token: `test|device:d${i % 4}`,
        });
        expect(risk.status).toBe(201);
      }
      expect(
        (
          await call(app, 'POST', '/v1/track', {
            event: '$profile_update',
            user_id: p.id,
            user_traits: { email: p.email, phone: p.phone, name: p.name },
            context: { ip: '81.2.69.9', headers: { 'User-Agent': UA } },
          })
        ).status,
      ).toBe(204);
      // Anonymous events: a form that submitted only the phone, or only the user name.
      const context = { ip: '81.2.69.8', headers: { 'User-Agent': UA } };
      expect(
        (
          await call(app, 'POST', '/v1/filter', {
            type: '$login',
            status: '$failed',
            params: { phone: p.phone },
            context,
          })
        ).status,
      ).toBe(201);
      expect(
        (
          await call(app, 'POST', '/v1/filter', {
            type: '$login',
            status: '$failed',
            params: { username: p.username },
            context,
          })
        ).status,
      ).toBe(201);
    }

    const purged = await call(app, 'DELETE', `/v1/privacy/users/${encodeURIComponent(victim.id)}`);
    expect(purged.status).toBeLessThan(300);

    const needles = (p: Person, tag: string) => ({
      [`${tag} id`]: p.id,
      [`${tag} e-mail`]: p.email,
      [`${tag} phone`]: p.phone,
      [`${tag} name`]: p.name,
      [`${tag} user name`]: p.username,
    });
    // While the service runs: the database file and its write-ahead log as they are on disk.
    const live = occurrences(dir, { ...needles(victim, 'victim'), ...needles(keeper, 'keeper') });
    expect(Object.keys(live).filter((k) => k.startsWith('victim'))).toEqual([]);
    expect(live['keeper id']).toBeGreaterThan(0);
    expect(live['keeper e-mail']).toBeGreaterThan(0);
    expect(live['keeper phone']).toBeGreaterThan(0);
    expect(live['keeper user name']).toBeGreaterThan(0);

    // After the stop (SQLite's last checkpoint folds the WAL into the database file).
    await running!.stop();
    running = null;
    const after = occurrences(dir, { ...needles(victim, 'victim'), ...needles(keeper, 'keeper') });
    expect(Object.keys(after).filter((k) => k.startsWith('victim'))).toEqual([]);
    expect(after['keeper id']).toBeGreaterThan(0);
  });
});

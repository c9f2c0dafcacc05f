/**
 * `npx rampart …` as a person types it (bin/rampart.js, spawned): help and mistakes in the command
 * line are answered at once from the command line alone, before the configuration is read or a
 * database is started (the data directory is never created, a broken variable is not read); a
 * command that is not one exits non-zero naming what is wrong, with the usage; a real command
 * still works on the service's database.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildServices } from '../../src/app/build';
import { createLogger } from '../../src/app/logger';
import { testDatabase, type TestDatabase } from '../support/db';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'rampart.js');

let scratch: string;
/** A data directory that does not exist: the embedded database would be started (and create it) there. */
let dataDir: string;

beforeAll(() => {
  // bin/rampart.js runs what was built: build first when a source changed, as `npm start` does.
  expect(
    spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build.js'), '--if-stale'], {
      cwd: ROOT,
      stdio: 'ignore',
    }).status,
  ).toBe(0);
  scratch = mkdtempSync(path.join(tmpdir(), 'rampart-cli-'));
  dataDir = path.join(scratch, 'data');
}, 300_000);
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run the CLI; without MONGODB_URI unless given, so that a command would start the embedded database in `dataDir`. */
function rampart(args: string[], env: NodeJS.ProcessEnv = {}, stdin?: string): Promise<Run> {
  const base: NodeJS.ProcessEnv = { ...process.env, RAMPART_DATA_DIR: dataDir, RAMPART_LOG_LEVEL: 'silent' };
  delete base.MONGODB_URI;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { ...base, ...env },
      stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (stdin !== undefined) child.stdin?.end(stdin);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('help', () => {
  it.each([
    [[]],
    [['--help']],
    [['help']],
    [['-h']],
    [['env', '--help']],
    [['secret', 'add', 'sandbox', '--help']],
  ])('rampart %j prints the usage and exits 0, touching no database', async (args) => {
    // A variable that would stop start-up is not even read.
    const r = await rampart(args, { RAMPART_HTTP_PORT: 'eighty' });
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toMatch(/^usage: rampart <command> \[arguments\]/);
    expect(r.stdout).toContain('env create <name> [--production]');
    expect(existsSync(dataDir)).toBe(false);
  });

  it('describes each command in its own words: the apps are not the origins', async () => {
    const r = await rampart(['--help']);
    const helpOf = (command: string) => {
      const lines = r.stdout.split('\n');
      const at = lines.findIndex((l) => l.trimStart().startsWith(command));
      const text: string[] = [];
      for (let i = at + 1; i < lines.length && /^ {20,}\S/.test(lines[i] as string); i++)
        text.push((lines[i] as string).trim());
      return text.join(' ');
    };
    expect(helpOf('env set-origins')).toMatch(/origins whose pages/);
    expect(helpOf('env set-apps')).toMatch(/native apps \(bundle or package ids/);
  });
});

describe('a command line that is not a command', () => {
  it.each([
    [['bogus'], 'unknown command "bogus"'],
    [['env', 'bogus'], 'unknown command "env bogus"'],
    [['env'], 'env needs a command'],
    [['env', 'create'], 'env create needs <name>'],
    [['env', 'create', 'prod', '--bogus'], 'unknown option --bogus for env create'],
    [['env', 'create', 'prod', '--production=yes'], '--production takes no value'],
    [['env', 'list', 'extra'], 'env list takes no arguments, not "extra"'],
    [['env', 'set-webhook', 'sandbox'], 'env set-webhook needs <url|none>'],
    [['secret', 'add', 'sandbox', '--label'], '--label needs a value'],
    [['secret', 'add', 'sandbox', '--lable', 'ci'], 'unknown option --lable for secret add'],
    [['secret', 'revoke', 'sandbox'], 'secret revoke needs <secret|hash>'],
    [['env', 'set-retention', 'sandbox', '-x'], 'unknown option -x for env set-retention'],
    [['lists', 'export', 'sandbox', 'ips', '--format', 'xml'], '--format takes csv or json, not "xml"'],
    [['lists', 'import', 'sandbox', 'ips'], 'lists import needs <file|->'],
    [
      ['lists', 'import', 'sandbox', 'ips', 'a.csv', '--mode=replace'],
      'unknown option --mode for lists import',
    ],
  ])('rampart %j exits 64 saying "%s", with the usage, touching no database', async (args, message) => {
    const r = await rampart(args);
    expect(r.code).toBe(64);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`rampart: ${message}`);
    expect(r.stderr).toContain('usage: rampart <command> [arguments]');
    expect(existsSync(dataDir)).toBe(false);
  });
});

describe('a command', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await testDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it("runs on the service's database, and --label takes its value in either form", async () => {
    const env = {
      MONGODB_URI: database.uri,
      RAMPART_DB_NAME: database.name,
      RAMPART_MASTER_KEY: 'ab'.repeat(32),
    };
    const created = await rampart(['env', 'create', 'cli-prod', '--production'], env);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout).toMatch(/^created environment cli-prod \(/);
    expect((await rampart(['secret', 'add', 'cli-prod', '--label=ci'], env)).code).toBe(0);
    expect((await rampart(['analyst-key', 'add', 'cli-prod', '--label', 'dashboards'], env)).code).toBe(0);
    const secrets = await rampart(['secret', 'list', 'cli-prod'], env);
    expect(secrets.code).toBe(0);
    expect(secrets.stdout).toMatch(/\tci\t/);
    expect(secrets.stdout).toMatch(/\tdashboards\t/);
    const listed = await rampart(['env', 'list'], env);
    expect(listed.stdout).toMatch(/^cli-prod\t.*\tproduction\t/m);
    // A mistake the database reveals, or a value the core refuses (a negative number is a value,
    // not an option), is an error of the command (1), not of its line.
    const missing = await rampart(['env', 'disable', 'no-such-env'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^rampart: /);
    expect(missing.stderr).not.toContain('usage:');
    const negative = await rampart(['env', 'set-retention', 'cli-prod', '-1'], env);
    expect(negative.code).toBe(1);
    expect(negative.stderr).toMatch(/^rampart: .*retentionDays/);
  }, 120_000);

  it('imports a list from standard input and exports it to standard output', async () => {
    const env = {
      MONGODB_URI: database.uri,
      RAMPART_DB_NAME: database.name,
      RAMPART_MASTER_KEY: 'ab'.repeat(32),
    };
    expect((await rampart(['env', 'create', 'cli-lists'], env)).code).toBe(0);
    // No command makes a list: the service's own use case does, on the same database.
    const built = await buildServices({
      db: database.db,
      log: createLogger('silent'),
      masterKey: env.RAMPART_MASTER_KEY,
      authCacheMs: 0,
      rateLimitPerSecond: 1000,
      publicUrl: 'http://127.0.0.1',
      smtpUrl: undefined,
      mailFrom: 'rampart@localhost',
    });
    try {
      const { services } = built;
      const cliEnv = await services.environments.byName('cli-lists');
      await services.lists.create(
        cliEnv.id,
        { type: '$api_secret', identifier: 'test' },
        {
          name: 'blocked ips',
          color: '$red',
          primaryField: 'ip',
        },
      );
    } finally {
      await built.stop();
    }

    const imported = await rampart(
      ['lists', 'import', 'cli-lists', 'blocked ips', '-'],
      env,
      'value,comment\n203.0.113.7,incident 42\n198.51.100.0/24,"vpn, shared"\n',
    );
    expect(imported).toMatchObject({ code: 0, stderr: '' });
    expect(imported.stdout).toBe('blocked ips: 2 rows imported: 2 items created, 0 updated\n');
    const listed = await rampart(['lists', 'list', 'cli-lists'], env);
    expect(listed.stdout).toMatch(/^[0-9a-f-]{36}\tblocked ips\tip\titems=2\n$/);

    const exported = await rampart(['lists', 'export', 'cli-lists', 'blocked ips'], env);
    expect(exported).toMatchObject({ code: 0, stderr: '' });
    const lines = exported.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(
      'id,value,secondary_value,comment,expires_at,archived,archived_at,author_type,author_identifier,created_at',
    );
    expect(
      lines
        .slice(1)
        .map((l) => l.split(',')[1])
        .sort(),
    ).toEqual(['198.51.100.0/24', '203.0.113.7']);
    expect(exported.stdout).toContain(',"vpn, shared",');

    const json = await rampart(['lists', 'export', 'cli-lists', 'blocked ips', '--format', 'json'], env);
    expect((JSON.parse(json.stdout) as { value: string }[]).map((i) => i.value).sort()).toEqual([
      '198.51.100.0/24',
      '203.0.113.7',
    ]);

    // A bad file is refused whole, each bad line named, exit 1 without the usage.
    const bad = await rampart(
      ['lists', 'import', 'cli-lists', 'blocked ips', '-', '--replace'],
      env,
      'value\nnot-an-address\n',
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^rampart: line 2: /);
    expect(bad.stderr).not.toContain('usage:');
    const missing = await rampart(['lists', 'export', 'cli-lists', 'no such list'], env);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toBe('rampart: cli-lists has no list with the id or name "no such list"\n');
  }, 120_000);
});

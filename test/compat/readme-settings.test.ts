/**
 * The settings README.md and docs/castle-sdks.md give for pointing Castle's Python and Node SDKs at
 * Rampart, run as written: each line is read from the document (so the document and this test
 * cannot drift apart), only its `http://localhost:3000` is swapped for the test service's address,
 * and the SDK then asks for a verdict. A setting that does not work as written fails here.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { startTestApp, type TestApp } from '../support/app';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');
const PY = {
  castle6: path.join(ROOT, '.venv', 'castle6', 'bin', 'python'),
  castle7: path.join(ROOT, '.venv', 'castle7', 'bin', 'python'),
};
const DOCUMENTED_ORIGIN = 'http://localhost:3000';
const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
/** The sandbox test policy a forced allow is answered with (no other policy has its id). */
const FORCED_ALLOW = {
  action: 'allow',
  name: 'Sandbox test token (allow)',
  id: '00000000-0000-0000-0000-000000000001',
  revision: '00000000-0000-0000-0000-000000000001',
};

/** The setting of the SDK row whose first cell starts with `sdk`, in a document's table: its first code span. */
function setting(doc: string, sdk: string): string {
  const text = readFileSync(path.join(ROOT, doc), 'utf8');
  const rows = text.split('\n').filter((l) => l.startsWith(`| ${sdk} `));
  expect(rows).toHaveLength(1);
  const cell = rows[0].split(' | ')[1] ?? '';
  const code = /^`([^`]+)`/.exec(cell);
  if (!code) throw new Error(`${doc}: the ${sdk} row has no setting in code`);
  return code[1];
}

/** The setting pointed at the test service: its one documented origin swapped for the service's. */
function pointedAt(line: string, baseUrl: string): string {
  expect(line.split(DOCUMENTED_ORIGIN)).toHaveLength(2);
  return line.replace(DOCUMENTED_ORIGIN, baseUrl);
}

/** The last line a program printed, as JSON (what came before is the SDK's own logging). */
async function lastJson(
  cmd: string,
  args: string[],
  env: Record<string, string>,
): Promise<Record<string, unknown>> {
  const { stdout } = await run(cmd, args, { env: { ...process.env, ...env }, timeout: 30_000 });
  return JSON.parse(stdout.trim().split('\n').pop() ?? '') as Record<string, unknown>;
}

let app: TestApp;
beforeAll(async () => {
  for (const py of Object.values(PY)) {
    if (!existsSync(py)) throw new Error(`${py} is missing: run scripts/setup-compat.sh (npm test does)`);
  }
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

describe.each([
  ['README.md', '`castle` 6.x/7.x (PyPI)'],
  ['docs/castle-sdks.md', 'Python'],
])("%s's Python setting", (doc, sdk) => {
  it.each(Object.keys(PY) as (keyof typeof PY)[])(
    'configures %s: risk answers from Rampart, not the failover',
    async (version) => {
      const line = pointedAt(setting(doc, sdk), app.baseUrl);
      // As an application runs it: after `import castle`, with `secret` (the variable the line
      // reads) set; then one verdict through the SDK.
      const program = [
        'import json, os',
        'import castle',
        "secret = os.environ['RAMPART_SECRET']",
        line,
        'from castle.client import Client',
        `client = Client({'context': {'ip': '81.2.69.142', 'headers': {'User-Agent': ${JSON.stringify(UA)}}}})`,
        "print(json.dumps(client.risk({'event': '$login', 'status': '$succeeded', 'user': {'id': os.environ['RAMPART_USER_ID']}, 'request_token': 'test|device:chrome_on_mac|policy.action:allow'})))",
      ].join('\n');
      const r = await lastJson(PY[version], ['-c', program], {
        RAMPART_SECRET: app.secret,
        RAMPART_USER_ID: `readme-${version}-${doc.length}`,
      });
      expect(r.failover).toBe(false);
      expect(r.policy).toEqual(FORCED_ALLOW);
    },
  );
});

describe.each([
  ['README.md', '`@castleio/sdk` (npm)'],
  ['docs/castle-sdks.md', 'Node'],
])("%s's Node setting", (doc, sdk) => {
  it('configures @castleio/sdk: authenticate answers from Rampart; the SDK has no risk or filter, as the row says', async () => {
    const expression = pointedAt(setting(doc, sdk), app.baseUrl);
    const row = readFileSync(path.join(ROOT, doc), 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`| ${sdk} `));
    expect(row).toMatch(/no `risk` or `filter`/);
    // `apiSecret` is the variable the documented expression reads.
    const program = `
      const { Castle } = require('@castleio/sdk');
      const apiSecret = process.env.RAMPART_SECRET;
      const castle = ${expression};
      castle
        .authenticate({ event: '$login.succeeded', user_id: process.env.RAMPART_USER_ID, context: { ip: '81.2.69.142', client_id: 'test|device:chrome_on_mac|policy.action:allow', headers: { 'User-Agent': ${JSON.stringify(UA)} } } })
        .then((r) => console.log(JSON.stringify({ ...r, risk: typeof castle.risk, filter: typeof castle.filter })));
    `;
    const r = await lastJson(process.execPath, ['-e', program], {
      RAMPART_SECRET: app.secret,
      RAMPART_USER_ID: `readme-node-${doc.length}`,
      NODE_NO_WARNINGS: '1',
    });
    expect(r.failover).toBeUndefined();
    expect(r.action).toBe('allow');
    expect(r.policy).toEqual(FORCED_ALLOW);
    expect({ risk: r.risk, filter: r.filter }).toEqual({ risk: 'undefined', filter: 'undefined' });
  });
});

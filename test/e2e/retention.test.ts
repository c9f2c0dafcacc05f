/**
 * Setting an environment's retention through each way in: the GraphQL mutation (an API secret
 * may, an analyst key may not, out-of-range and fractional days are refused naming the field),
 * the CLI's `env set-retention` (and `env list`), and the console's form as the page sends it: a
 * GraphQL request with the session cookie and its CSRF token (refused without the token, or from
 * an analyst's session). Each environment's retention is its own.
 */
import { runCommand } from '../../src/cli/main';
import { retentionDaysOf } from '../../src/core/retention';
import type { Environment } from '../../src/core/model';
import { startTestApp, basic, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

interface GqlAnswer {
  status: number;
  data?: any;
  errors?: {
    message: string;
    extensions?: { code?: string; fields?: { field: string; message: string }[] };
  }[];
}

async function gql(
  headers: Record<string, string>,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<GqlAnswer> {
  const res = await fetch(`${app.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, ...((await res.json()) as Omit<GqlAnswer, 'status'>) };
}
const withKey = (key: string) => ({ authorization: basic(key) });

const SET = 'mutation Set($days: Int!) { setRetentionDays(days: $days) { name retentionDays } }';
const READ = '{ environment { name retentionDays } }';

const stored = async (env: Environment) =>
  retentionDaysOf(await app.built.services.environments.require(env.id));

describe('GraphQL', () => {
  it("reads the default, and lets the API secret set its own environment's retention", async () => {
    const other = await app.newEnvironment('gql-other');
    expect((await gql(withKey(app.secret), READ)).data).toEqual({
      environment: { name: 'sandbox', retentionDays: 90 },
    });
    const r = await gql(withKey(app.secret), SET, { days: 30 });
    expect(r.errors).toBeUndefined();
    expect(r.data).toEqual({ setRetentionDays: { name: 'sandbox', retentionDays: 30 } });
    expect((await gql(withKey(app.secret), READ)).data.environment.retentionDays).toBe(30);
    // The other environment keeps its own.
    expect((await gql(withKey(other.secret), READ)).data.environment.retentionDays).toBe(90);
    expect(await stored(other.env)).toBe(90);
  });

  it('refuses an analyst key with FORBIDDEN and changes nothing', async () => {
    const before = await stored(app.env);
    const analyst = (await app.built.services.environments.addCredential(app.env.id, 'analyst', 'retention'))
      .secret;
    expect((await gql(withKey(analyst), READ)).data.environment.retentionDays).toBe(before);
    const r = await gql(withKey(analyst), SET, { days: before + 1 });
    expect(r.errors?.map((e) => e.extensions?.code)).toEqual(['FORBIDDEN']);
    expect(await stored(app.env)).toBe(before);
  });

  it('refuses 0, 3651 and negative days with BAD_USER_INPUT naming retentionDays, and a fraction as not an Int', async () => {
    const before = await stored(app.env);
    for (const days of [0, 3651, -5]) {
      const r = await gql(withKey(app.secret), SET, { days });
      expect(r.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
      expect(r.errors?.[0]?.extensions?.fields).toEqual([
        { field: 'retentionDays', message: 'must be a whole number of days from 1 to 3650' },
      ]);
    }
    const fraction = await gql(withKey(app.secret), SET, { days: 1.5 });
    expect(fraction.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    expect(await stored(app.env)).toBe(before);
    // The bounds themselves are allowed.
    expect((await gql(withKey(app.secret), SET, { days: 1 })).data.setRetentionDays.retentionDays).toBe(1);
    expect((await gql(withKey(app.secret), SET, { days: 3650 })).data.setRetentionDays.retentionDays).toBe(
      3650,
    );
  });
});

describe('the CLI', () => {
  it('env set-retention sets it, env list shows it, and bad days or names are refused', async () => {
    const { env } = await app.newEnvironment('cli-retention');
    await app.newEnvironment('cli-retention-other');
    const lines: string[] = [];
    const out = (l: string) => lines.push(l);
    await runCommand(app.built.services, ['env', 'list'], out);
    expect(lines.find((l) => l.startsWith('cli-retention\t'))).toContain('retention=90d');
    expect(await runCommand(app.built.services, ['env', 'set-retention', 'cli-retention', '30'], out)).toBe(
      0,
    );
    expect(lines.pop()).toMatch(/^cli-retention retention: 30 days/);
    expect(await stored(env)).toBe(30);
    lines.length = 0;
    await runCommand(app.built.services, ['env', 'list'], out);
    expect(lines.find((l) => l.startsWith('cli-retention\t'))).toContain('retention=30d');
    // No other environment changed.
    expect(lines.find((l) => l.startsWith('cli-retention-other\t'))).toContain('retention=90d');

    for (const bad of ['0', '3651', '30d', '1e2', '-1', '']) {
      await expect(
        runCommand(app.built.services, ['env', 'set-retention', 'cli-retention', bad], out),
      ).rejects.toThrow('retentionDays: must be a whole number of days from 1 to 3650');
    }
    await expect(
      runCommand(app.built.services, ['env', 'set-retention', 'no-such-env', '30'], out),
    ).rejects.toThrow('no environment named no-such-env');
    await expect(
      runCommand(app.built.services, ['env', 'set-retention', 'cli-retention'], out),
    ).rejects.toThrow();
    expect(await stored(env)).toBe(30);
  });
});

describe("the console's form", () => {
  async function session(key: string): Promise<{ cookie: string; csrf: string }> {
    const res = await fetch(`${app.baseUrl}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key }),
    });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { csrfToken: string };
    return { cookie: (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '', csrf: body.csrfToken };
  }

  it('saves through the session with its CSRF token, and not without it', async () => {
    const { env, secret } = await app.newEnvironment('console-retention');
    const s = await session(secret);
    const noToken = await gql({ cookie: s.cookie }, SET, { days: 45 });
    expect(noToken.status).toBe(403);
    expect(noToken.errors?.map((e) => e.extensions?.code)).toEqual(['FORBIDDEN']);
    const wrongToken = await gql({ cookie: s.cookie, 'x-rampart-csrf': `${s.csrf.slice(0, -2)}xx` }, SET, {
      days: 45,
    });
    expect(wrongToken.status).toBe(403);
    expect(await stored(env)).toBe(90);

    const saved = await gql({ cookie: s.cookie, 'x-rampart-csrf': s.csrf }, SET, { days: 45 });
    expect(saved.errors).toBeUndefined();
    expect(saved.data).toEqual({ setRetentionDays: { name: 'console-retention', retentionDays: 45 } });
    expect(await stored(env)).toBe(45);
    // What the page shows, and the field it names when the value is out of range.
    expect(
      (await gql({ cookie: s.cookie, 'x-rampart-csrf': s.csrf }, READ)).data.environment.retentionDays,
    ).toBe(45);
    const bad = await gql({ cookie: s.cookie, 'x-rampart-csrf': s.csrf }, SET, { days: 0 });
    expect(bad.errors?.[0]?.extensions?.fields?.map((f) => f.field)).toEqual(['retentionDays']);
  });

  it("is refused to an analyst's session", async () => {
    const { env } = await app.newEnvironment('console-retention-analyst');
    const analyst = (await app.built.services.environments.addCredential(env.id, 'analyst', 'console'))
      .secret;
    const s = await session(analyst);
    expect(
      (await gql({ cookie: s.cookie, 'x-rampart-csrf': s.csrf }, READ)).data.environment.retentionDays,
    ).toBe(90);
    const r = await gql({ cookie: s.cookie, 'x-rampart-csrf': s.csrf }, SET, { days: 10 });
    expect(r.errors?.map((e) => e.extensions?.code)).toEqual(['FORBIDDEN']);
    expect(await stored(env)).toBe(90);
  });
});

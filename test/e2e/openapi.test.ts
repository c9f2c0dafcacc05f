/**
 * The OpenAPI document over real HTTP: served without credentials, valid OpenAPI 3.1, covering
 * every route the REST door registers, following the validation code (event catalog, schemas);
 * and schemathesis (Python, .venv/schemathesis, scripts/setup-compat.sh) fuzzing every operation
 * of it against the running service: no 5xx, and no answer the document does not describe.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { validate } from '@readme/openapi-parser';
import { EVENTS } from '../../src/core/events/catalog';
import { startTestApp, basic, call, type TestApp } from '../support/app';
import { routesOf } from '../support/routes';

const ROOT = path.resolve(__dirname, '..', '..');
const ST = path.join(process.env.COMPAT_VENV_DIR ?? path.join(ROOT, '.venv'), 'schemathesis', 'bin', 'st');
/**
 * The run is bounded by work, never by time: a fixed budget of generated cases per operation in
 * the fuzzing phase, from a fixed seed, on top of the examples and coverage phases (which derive
 * their cases from the document: its examples, and each parameter's bounds, formats and enums,
 * valid and not). About 4,700 cases, some 100 s of CPU in all (this process's and the fuzzer's),
 * so that it ends within its timeout even with a fraction of a core.
 */
const MAX_EXAMPLES = Number(process.env.RAMPART_FUZZ_EXAMPLES ?? 25);
/** The run must reach at least this many cases in all (the coverage phase alone makes about 3,400). */
const MIN_CASES = Number(process.env.RAMPART_FUZZ_MIN_CASES ?? 3000);
/** Jest's limit for the run: far above its time on a quiet machine, for a machine that is not. */
const FUZZ_TIMEOUT_MS = 60 * 60_000;
const CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_schema_conformance',
  'response_headers_conformance',
];

type Doc = {
  openapi: string;
  paths: Record<
    string,
    Record<string, { security?: unknown[]; requestBody?: { content: Record<string, { schema: Schema }> } }>
  >;
  components: { securitySchemes: Record<string, { type: string; scheme: string }> };
};
type Schema = { properties?: Record<string, Schema>; required?: string[]; enum?: string[] };

let app: TestApp;
beforeAll(async () => {
  // The fuzzer sends thousands of requests from one address, some with a wrong secret.
  app = await startTestApp({ grpc: false, authFailuresPerMinute: 1_000_000 });
});
afterAll(async () => {
  await app?.close();
});

describe('GET /v1/openapi.json', () => {
  let doc: Doc;
  beforeAll(async () => {
    const r = await call(app, 'GET', '/v1/openapi.json', undefined, { secret: null });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    doc = r.body as Doc;
  });

  it('is a valid OpenAPI 3.1 document, served without credentials', async () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    const result = await validate(structuredClone(doc) as unknown as Parameters<typeof validate>[0]);
    expect(result.valid ? [] : result.errors).toEqual([]);
    expect(result.specification).toBe('OpenAPI');
  });

  it('a document that breaks OpenAPI 3.1 fails the same check', async () => {
    const broken = { ...doc, paths: { '/v1/risk': { post: { responses: 'none' } } } };
    expect((await validate(broken as unknown as Parameters<typeof validate>[0])).valid).toBe(false);
  });

  it('describes every route the REST door serves, and no other', () => {
    const served = new Set(
      routesOf(app.http)
        // The other doors on the listener, GraphQL and the web console, are not REST.
        .filter(
          (r) =>
            r.method !== 'HEAD' &&
            r.url !== '/graphql' &&
            r.url !== '/console' &&
            !r.url.startsWith('/console/'),
        )
        .map((r) => `${r.method.toLowerCase()} ${r.url.replace(/:(\w+)/g, '{$1}')}`),
    );
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m} ${p}`)),
    );
    expect([...served].sort()).toEqual([...documented].sort());
    expect(served.size).toBeGreaterThan(15);
  });

  it('secures the API with HTTP Basic, and leaves the document, health and the signed export link open', () => {
    expect(doc.components.securitySchemes.apiSecret).toMatchObject({ type: 'http', scheme: 'basic' });
    for (const p of [
      '/v1/risk',
      '/v1/filter',
      '/v1/authenticate',
      '/v1/track',
      '/v1/log',
      '/v1/devices/{token}',
      '/v1/privacy/users/{userId}',
    ]) {
      for (const op of Object.values(doc.paths[p] ?? {})) expect(op.security).toEqual([{ apiSecret: [] }]);
    }
    for (const p of ['/v1/openapi.json', '/healthz', '/readyz', '/v1/privacy/exports/{jobId}'])
      expect(doc.paths[p]?.get?.security).toEqual([]);
  });

  it("says why the clients' endpoints refuse: the publishable key, each 403 reason, the client rate limit's setting", () => {
    const responses = (p: string) =>
      (doc.paths[p]?.post as unknown as { responses: Record<string, { description: string }> }).responses;
    for (const p of ['/v1/client/token', '/v1/client/challenge', '/v1/client/events']) {
      const r = responses(p);
      expect([p, r['401']?.description]).toEqual([p, expect.stringContaining('publishable key')]);
      expect(r['401']?.description).not.toMatch(/API secret is missing/);
      expect(r['429']?.description).toContain('RAMPART_CLIENT_RATE_LIMIT');
      expect(r['403']?.description).toContain('origin_not_allowed');
    }
    expect(responses('/v1/client/token')['403']?.description).toContain('app_not_allowed');
    expect(responses('/v1/client/token')['403']?.description).toContain('no_apps_listed');
    expect(responses('/v1/risk')['403']?.description).toContain('environment_disabled');
  });

  it('takes its request bodies from the validation code: the event catalog and the endpoint requirements', () => {
    const body = (p: string) =>
      doc.paths[p]?.post?.requestBody?.content['application/json']?.schema as Schema;
    const risk = body('/v1/risk');
    expect(risk.properties?.event?.enum?.sort()).toEqual(
      EVENTS.filter((e) => e.endpoints.includes('risk'))
        .map((e) => e.name)
        .sort(),
    );
    expect(body('/v1/authenticate').properties?.event?.enum).toContain('$login.succeeded');
    expect(body('/v1/track').properties?.event?.enum).toContain('$review.escalated');
    expect(risk.required).toEqual(expect.arrayContaining(['user', 'context']));
    expect(risk.properties?.context?.required).toEqual(['ip', 'headers']);
    expect(risk.properties?.user?.required).toEqual(['id']);
    expect(body('/v1/track').required ?? []).toEqual([]);
    expect(risk.properties?.user_id).toMatchObject({ type: 'string', maxLength: 256 });
  });
});

/** Runs schemathesis against the running service; resolves with its exit code and output. */
function schemathesis(cwd: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    // Asynchronous: the service answers from this same process. Its caches go to `cwd`, not the repo.
    const child = spawn(ST, args, { cwd, env: { ...process.env, NO_COLOR: '1', SCHEMATHESIS_HOOKS: '' } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('schemathesis against the running service', () => {
  it(
    `answers at least ${MIN_CASES} generated cases across every operation with no 5xx and nothing the document does not describe`,
    async () => {
      expect(existsSync(ST)).toBe(true);
      const reports = mkdtempSync(path.join(tmpdir(), 'rampart-schemathesis-'));
      try {
        // The served document, from a file: from its own URL, schemathesis would leave out the
        // operation that serves it.
        const doc = (await call(app, 'GET', '/v1/openapi.json', undefined, { secret: null })).body as Doc;
        writeFileSync(path.join(reports, 'openapi.json'), JSON.stringify(doc));
        const { code, out } = await schemathesis(reports, [
          'run',
          path.join(reports, 'openapi.json'),
          '--url',
          app.baseUrl,
          // Castle's form: an empty user name (which --auth refuses) and the secret as the password.
          '--header',
          `Authorization: ${basic(app.secret)}`,
          '--checks',
          CHECKS.join(','),
          '--phases',
          'examples,coverage,fuzzing',
          '--mode',
          'all',
          '--max-examples',
          String(MAX_EXAMPLES),
          '--seed',
          process.env.RAMPART_FUZZ_SEED ?? '20240601',
          '--workers',
          '2',
          '--no-shrink',
          '--suppress-health-check',
          'all',
          // A guard against a request that hangs, with room for a loaded machine.
          '--request-timeout',
          '120',
          '--report',
          'junit',
          '--report-dir',
          reports,
        ]);
        if (process.env.RAMPART_FUZZ_LOG) writeFileSync(process.env.RAMPART_FUZZ_LOG, out);
        if (code !== 0) process.stderr.write(out);
        // "Test cases: N generated, N passed" (schemathesis 4's summary).
        const cases = Number(/Test cases:\s+(\d+) generated/.exec(out)?.[1] ?? 0);
        const junitFile = readdirSync(reports).find((f) => f.endsWith('.xml'));
        const junit = junitFile ? readFileSync(path.join(reports, junitFile), 'utf8') : '';
        const operations = new Set([...junit.matchAll(/<testcase name="([^"]+)"/g)].map((m) => m[1]));
        process.stdout.write(
          `schemathesis: ${cases} cases over ${operations.size} operations, exit ${code}\n`,
        );
        expect(out).not.toMatch(/Failures:|FAILURES|Server error/);
        expect(code).toBe(0);
        expect(cases).toBeGreaterThanOrEqual(MIN_CASES);
        const documented = Object.entries(doc.paths).flatMap(([p, ops]) =>
          Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`),
        );
        expect(documented.filter((op) => !operations.has(op))).toEqual([]);
      } finally {
        rmSync(reports, { recursive: true, force: true });
      }
    },
    FUZZ_TIMEOUT_MS,
  );
});

/**
 * CSV import and export of list items over real HTTP on a real database. A large import is a job
 * (202, followed at its Location) that writes batch by batch while counts, item pages and verdicts
 * keep answering, and ends with every item counted; the same CSV again rewrites nothing; bad input
 * (malformed, wrong types, hostile values, too many rows or bytes, not UTF-8) is refused whole
 * with each problem named and nothing written; deleting the list ends its import with nothing
 * written after. The export neutralises what a spreadsheet could run and imports back as stored.
 * (The sizes are small, so that the test is quick: a job of more than 200 items, batches of 100,
 * each followed by a pause of at least 150 ms, so that its progress can be seen on any machine.)
 */
import { startTestApp, call, basic, type TestApp } from '../support/app';
import { waitFor } from '../support/wait';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({
    grpc: false,
    listImports: { syncItems: 200, batch: 100, minPauseMs: 150, maxRows: 3000 },
  });
});
afterAll(async () => {
  await app?.close();
});

let n = 0;
const newList = async (primary_field: string) => {
  const r = await call(app, 'POST', '/v1/lists', {
    name: `import list ${++n}`,
    color: '$red',
    primary_field,
  });
  expect(r.status).toBe(201);
  return r.body as { id: string };
};
/** A JSON answer, read by each test as it expects (as `call` answers). */
type Answer = { status: number; headers: Headers; body: any };
const postCsv = (
  listId: string,
  text: string | Uint8Array,
  headers: Record<string, string> = {},
): Promise<Answer> =>
  fetch(`${app.baseUrl}/v1/lists/${listId}/items/import`, {
    method: 'POST',
    headers: { authorization: basic(app.secret), 'content-type': 'text/csv', ...headers },
    body: text,
  }).then(async (r) => ({ status: r.status, headers: r.headers, body: await r.json() }));
const ipCsv = (n: number, comment = 'ring') =>
  `value,comment\n${Array.from({ length: n }, (_, i) => `10.1.${(i >> 8) & 255}.${i & 255},${comment}`).join('\n')}\n`;
const count = async (listId: string, filters?: unknown[]) => {
  const r = await call(app, 'POST', `/v1/lists/${listId}/items/count`, filters ? { filters } : {});
  expect(r.status).toBe(200);
  return r.body.total_count as number;
};
interface Job {
  id: string;
  list_id: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  rows: number;
  items: number;
  written: number;
  created: number;
  updated: number;
  unchanged: number;
  error: string | null;
  finished_at: string | null;
}
const jobAt = async (location: string): Promise<{ status: number; body: Job }> => {
  const r = await call(app, 'GET', location);
  return { status: r.status, body: r.body as Job };
};
const ended = (location: string, what: string) =>
  waitFor(
    async () => {
      const j = await jobAt(location);
      expect(j.status).toBe(200);
      return j.body.status === 'succeeded' || j.body.status === 'failed' ? j.body : null;
    },
    { what, timeoutMs: 120_000, intervalMs: 50 },
  );
const exportCsv = async (listId: string) => {
  const r = await fetch(`${app.baseUrl}/v1/lists/${listId}/items/export`, {
    headers: { authorization: basic(app.secret) },
  });
  expect(r.status).toBe(200);
  return r.text();
};

describe('CSV export', () => {
  it('neutralises cells a spreadsheet could run (OWASP), and imports back as stored', async () => {
    const list = await newList('user.id');
    const hostile = [
      "-2+3+cmd|'/C calc'!A0",
      '=HYPERLINK("http://evil.example","x")',
      '+1+1',
      '@SUM(A1)',
      "'=already quoted",
    ];
    for (const value of hostile)
      expect(
        (
          await call(app, 'POST', `/v1/lists/${list.id}/items`, {
            primary_value: value,
            comment: `-${value}`,
          })
        ).status,
      ).toBe(201);
    const text = await exportCsv(list.id);
    const lines = text.trim().split('\n').slice(1);
    expect(lines).toHaveLength(hostile.length);
    // Every value and comment cell begins with the quote: no cell begins with = + - @ (or a quoted one).
    for (const line of lines) {
      const cells =
        line.match(/("([^"]|"")*"|[^,]*)(,|$)/g)?.map((c) => c.replace(/,$/, '').replace(/^"|"$/g, '')) ?? [];
      expect(cells[1]).toMatch(/^'/);
      expect(cells[3]).toMatch(/^'/);
    }
    expect(lines.some((l) => l.split(',')[1] === "'-2+3+cmd|'/C calc'!A0")).toBe(true);
    const again = await postCsv(list.id, text);
    expect(again).toMatchObject({
      status: 201,
      body: { rows: hostile.length, created: 0, updated: hostile.length },
    });
    const stored = await call(app, 'POST', `/v1/lists/${list.id}/items/query`, {
      sort: { field: 'primary_value', order: 'asc' },
    });
    expect(
      stored.body.map((i: { primary_value: string; comment: string }) => [i.primary_value, i.comment]).sort(),
    ).toEqual(hostile.map((v) => [v, `-${v}`]).sort());
  });
});

describe('CSV import', () => {
  it('a large import is a job: progress shows, counts, pages and verdicts answer all along, and every item is counted at the end', async () => {
    const list = await newList('ip');
    const posted = await postCsv(list.id, ipCsv(1500));
    expect(posted.status).toBe(202);
    const location = posted.headers.get('location') as string;
    expect(location).toBe(`/v1/lists/${list.id}/items/import/${posted.body.id}`);
    expect(posted.body).toMatchObject({
      list_id: list.id,
      rows: 1500,
      items: 1500,
      written: 0,
      error: null,
      finished_at: null,
    });
    expect(['queued', 'running']).toContain(posted.body.status);
    const written: number[] = [];
    const counts: number[] = [];
    const answers = new Map<string, number>();
    const note = (what: string, status: number) =>
      answers.set(`${what} ${status}`, (answers.get(`${what} ${status}`) ?? 0) + 1);
    let n = 0;
    const job = await waitFor(
      async () => {
        const [j, c, page, verdict] = await Promise.all([
          jobAt(location),
          call(app, 'POST', `/v1/lists/${list.id}/items/count`, {}),
          call(app, 'POST', `/v1/lists/${list.id}/items/query`, { results_size: 25 }),
          call(app, 'POST', '/v1/risk', {
            event: '$login',
            status: '$succeeded',
            user: { id: `importing-${n++}` },
            context: {
              ip: '81.2.69.142',
              headers: { 'User-Agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0' },
            },
          }),
        ]);
        note('job', j.status);
        note('count', c.status);
        note('query', page.status);
        note('risk', verdict.status);
        written.push(j.body.written);
        if (c.status === 200) counts.push(c.body.total_count);
        return j.body.status === 'succeeded' || j.body.status === 'failed' ? j.body : null;
      },
      { what: 'the import to end', timeoutMs: 120_000, intervalMs: 20 },
    );
    expect(job).toMatchObject({
      status: 'succeeded',
      rows: 1500,
      items: 1500,
      written: 1500,
      created: 1500,
      updated: 0,
      unchanged: 0,
      error: null,
    });
    expect(job.finished_at).not.toBeNull();
    // Everything answered, all along.
    expect([...answers.keys()].sort()).toEqual(['count 200', 'job 200', 'query 200', 'risk 201']);
    // Progress was seen part-way, and only ever went up; so did the counts, never past the file.
    expect(written.some((w) => w > 0 && w < 1500)).toBe(true);
    expect(written).toEqual([...written].sort((a, b) => a - b));
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(Math.max(...counts)).toBeLessThanOrEqual(1500);
    expect(await count(list.id)).toBe(1500);
    expect(await count(list.id, [{ field: 'archived', op: '$eq', value: false }])).toBe(1500);
    expect(
      await count(list.id, [
        { field: 'primary_value', op: '$in', value: ['10.1.0.1', '10.1.5.219', '10.9.9.9'] },
      ]),
    ).toBe(2);
    const page = await call(app, 'POST', `/v1/lists/${list.id}/items/query`, {
      sort: { field: 'primary_value', order: 'desc' },
      results_size: 3,
    });
    // Values sort as text (bytewise, as MongoDB sorts strings).
    expect(page.body.map((i: { primary_value: string }) => i.primary_value)).toEqual([
      '10.1.5.99',
      '10.1.5.98',
      '10.1.5.97',
    ]);
    expect((await exportCsv(list.id)).trim().split('\n')).toHaveLength(1501);
    // The same CSV again: every item is there as the CSV says, so nothing is rewritten.
    const again = await postCsv(list.id, ipCsv(1500));
    expect(again.status).toBe(202);
    expect(await ended(again.headers.get('location') as string, 'the second import to end')).toMatchObject({
      status: 'succeeded',
      written: 1500,
      created: 0,
      updated: 1500,
      unchanged: 1500,
    });
    expect(await count(list.id)).toBe(1500);
    const audit = (
      await app.built.services.lists.auditLog(app.env.id, { targetId: list.id, limit: 10 })
    ).filter((e) => e.action === 'list_item.import');
    expect(audit.map((e) => e.detail)).toEqual([
      expect.objectContaining({ state: 'succeeded', unchanged: 1500 }),
      expect.objectContaining({ state: 'succeeded', created: 1500 }),
    ]);
  });

  it('a small import answers 201 once written, or a job when asked with Prefer: respond-async', async () => {
    const list = await newList('ip');
    expect(await postCsv(list.id, ipCsv(200))).toMatchObject({
      status: 201,
      body: { rows: 200, created: 200, updated: 0 },
    });
    const asked = await postCsv(list.id, ipCsv(3, 'again'), { prefer: 'respond-async' });
    expect(asked.status).toBe(202);
    expect(await ended(asked.headers.get('location') as string, 'the small job to end')).toMatchObject({
      status: 'succeeded',
      items: 3,
      created: 0,
      updated: 3,
      unchanged: 0,
    });
    expect(await count(list.id)).toBe(200);
  });

  it('refuses bad input whole, naming each problem, and writes nothing', async () => {
    const list = await newList('ip');
    const asn = await newList('ip.asn');
    const refused = async (
      listId: string,
      body: string | Uint8Array,
      status = 422,
      headers: Record<string, string> = {},
    ) => {
      const r = await postCsv(listId, body, headers);
      expect([r.status, r.body.type]).toEqual([
        status,
        status === 422 ? 'invalid_parameters' : status === 413 ? 'payload_too_large' : 'bad_request',
      ]);
      return (r.body.fields ?? []) as { field: string; message: string }[];
    };
    // Malformed CSV, and values of the wrong type for the list.
    expect(
      await refused(list.id, `${ipCsv(300)}"10.2.0.1,unterminated\n10.2.0.2,"stray " quote"\nnot-an-ip,x\n`),
    ).toEqual([
      { field: 'line 302', message: expect.stringContaining('not valid CSV') },
      { field: 'line 303', message: expect.stringContaining('not valid CSV') },
      { field: 'line 304', message: expect.stringContaining('primary_value') },
    ]);
    expect(
      (await refused(asn.id, 'value,expires_at\nAS13335,tomorrow\nASX,\n64500,2001-01-01T00:00:00Z\n')).map(
        (f) => f.field,
      ),
    ).toEqual(['line 2', 'line 3', 'line 4']);
    // Hostile values: control characters, an overlong value, a line past 8,192 characters, bytes that are not UTF-8.
    expect(
      (await refused(list.id, 'value,comment\n10.0.0.1\u0000,x\n10.0.0.2,ok\n')).map((f) => f.field),
    ).toEqual(['line 2']);
    expect((await refused(list.id, `value,comment\n${'1'.repeat(600)},x\n`)).map((f) => f.field)).toEqual([
      'line 2',
    ]);
    expect(await refused(list.id, `value,comment\n10.0.0.1,${'x'.repeat(1001)}\n`)).toEqual([
      {
        field: 'line 2',
        message: expect.stringContaining('comment: must be a string of at most 1000 characters'),
      },
    ]);
    expect(await refused(list.id, `value,comment\n10.0.0.1,${'x'.repeat(100_000)}`)).toEqual([
      { field: 'body', message: expect.stringContaining('longer than 8192') },
    ]);
    expect(await refused(list.id, `value,comment\n10.0.0.1,${'x'.repeat(9000)}\n10.0.0.2,ok\n`)).toEqual([
      { field: 'body', message: expect.stringContaining('longer than 8192') },
    ]);
    expect(
      await refused(
        list.id,
        Buffer.concat([Buffer.from('value\n10.0.0.1\n'), Buffer.from([0xff, 0xfe, 0x0a])]),
      ),
    ).toEqual([{ field: 'body', message: 'is not UTF-8 text' }]);
    // A header without a value column, an empty body, more rows than an import may have.
    expect(await refused(list.id, 'comment\nx\n')).toEqual([
      { field: 'line 1', message: expect.stringContaining('`value`') },
    ]);
    expect(await refused(list.id, '')).toEqual([
      { field: 'line 1', message: expect.stringContaining('empty') },
    ]);
    expect(await refused(list.id, ipCsv(3001))).toEqual([
      { field: 'line 3002', message: expect.stringContaining('at most 3000 rows') },
    ]);
    // More bytes than an import may have (32 MiB), and a body that is not CSV.
    await refused(
      list.id,
      Buffer.concat([Buffer.from('value\n'), Buffer.alloc(33 * 1024 * 1024, `${' '.repeat(8000)}\n`)]),
      413,
    );
    await refused(list.id, '{"value": "10.0.0.1"}', 400, { 'content-type': 'application/json' });
    expect(await count(list.id)).toBe(0);
    expect(await count(asn.id)).toBe(0);
    expect(
      (await app.built.services.lists.auditLog(app.env.id, { targetId: list.id, limit: 10 })).map(
        (e) => e.action,
      ),
    ).toEqual(['list.create']);
  });

  it("a job is found only under its list, with the list's environment's secret", async () => {
    const list = await newList('ip');
    const other = await newList('ip');
    const posted = await postCsv(list.id, ipCsv(300));
    expect(posted.status).toBe(202);
    const { secret } = await app.newEnvironment(`imports-${Date.now()}`);
    expect(
      (await call(app, 'GET', `/v1/lists/${list.id}/items/import/${posted.body.id}`, undefined, { secret }))
        .status,
    ).toBe(404);
    expect((await call(app, 'GET', `/v1/lists/${other.id}/items/import/${posted.body.id}`)).status).toBe(404);
    expect((await call(app, 'GET', `/v1/lists/${list.id}/items/import/nope`)).status).toBe(404);
    expect(
      (
        await call(app, 'GET', `/v1/lists/${list.id}/items/import/${posted.body.id}`, undefined, {
          secret: null,
        })
      ).status,
    ).toBe(401);
    expect((await ended(posted.headers.get('location') as string, 'the import to end')).status).toBe(
      'succeeded',
    );
  });

  it('deleting the list ends its import: nothing of it is written afterwards', async () => {
    const list = await newList('ip');
    const posted = await postCsv(list.id, ipCsv(2000));
    const location = posted.headers.get('location') as string;
    await waitFor(async () => (await jobAt(location)).body.written >= 200, {
      what: 'two batches to be written',
      timeoutMs: 60_000,
    });
    expect((await call(app, 'DELETE', `/v1/lists/${list.id}`)).status).toBe(204);
    // The list is gone, and so is its job; its record says why it ended.
    expect((await jobAt(location)).status).toBe(404);
    const job = await app.built.services.lists
      .importJob(app.env.id, list.id, posted.body.id)
      .catch((e: unknown) => e);
    expect(job).toMatchObject({ kind: 'not_found' });
    const record = await app.database.db.collection('list_imports').findOne({ importId: posted.body.id });
    expect(record).toMatchObject({ state: 'failed', error: expect.stringContaining('the list was deleted') });
    expect(await app.database.db.collection('list_items').countDocuments({ listId: list.id })).toBe(0);
  });
});

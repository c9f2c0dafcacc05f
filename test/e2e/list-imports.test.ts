/**
 * CSV import and export of list items over real HTTP on a real database: the export neutralises
 * what a spreadsheet could run and imports back as stored.
 */
import { startTestApp, call, basic, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

let n = 0;
const newList = async (primary_field: string) => {
  const r = await call(app, 'POST', '/v1/lists', { name: `import list ${++n}`, color: '$red', primary_field });
  expect(r.status).toBe(201);
  return r.body as { id: string };
};
const postCsv = (listId: string, text: string | Uint8Array, headers: Record<string, string> = {}) =>
  fetch(`${app.baseUrl}/v1/lists/${listId}/items/import`, { method: 'POST', headers: { authorization: basic(app.secret), 'content-type': 'text/csv', ...headers }, body: text }).then(async (r) => ({ status: r.status, headers: r.headers, body: await r.json() }));
const exportCsv = async (listId: string) => {
  const r = await fetch(`${app.baseUrl}/v1/lists/${listId}/items/export`, { headers: { authorization: basic(app.secret) } });
  expect(r.status).toBe(200);
  return r.text();
};

describe('CSV export', () => {
  it("neutralises cells a spreadsheet could run (OWASP), and imports back as stored", async () => {
    const list = await newList('user.id');
    const hostile = ["-2+3+cmd|'/C calc'!A0", '=HYPERLINK("http://evil.example","x")', '+1+1', '@SUM(A1)', "'=already quoted"];
    for (const value of hostile) expect((await call(app, 'POST', `/v1/lists/${list.id}/items`, { primary_value: value, comment: `-${value}` })).status).toBe(201);
    const text = await exportCsv(list.id);
    const lines = text.trim().split('\n').slice(1);
    expect(lines).toHaveLength(hostile.length);
    // Every value and comment cell begins with the quote: no cell begins with = + - @ (or a quoted one).
    for (const line of lines) {
      const cells = line.match(/("([^"]|"")*"|[^,]*)(,|$)/g)?.map((c) => c.replace(/,$/, '').replace(/^"|"$/g, '')) ?? [];
      expect(cells[1]).toMatch(/^'/);
      expect(cells[3]).toMatch(/^'/);
    }
    expect(lines.some((l) => l.split(',')[1] === "'-2+3+cmd|'/C calc'!A0")).toBe(true);
    const again = await postCsv(list.id, text);
    expect(again).toMatchObject({ status: 201, body: { rows: hostile.length, created: 0, updated: hostile.length } });
    const stored = await call(app, 'POST', `/v1/lists/${list.id}/items/query`, { sort: { field: 'primary_value', order: 'asc' } });
    expect(stored.body.map((i: { primary_value: string; comment: string }) => [i.primary_value, i.comment]).sort()).toEqual(hostile.map((v) => [v, `-${v}`]).sort());
  });
});

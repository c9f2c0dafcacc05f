/**
 * `rampart lists …` on a real database, beside the REST door: the CLI imports a CSV file into a
 * list through the core's import (a small one at once, a large one as a job it waits for), exports
 * what REST exports (CSV) or the same items as JSON, replaces a list's items (archiving what the
 * file does not name), and refuses a missing list, a missing or bad file and another
 * environment's list, writing nothing. (The sizes are small: a job of more than 200 items, in
 * batches of 100.)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCommand, type CliIo } from '../../src/cli/main';
import { startTestApp, call, basic, type TestApp } from '../support/app';

let app: TestApp;
let dir: string;
beforeAll(async () => {
  app = await startTestApp({ grpc: false, listImports: { syncItems: 200, batch: 100, maxRows: 3000 } });
  dir = mkdtempSync(path.join(tmpdir(), 'rampart-cli-lists-'));
});
afterAll(async () => {
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Ran {
  code: number;
  lines: string[];
  written: string;
  notes: string[];
}
/** Run a CLI command in this process; what it printed, wrote (an export) and noted (progress). */
async function cli(args: string[], io: Partial<CliIo> = {}): Promise<Ran> {
  const ran: Ran = { code: -1, lines: [], written: '', notes: [] };
  ran.code = await runCommand(app.built.services, args, (l) => ran.lines.push(l), {
    write: async (t) => void (ran.written += t),
    note: (l) => ran.notes.push(l),
    actor: { type: '$cli', identifier: 'tester' },
    pollMs: 50,
    ...io,
  });
  return ran;
}

let n = 0;
const newList = async (primary_field = 'ip') => {
  const name = `cli list ${++n}`;
  const r = await call(app, 'POST', '/v1/lists', { name, color: '$red', primary_field });
  expect(r.status).toBe(201);
  return r.body as { id: string; name: string };
};
const file = (name: string, text: string): string => {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
};
const ipCsv = (count: number, from = 0) =>
  `value,comment\n${Array.from({ length: count }, (_, i) => `10.2.${((from + i) >> 8) & 255}.${(from + i) & 255},ring`).join('\n')}\n`;
const activeCount = async (listId: string) => {
  const r = await call(app, 'POST', `/v1/lists/${listId}/items/count`, {
    filters: [{ field: 'archived', op: '$eq', value: false }],
  });
  expect(r.status).toBe(200);
  return r.body.total_count as number;
};
const restExport = async (listId: string, archived = false) => {
  const r = await fetch(
    `${app.baseUrl}/v1/lists/${listId}/items/export${archived ? '?include_archived=true' : ''}`,
    { headers: { authorization: basic(app.secret) } },
  );
  expect(r.status).toBe(200);
  return r.text();
};

describe('lists import', () => {
  it('adds the file’s items at once, named in the audit log as the CLI’s, and shows them in lists list', async () => {
    const list = await newList();
    const r = await cli([
      'lists',
      'import',
      app.env.name,
      list.id,
      file('small.csv', 'value,comment\n203.0.113.7,incident 42\n198.51.100.0/24,vpn\n'),
    ]);
    expect(r.code).toBe(0);
    expect(r.lines).toEqual([`${list.name}: 2 rows imported: 2 items created, 0 updated`]);
    expect(await activeCount(list.id)).toBe(2);
    const items = await call(app, 'POST', `/v1/lists/${list.id}/items/query`, {});
    expect(items.body.map((i: { primary_value: string }) => i.primary_value).sort()).toEqual([
      '198.51.100.0/24',
      '203.0.113.7',
    ]);
    expect(items.body[0].author).toEqual({ type: '$cli', identifier: 'tester' });
    const audit = await app.built.services.lists.auditLog(app.env.id, { listId: list.id });
    expect(audit.find((e) => e.action === 'list_item.import')).toMatchObject({
      actor: { type: '$cli', identifier: 'tester' },
      detail: { rows: 2, created: 2 },
    });

    // By name as well as by id; the same file again creates nothing.
    const again = await cli(['lists', 'import', app.env.name, list.name, path.join(dir, 'small.csv')]);
    expect(again.lines).toEqual([`${list.name}: 2 rows imported: 0 items created, 2 updated`]);

    const listed = await cli(['lists', 'list', app.env.name]);
    expect(listed.lines).toContain(`${list.id}\t${list.name}\tip\titems=2`);
  });

  it('waits for a large import’s job, noting its progress, and ends with every item written', async () => {
    const list = await newList();
    const r = await cli(['lists', 'import', app.env.name, list.id, file('large.csv', ipCsv(450))]);
    expect(r.code).toBe(0);
    expect(r.lines).toEqual([`${list.name}: 450 rows imported: 450 items created, 0 updated`]);
    expect(r.notes[0]).toMatch(new RegExp(`^${list.name}: \\d+ of 450 items written$`));
    expect(await activeCount(list.id)).toBe(450);
  });

  it('with --replace archives the active items the file does not name, at once or as a job', async () => {
    const list = await newList();
    await cli(['lists', 'import', app.env.name, list.id, file('first.csv', ipCsv(300))]);
    expect(await activeCount(list.id)).toBe(300);

    // A small file: 10 kept, 5 new, 290 archived.
    const small = await cli([
      'lists',
      'import',
      app.env.name,
      list.id,
      file('replace-small.csv', ipCsv(15, 290)),
      '--replace',
    ]);
    expect(small.code).toBe(0);
    expect(small.lines).toEqual([
      `${list.name}: 15 rows imported: 5 items created, 10 updated, 290 not in the file archived`,
    ]);
    expect(await activeCount(list.id)).toBe(15);
    const csv = await restExport(list.id);
    expect(csv).toContain('10.2.1.48,'); // 304, new
    expect(csv).not.toContain('10.2.0.5,'); // 5, archived

    // A job: the archived ones it names come back, the rest are archived.
    const large = await cli([
      'lists',
      'import',
      app.env.name,
      list.id,
      file('replace-large.csv', ipCsv(250)),
      '--replace',
    ]);
    expect(large.code).toBe(0);
    expect(large.lines).toEqual([
      `${list.name}: 250 rows imported: 0 items created, 250 updated, 15 not in the file archived`,
    ]);
    expect(await activeCount(list.id)).toBe(250);

    // An empty file (the header alone) replaces the items with none.
    const empty = await cli([
      'lists',
      'import',
      app.env.name,
      list.id,
      file('empty.csv', 'value\n'),
      '--replace',
    ]);
    expect(empty.lines).toEqual([
      `${list.name}: 0 rows imported: 0 items created, 0 updated, 250 not in the file archived`,
    ]);
    expect(await activeCount(list.id)).toBe(0);
  });

  it('refuses a missing list, a missing file, a directory, a bad file and another environment’s list, writing nothing', async () => {
    const list = await newList();
    const good = file('good.csv', 'value\n203.0.113.9\n');
    await expect(cli(['lists', 'import', app.env.name, 'no such list', good])).rejects.toThrow(
      `${app.env.name} has no list with the id or name "no such list"`,
    );
    await expect(cli(['lists', 'import', 'no-such-env', list.id, good])).rejects.toThrow(
      'no environment named no-such-env',
    );
    const other = await app.newEnvironment(`cli-lists-other-${Date.now()}`);
    await expect(cli(['lists', 'import', other.env.name, list.id, good])).rejects.toThrow(
      `${other.env.name} has no list with the id or name "${list.id}"`,
    );
    await expect(cli(['lists', 'export', other.env.name, list.id])).rejects.toThrow('has no list');
    await expect(
      cli(['lists', 'import', app.env.name, list.id, path.join(dir, 'missing.csv')]),
    ).rejects.toThrow(`file: cannot read ${path.join(dir, 'missing.csv')}: no such file`);
    await expect(cli(['lists', 'import', app.env.name, list.id, dir])).rejects.toThrow(
      `file: ${dir} is not a file`,
    );
    const bad = file('bad.csv', 'value,comment\n203.0.113.10,ok\nnot-an-address,x\n"unclosed,y\n');
    await expect(cli(['lists', 'import', app.env.name, list.id, bad, '--replace'])).rejects.toThrow(
      /line 3: .*; line 4: is not valid CSV/,
    );
    await expect(
      cli(['lists', 'import', app.env.name, list.id, file('nohead.csv', '203.0.113.11\n')]),
    ).rejects.toThrow('the header must name a `value`');
    expect(await activeCount(list.id)).toBe(0);
  });
});

describe('lists export', () => {
  it('writes what the REST export answers as CSV, the same items as JSON, archived ones when asked', async () => {
    const list = await newList('user.email');
    await cli([
      'lists',
      'import',
      app.env.name,
      list.id,
      file('emails.csv', 'value,comment\nana@example.com,"=HYPERLINK(""x"")"\nbob@example.com,\n'),
    ]);
    const items = (await call(app, 'POST', `/v1/lists/${list.id}/items/query`, {})).body as {
      id: string;
      primary_value: string;
    }[];
    const bob = items.find((i) => i.primary_value === 'bob@example.com')!;
    expect((await call(app, 'DELETE', `/v1/lists/${list.id}/items/${bob.id}/archive`)).status).toBe(200);

    const csv = await cli(['lists', 'export', app.env.name, list.name]);
    expect(csv.code).toBe(0);
    expect(csv.written).toBe(await restExport(list.id));
    expect(csv.written).toContain(`'=HYPERLINK`);
    expect(csv.written).not.toContain('bob@example.com');
    const all = await cli(['lists', 'export', app.env.name, list.id, '--archived', '--format=csv']);
    expect(all.written).toBe(await restExport(list.id, true));
    expect(all.written).toContain('bob@example.com');

    const json = await cli(['lists', 'export', app.env.name, list.id, '--format', 'json', '--archived']);
    const parsed = JSON.parse(json.written) as Record<string, unknown>[];
    expect(parsed.map((i) => [i.value, i.archived, i.comment]).sort()).toEqual([
      ['ana@example.com', false, '=HYPERLINK("x")'],
      ['bob@example.com', true, null],
    ]);
    expect(parsed[0]).toMatchObject({ author: { type: '$cli', identifier: 'tester' }, expires_at: null });

    // What was exported imports back unchanged.
    const back = await cli(['lists', 'import', app.env.name, list.id, file('back.csv', csv.written)]);
    expect(back.lines).toEqual([`${list.name}: 1 row imported: 0 items created, 1 updated`]);
    const again = await cli(['lists', 'export', app.env.name, list.id]);
    expect(again.written).toBe(csv.written);

    const none = await cli(['lists', 'export', app.env.name, (await newList()).id, '--format', 'json']);
    expect(JSON.parse(none.written)).toEqual([]);
  });
});

/**
 * Castle's Lists API over real HTTP on a real database: every route, bad and hostile input,
 * tenant isolation, CSV import and export, and lists deciding verdicts (a block list denies with
 * the `in_list` signal, an allow list lets a QA account in, an item added is matched by the
 * next verdict of the same instance).
 */
import { startTestApp, call, basic, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
let n = 0;
const login = async (user: string, ip: string, extra: Record<string, unknown> = {}) => {
  const r = await call(app, 'POST', '/v1/risk', {
    event: '$login',
    status: '$succeeded',
    user: { id: user, email: `${user}@example.com` },
    context: { ip, headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en' } },
    ...extra,
  });
  expect(r.status).toBe(201);
  return r.body as {
    risk: number;
    policy: { action: string; name: string };
    signals: Record<string, Record<string, unknown>>;
  };
};
const newList = async (primary_field: string, extra: Record<string, unknown> = {}) => {
  const r = await call(app, 'POST', '/v1/lists', {
    name: `list ${++n}`,
    color: '$red',
    primary_field,
    ...extra,
  });
  expect(r.status).toBe(201);
  return r.body as { id: string; name: string };
};
const csv = (path: string, text: string, secret = app.secret) =>
  fetch(`${app.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: basic(secret), 'content-type': 'text/csv' },
    body: text,
  }).then(async (r) => ({ status: r.status, body: await r.json() }));

describe('lists', () => {
  it('create, get, get all, query, update and delete', async () => {
    const created = await call(app, 'POST', '/v1/lists', {
      name: 'Office NAT',
      color: '$green',
      primary_field: 'ip',
      description: 'allowed',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Office NAT',
      color: '$green',
      primary_field: 'ip',
      type: 'ip',
      secondary_field: null,
      description: 'allowed',
    });
    const id = created.body.id as string;
    expect((await call(app, 'GET', `/v1/lists/${id}`)).body).toEqual(created.body);
    expect((await call(app, 'GET', '/v1/lists')).body.map((l: { id: string }) => l.id)).toContain(id);
    const q = await call(app, 'POST', '/v1/lists/query', {
      filters: [{ field: 'name', op: '$eq', value: 'Office NAT' }],
      sort: { field: 'created_at', order: 'desc' },
    });
    expect(q.status).toBe(200);
    expect(q.body.map((l: { id: string }) => l.id)).toEqual([id]);
    const u = await call(app, 'PUT', `/v1/lists/${id}`, { name: 'Office NAT (Berlin)', description: null });
    expect(u.body).toMatchObject({ name: 'Office NAT (Berlin)', description: null, color: '$green' });
    expect((await call(app, 'PUT', `/v1/lists/${id}`, { primary_field: 'user.email' })).status).toBe(422);
    expect((await call(app, 'DELETE', `/v1/lists/${id}`)).status).toBe(204);
    expect((await call(app, 'GET', `/v1/lists/${id}`)).status).toBe(404);
  });

  it('refuses missing, wrong-typed and unknown fields with 422 naming each', async () => {
    const r = await call(app, 'POST', '/v1/lists', {
      name: '',
      color: 'red',
      primary_field: 'user.shoe_size',
    });
    expect(r.status).toBe(422);
    expect(r.body.type).toBe('invalid_parameters');
    expect(r.body.fields.map((f: { field: string }) => f.field).sort()).toEqual([
      'color',
      'name',
      'primary_field',
    ]);
    expect(
      (await call(app, 'POST', '/v1/lists', { name: 7, color: '$red', primary_field: 'ip' })).status,
    ).toBe(422);
    expect(
      (await call(app, 'POST', '/v1/lists', { color: '$red' })).body.fields.map(
        (f: { field: string }) => f.field,
      ),
    ).toEqual(expect.arrayContaining(['name', 'primary_field']));
    expect(
      (await call(app, 'POST', '/v1/lists/query', { filters: 'all', page: 0, results_size: 1000 })).status,
    ).toBe(422);
    expect(
      (await call(app, 'POST', '/v1/lists/query', { filters: [{ field: '$where', op: '$eq', value: 'x' }] }))
        .status,
    ).toBe(422);
    expect(
      (await call(app, 'POST', '/v1/lists/query', { sort: { field: 'name', order: 'sideways' } })).status,
    ).toBe(422);
    expect((await call(app, 'POST', '/v1/lists', null, { raw: '{not json' })).status).toBe(400);
    expect(
      (await call(app, 'POST', '/v1/lists', null, { raw: JSON.stringify({ name: 'x'.repeat(200_000) }) }))
        .status,
    ).toBe(413);
    expect((await call(app, 'GET', '/v1/lists', undefined, { secret: 'sk_wrong' })).status).toBe(401);
    expect((await call(app, 'GET', '/v1/lists/no-such-list')).status).toBe(404);
    expect((await call(app, 'GET', '/v1/lists/no-such-list/items/x')).status).toBe(404);
  });

  it("another environment's list and items answer 404", async () => {
    const list = await newList('user.email');
    const item = (
      await call(app, 'POST', `/v1/lists/${list.id}/items`, {
        primary_value: 'a@example.com',
        author: { type: '$analyst_email', identifier: 'ana@example.com' },
      })
    ).body;
    const other = await app.newEnvironment(`other-${Date.now()}`);
    const as = { secret: other.secret };
    expect((await call(app, 'GET', `/v1/lists/${list.id}`, undefined, as)).status).toBe(404);
    expect((await call(app, 'GET', '/v1/lists', undefined, as)).body).toEqual([]);
    expect((await call(app, 'GET', `/v1/lists/${list.id}/items/${item.id}`, undefined, as)).status).toBe(404);
    expect(
      (await call(app, 'POST', `/v1/lists/${list.id}/items`, { primary_value: 'b@example.com' }, as)).status,
    ).toBe(404);
    expect(
      (await call(app, 'DELETE', `/v1/lists/${list.id}/items/${item.id}/archive`, undefined, as)).status,
    ).toBe(404);
    expect((await call(app, 'PUT', `/v1/lists/${list.id}`, { name: 'mine' }, as)).status).toBe(404);
    expect((await call(app, 'DELETE', `/v1/lists/${list.id}`, undefined, as)).status).toBe(404);
    expect((await call(app, 'GET', `/v1/lists/${list.id}`)).status).toBe(200);
  });
});

describe('list items', () => {
  it('create, get, query, count, update, archive and unarchive, each audited', async () => {
    const list = await newList('ip');
    const c = await call(app, 'POST', `/v1/lists/${list.id}/items`, {
      primary_value: '203.0.113.9/24',
      comment: 'card testing',
      author: { type: '$analyst_email', identifier: 'ana@example.com' },
      auto_archives_at: '2099-01-01T00:00:00Z',
    });
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({
      list_id: list.id,
      primary_value: '203.0.113.0/24',
      comment: 'card testing',
      author: { type: '$analyst_email', identifier: 'ana@example.com' },
      auto_archives_at: '2099-01-01T00:00:00.000Z',
      archived: false,
    });
    const id = c.body.id as string;
    expect(
      (await call(app, 'POST', `/v1/lists/${list.id}/items`, { primary_value: '203.0.113.0/24' })).status,
    ).toBe(422);
    expect((await call(app, 'GET', `/v1/lists/${list.id}/items/${id}`)).body).toEqual(c.body);
    const batch = await call(app, 'POST', `/v1/lists/${list.id}/items/batch`, {
      items: [{ primary_value: '2001:db8::/32' }, { primary_value: '198.51.100.7', comment: 'bot' }],
    });
    expect(batch.status).toBe(201);
    expect(batch.body.map((i: { primary_value: string }) => i.primary_value)).toEqual([
      '2001:db8::/32',
      '198.51.100.7',
    ]);
    expect((await call(app, 'POST', `/v1/lists/${list.id}/items/count`, {})).body).toEqual({
      total_count: 3,
    });
    const q = await call(app, 'POST', `/v1/lists/${list.id}/items/query`, {
      filters: [{ field: 'primary_value', op: '$eq', value: '198.51.100.7/32' }],
    });
    expect(q.body.map((i: { comment: string }) => i.comment)).toEqual(['bot']);
    const sorted = await call(app, 'POST', `/v1/lists/${list.id}/items/query`, {
      sort: { field: 'primary_value', order: 'asc' },
      results_size: 2,
      page: 1,
    });
    expect(sorted.body).toHaveLength(2);
    const u = await call(app, 'PUT', `/v1/lists/${list.id}/items/${id}`, {
      comment: 'confirmed card testing',
    });
    expect(u.body.comment).toBe('confirmed card testing');
    const a = await call(app, 'DELETE', `/v1/lists/${list.id}/items/${id}/archive`);
    expect(a.body).toMatchObject({ archived: true });
    expect(a.body.archived_at).not.toBeNull();
    expect(
      (
        await call(app, 'POST', `/v1/lists/${list.id}/items/count`, {
          filters: [{ field: 'archived', op: '$eq', value: false }],
        })
      ).body,
    ).toEqual({ total_count: 2 });
    expect((await call(app, 'PUT', `/v1/lists/${list.id}/items/${id}/unarchive`)).body).toMatchObject({
      archived: false,
      archived_at: null,
    });
    const audit = await app.built.services.lists.auditLog(app.env.id, { limit: 100 });
    const actions = audit.filter((e) => e.target.listId === list.id).map((e) => e.action);
    expect(actions).toEqual(
      expect.arrayContaining([
        'list.create',
        'list_item.create',
        'list_item.batch',
        'list_item.update',
        'list_item.archive',
        'list_item.unarchive',
      ]),
    );
    expect(audit[0]?.actor.type).toBe('$api_secret');
  });

  it('validates values by the list type, and refuses hostile input', async () => {
    const cases: [string, unknown, boolean][] = [
      ['ip', '300.1.1.1', false],
      ['ip', '10.0.0.0/33', false],
      ['ip', '::1/129', false],
      ['ip', 'fe80::1%eth0', false],
      ['user.email', 'not-an-email', false],
      ['user.email', 'Ana@Example.COM', true],
      ['ip.country_code', 'Germany', false],
      ['ip.asn', 'AS13335', true],
      ['ip.asn', -4, false],
      ['email.domain', 'bad domain', false],
      ['user.id', { $gt: '' }, false],
      ['user.id', 'a\u0000b', false],
      ['user.id', 'x'.repeat(600), false],
    ];
    for (const [field, value, ok] of cases) {
      const list = await newList(field);
      const r = await call(app, 'POST', `/v1/lists/${list.id}/items`, { primary_value: value });
      expect([field, value, r.status]).toEqual([field, value, ok ? 201 : 422]);
      if (!ok) expect(r.body.fields[0].field).toBe('primary_value');
    }
    const list = await newList('ip');
    expect(
      (
        await call(app, 'POST', `/v1/lists/${list.id}/items`, {
          primary_value: '1.2.3.4',
          auto_archives_at: 'tomorrow',
        })
      ).status,
    ).toBe(422);
    expect(
      (
        await call(app, 'POST', `/v1/lists/${list.id}/items`, {
          primary_value: '1.2.3.4',
          auto_archives_at: '2001-01-01T00:00:00Z',
        })
      ).status,
    ).toBe(422);
    expect(
      (
        await call(app, 'POST', `/v1/lists/${list.id}/items`, {
          primary_value: '1.2.3.4',
          author: { type: 5 },
        })
      ).status,
    ).toBe(422);
    expect((await call(app, 'POST', `/v1/lists/${list.id}/items/batch`, { items: [] })).status).toBe(422);
    expect(
      (
        await call(app, 'POST', `/v1/lists/${list.id}/items/batch`, {
          items: [{ primary_value: '1.2.3.4' }, { primary_value: 'nope' }, 7],
        })
      ).body.fields.map((f: { field: string }) => f.field),
    ).toEqual(['items[1].primary_value', 'items[2]']);
    expect((await call(app, 'POST', `/v1/lists/${list.id}/items/count`, {})).body).toEqual({
      total_count: 0,
    });
    expect(
      (
        await call(app, 'POST', `/v1/lists/${list.id}/items/query`, {
          filters: [{ field: 'archived', op: '$gt', value: 1 }],
        })
      ).status,
    ).toBe(422);
    expect((await call(app, 'PUT', `/v1/lists/${list.id}/items/nope`, { comment: 'x' })).status).toBe(404);
    expect((await call(app, 'DELETE', `/v1/lists/${list.id}/items/nope/archive`)).status).toBe(404);
  });

  it('imports CSV all or nothing, and exports it back', async () => {
    const list = await newList('ip');
    const bad = await csv(
      `/v1/lists/${list.id}/items/import`,
      'value,comment,expires_at\n1.2.3.4,ok,\nnot-an-ip,bad,\n"5.6.7.0/24","quoted, comma",2099-01-01T00:00:00Z\n9.9.9.9,,yesterday\n',
    );
    expect(bad.status).toBe(422);
    expect((bad.body as { fields: { field: string }[] }).fields.map((f) => f.field)).toEqual([
      'line 3',
      'line 5',
    ]);
    expect((await call(app, 'POST', `/v1/lists/${list.id}/items/count`, {})).body).toEqual({
      total_count: 0,
    });
    const good = await csv(
      `/v1/lists/${list.id}/items/import`,
      '\ufeffvalue,comment,expires_at\r\n1.2.3.4,ok,\r\n"5.6.7.0/24","quoted, comma",2099-01-01T00:00:00Z\r\n',
    );
    expect(good).toEqual({ status: 201, body: { rows: 2, created: 2, updated: 0 } });
    expect((await csv(`/v1/lists/${list.id}/items/import`, 'value\n1.2.3.4\n')).body).toEqual({
      rows: 1,
      created: 0,
      updated: 1,
    });
    expect((await csv(`/v1/lists/${list.id}/items/import`, 'comment\nx\n')).status).toBe(422);
    expect((await csv(`/v1/lists/${list.id}/items/import`, '')).status).toBe(422);
    const exported = await fetch(`${app.baseUrl}/v1/lists/${list.id}/items/export`, {
      headers: { authorization: basic(app.secret) },
    });
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-type')).toContain('text/csv');
    const lines = (await exported.text()).trim().split('\n');
    expect(lines[0]).toBe(
      'id,value,secondary_value,comment,expires_at,archived,archived_at,author_type,author_identifier,created_at',
    );
    expect(
      lines
        .slice(1)
        .map((l) => l.split(',')[1])
        .sort(),
    ).toEqual(['1.2.3.4', '5.6.7.0/24']);
    // What was exported imports back as it was.
    const again = await csv(`/v1/lists/${list.id}/items/import`, lines.join('\n'));
    expect(again.body).toEqual({ rows: 2, created: 0, updated: 2 });
    expect(
      (
        await fetch(`${app.baseUrl}/v1/lists/nope/items/export`, {
          headers: { authorization: basic(app.secret) },
        })
      ).status,
    ).toBe(404);
  });
});

describe('lists decide verdicts', () => {
  it('a block list denies with the in_list signal; the next verdict after adding sees the item', async () => {
    const list = await newList('ip');
    const policy = await app.built.services.policies.create(app.env.id, {
      name: 'Deny blocked networks',
      group: 'before',
      action: 'deny',
      conditions: { inLists: [list.id] },
    });
    expect((await login('block-1', '192.0.2.44')).policy.action).not.toBe('deny');
    const item = (
      await call(app, 'POST', `/v1/lists/${list.id}/items`, {
        primary_value: '192.0.2.0/24',
        comment: 'card testing ring',
      })
    ).body;
    const denied = await login('block-1', '192.0.2.44');
    expect(denied.policy).toMatchObject({ action: 'deny', name: 'Deny blocked networks' });
    expect(denied.signals.in_list).toMatchObject({
      list_id: list.id,
      list_name: list.name,
      item_id: item.id,
      value: '192.0.2.0/24',
      field: 'ip',
    });
    await call(app, 'DELETE', `/v1/lists/${list.id}/items/${item.id}/archive`);
    const after = await login('block-1', '192.0.2.44');
    expect(after.policy.action).not.toBe('deny');
    expect(after.signals.in_list).toBeUndefined();
    // A list a policy names cannot be deleted.
    expect((await call(app, 'DELETE', `/v1/lists/${list.id}`)).status).toBe(422);
    await app.built.services.policies.archive(app.env.id, policy.id);
  });

  it('an allow list placed before the defaults lets a QA account in', async () => {
    const list = await newList('user.id');
    await call(app, 'POST', `/v1/lists/${list.id}/items`, { primary_value: 'qa-account-1', comment: 'QA' });
    const policy = await app.built.services.policies.create(app.env.id, {
      name: 'Allow QA accounts',
      group: 'before',
      action: 'allow',
      conditions: { inLists: [list.id] },
    });
    const forcedHigh = { request_token: 'test|risk:0.95' };
    expect((await login('qa-account-2', '81.2.69.142', forcedHigh)).policy.action).toBe('deny');
    const qa = await login('qa-account-1', '81.2.69.142', forcedHigh);
    expect(qa.policy).toMatchObject({ action: 'allow', name: 'Allow QA accounts' });
    expect(qa.signals.in_list).toMatchObject({ list_id: list.id, value: 'qa-account-1' });
    await app.built.services.policies.archive(app.env.id, policy.id);
  });

  it('a policy may name only lists of its environment', async () => {
    await expect(
      app.built.services.policies.create(app.env.id, {
        name: 'x',
        group: 'before',
        action: 'deny',
        conditions: { inLists: ['no-such-list'] },
      }),
    ).rejects.toMatchObject({ kind: 'invalid_parameters' });
  });
});

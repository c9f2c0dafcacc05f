/**
 * Lists through the GraphQL door over real HTTP on a real database: analysts read and cannot
 * change, the API secret changes; another environment's list is NOT_FOUND (or null); missing,
 * wrong-typed, oversized and hostile input is refused naming the field; items page by cursor; the
 * audit entries of a list name every change; and a policy made here with `inLists` denies the
 * next REST verdict from a listed address, with the `in_list` signal naming the list.
 */
import { startTestApp, call, basic, type TestApp } from '../support/app';

let app: TestApp;
let analyst: string;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
  analyst = (await app.built.services.environments.addCredential(app.env.id, 'analyst', 'lists analyst'))
    .secret;
});
afterAll(async () => {
  await app?.close();
});

interface GqlResult {
  status: number;
  body: { data?: any; errors?: { message: string; path?: string[]; extensions?: Record<string, any> }[] };
}

async function gql(
  query: string,
  variables: Record<string, unknown> = {},
  secret: string = app.secret,
): Promise<GqlResult> {
  const res = await fetch(`${app.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: basic(secret) },
    body: JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}
async function data(query: string, variables: Record<string, unknown> = {}, secret?: string): Promise<any> {
  const r = await gql(query, variables, secret);
  if (r.body.errors?.length) throw new Error(`GraphQL errors: ${JSON.stringify(r.body.errors)}`);
  expect(r.status).toBe(200);
  return r.body.data;
}
const codes = (r: GqlResult) => (r.body.errors ?? []).map((e) => e.extensions?.code);
const fields = (r: GqlResult) =>
  (r.body.errors ?? []).flatMap((e) => (e.extensions?.fields ?? []).map((f: { field: string }) => f.field));

const CREATE = `mutation($input: ListCreateInput!) { createList(input: $input) { id name color type primaryField description createdAt } }`;
const ADD = `mutation($l: ID!, $input: ListItemInput!) { addListItem(listId: $l, input: $input) { id listId value comment author { type identifier } expiresAt archived archivedAt active } }`;
let n = 0;
const newList = async (primaryField: string, extra: Record<string, unknown> = {}) =>
  (await data(CREATE, { input: { name: `gql list ${++n}`, color: '$red', primaryField, ...extra } }))
    .createList as { id: string; name: string };

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const login = async (user: string, ip: string) => {
  const r = await call(app, 'POST', '/v1/risk', {
    event: '$login',
    status: '$succeeded',
    user: { id: user, email: `${user}@example.com` },
    context: { ip, headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en' } },
  });
  expect(r.status).toBe(201);
  return r.body as {
    policy: { action: string; name: string };
    signals: Record<string, Record<string, unknown>>;
  };
};

describe('lists through GraphQL', () => {
  it('lets the API secret create, read, update and delete a list and change its items', async () => {
    const created = await newList('ip', { description: 'card testing' });
    expect(created).toMatchObject({
      color: '$red',
      type: 'IP',
      primaryField: 'ip',
      description: 'card testing',
    });
    const item = (
      await data(ADD, {
        l: created.id,
        input: { value: '203.0.113.9/24', comment: 'incident 42', expiresAt: '2099-01-01T00:00:00Z' },
      })
    ).addListItem;
    expect(item).toMatchObject({
      listId: created.id,
      value: '203.0.113.0/24',
      comment: 'incident 42',
      expiresAt: '2099-01-01T00:00:00.000Z',
      archived: false,
      active: true,
    });
    expect(item.author.type).toBe('$api_secret');
    // A value already active in the list is refused, naming the input field.
    const again = await gql(ADD, { l: created.id, input: { value: '203.0.113.0/24' } });
    expect(codes(again)).toEqual(['BAD_USER_INPUT']);
    expect(fields(again)).toEqual(['value']);

    const UPDATE_ITEM = `mutation($l: ID!, $i: ID!, $input: ListItemUpdateInput!) { updateListItem(listId: $l, itemId: $i, input: $input) { comment expiresAt } }`;
    // A field left out keeps its value; null clears it.
    expect(
      (await data(UPDATE_ITEM, { l: created.id, i: item.id, input: { expiresAt: null } })).updateListItem,
    ).toEqual({ comment: 'incident 42', expiresAt: null });
    expect(
      (await data(UPDATE_ITEM, { l: created.id, i: item.id, input: { comment: 'confirmed' } }))
        .updateListItem,
    ).toEqual({ comment: 'confirmed', expiresAt: null });
    const archived = (
      await data(
        `mutation($l: ID!, $i: ID!) { archiveListItem(listId: $l, itemId: $i) { archived archivedAt active } }`,
        { l: created.id, i: item.id },
      )
    ).archiveListItem;
    expect(archived.archived).toBe(true);
    expect(archived.active).toBe(false);
    expect(
      (
        await data(
          `mutation($l: ID!, $i: ID!) { unarchiveListItem(listId: $l, itemId: $i) { archived archivedAt } }`,
          { l: created.id, i: item.id },
        )
      ).unarchiveListItem,
    ).toEqual({ archived: false, archivedAt: null });

    const updated = (
      await data(
        `mutation($id: ID!) { updateList(id: $id, input: { name: "renamed", description: null }) { name description color } }`,
        { id: created.id },
      )
    ).updateList;
    expect(updated).toEqual({ name: 'renamed', description: null, color: '$red' });

    const read = await data(
      `query($id: ID!, $i: ID!) {
      lists { id }
      list(id: $id) { name itemCount active: itemCount(archived: false) usedBy item(id: $i) { value comment }
        auditEntries(first: 10) { action actor { type } targetId at detail } }
    }`,
      { id: created.id, i: item.id },
    );
    expect(read.lists.map((l: { id: string }) => l.id)).toContain(created.id);
    expect(read.list).toMatchObject({
      name: 'renamed',
      itemCount: 1,
      active: 1,
      usedBy: [],
      item: { value: '203.0.113.0/24', comment: 'confirmed' },
    });
    // The list's history names the changes to the list and to its items, newest first.
    const actions = read.list.auditEntries.map((e: { action: string }) => e.action);
    expect(actions).toEqual([
      'list.update',
      'list_item.unarchive',
      'list_item.archive',
      'list_item.update',
      'list_item.update',
      'list_item.create',
      'list.create',
    ]);
    expect(read.list.auditEntries[0].actor.type).toBe('$api_secret');

    expect((await data(`mutation($id: ID!) { deleteList(id: $id) }`, { id: created.id })).deleteList).toBe(
      created.id,
    );
    expect((await data(`query($id: ID!) { list(id: $id) { id } }`, { id: created.id })).list).toBeNull();
    const gone = await gql(`mutation($id: ID!) { deleteList(id: $id) }`, { id: created.id });
    expect(codes(gone)).toEqual(['NOT_FOUND']);
  });

  it('lets an analyst key read lists and items, and refuses every change with FORBIDDEN', async () => {
    const list = await newList('user.email');
    const item = (await data(ADD, { l: list.id, input: { value: 'Mallory@Example.com', comment: 'ring' } }))
      .addListItem;
    const read = await data(
      `query($id: ID!) { list(id: $id) { name type itemCount items { edges { node { value comment } } } auditEntries { action } } }`,
      { id: list.id },
      analyst,
    );
    expect(read.list).toMatchObject({
      name: list.name,
      type: 'EMAIL',
      itemCount: 1,
      items: { edges: [{ node: { value: 'mallory@example.com', comment: 'ring' } }] },
    });
    const refused: [string, Record<string, unknown>][] = [
      [CREATE, { input: { name: 'analyst list', color: '$red', primaryField: 'ip' } }],
      [`mutation($id: ID!) { updateList(id: $id, input: { name: "x" }) { id } }`, { id: list.id }],
      [`mutation($id: ID!) { deleteList(id: $id) }`, { id: list.id }],
      [ADD, { l: list.id, input: { value: 'eve@example.com' } }],
      [
        `mutation($l: ID!, $i: ID!) { updateListItem(listId: $l, itemId: $i, input: { comment: "x" }) { id } }`,
        { l: list.id, i: item.id },
      ],
      [
        `mutation($l: ID!, $i: ID!) { archiveListItem(listId: $l, itemId: $i) { id } }`,
        { l: list.id, i: item.id },
      ],
      [
        `mutation($l: ID!, $i: ID!) { unarchiveListItem(listId: $l, itemId: $i) { id } }`,
        { l: list.id, i: item.id },
      ],
    ];
    for (const [q, v] of refused) {
      const r = await gql(q, v, analyst);
      expect(r.status).toBe(403);
      expect(codes(r)).toEqual(['FORBIDDEN']);
    }
    expect(
      (await data(`query($id: ID!) { list(id: $id) { name itemCount } }`, { id: list.id })).list,
    ).toEqual({ name: list.name, itemCount: 1 });
  });

  it("answers another environment's list as null on reads and NOT_FOUND on changes", async () => {
    const list = await newList('ip');
    const item = (await data(ADD, { l: list.id, input: { value: '198.51.100.1' } })).addListItem;
    const other = await app.newEnvironment(`gql-lists-other-${Date.now()}`);
    const as = other.secret;
    const read = await data(`query($id: ID!) { lists { id } list(id: $id) { id } }`, { id: list.id }, as);
    expect(read).toEqual({ lists: [], list: null });
    const attempts: [string, Record<string, unknown>][] = [
      [`mutation($id: ID!) { updateList(id: $id, input: { name: "mine" }) { id } }`, { id: list.id }],
      [`mutation($id: ID!) { deleteList(id: $id) }`, { id: list.id }],
      [ADD, { l: list.id, input: { value: '198.51.100.2' } }],
      [
        `mutation($l: ID!, $i: ID!) { updateListItem(listId: $l, itemId: $i, input: { comment: "x" }) { id } }`,
        { l: list.id, i: item.id },
      ],
      [
        `mutation($l: ID!, $i: ID!) { archiveListItem(listId: $l, itemId: $i) { id } }`,
        { l: list.id, i: item.id },
      ],
      [
        `mutation($l: ID!, $i: ID!) { unarchiveListItem(listId: $l, itemId: $i) { id } }`,
        { l: list.id, i: item.id },
      ],
    ];
    for (const [q, v] of attempts) expect(codes(await gql(q, v, as))).toEqual(['NOT_FOUND']);
    // Its policies cannot name the list either.
    const policy = await gql(
      `mutation($l: ID!) { createPolicy(input: { name: "steal", group: BEFORE, action: DENY, conditions: { inLists: [$l] } }) { id } }`,
      { l: list.id },
      as,
    );
    expect(codes(policy)).toEqual(['BAD_USER_INPUT']);
    expect(fields(policy)).toEqual(['conditions.inLists']);
    // The list is untouched.
    expect(
      (await data(`query($id: ID!) { list(id: $id) { name itemCount(archived: false) } }`, { id: list.id }))
        .list,
    ).toEqual({ name: list.name, itemCount: 1 });
  });

  it('refuses missing, wrong-typed, oversized and hostile input, naming the field', async () => {
    // Missing and wrong-typed arguments fail GraphQL validation before anything runs.
    expect(codes(await gql(`mutation { createList(input: { name: "x", color: "$red" }) { id } }`))).toEqual([
      'GRAPHQL_VALIDATION_FAILED',
    ]);
    expect(codes(await gql(CREATE, { input: { name: 7, color: '$red', primaryField: 'ip' } }))).toEqual([
      'BAD_USER_INPUT',
    ]);
    expect(codes(await gql(ADD, { l: 'x', input: { value: { $gt: '' } } }))).toEqual(['BAD_USER_INPUT']);
    expect(codes(await gql(ADD, { l: 'x', input: { value: '1.2.3.4', expiresAt: 'next tuesday' } }))).toEqual(
      ['BAD_USER_INPUT'],
    );
    // The core refuses bad values, named by this door's fields.
    const bad = await gql(CREATE, { input: { name: '', color: 'red', primaryField: 'user.shoe_size' } });
    expect(codes(bad)).toEqual(['BAD_USER_INPUT']);
    expect(fields(bad).sort()).toEqual(['color', 'name', 'primaryField']);
    const list = await newList('ip');
    const cases: [Record<string, unknown>, string][] = [
      [{ value: '300.1.1.1' }, 'value'],
      [{ value: 'a\u0000b' }, 'value'],
      [{ value: 'x'.repeat(600) }, 'value'],
      [{ value: '203.0.113.1', comment: 'c'.repeat(1001) }, 'comment'],
      [{ value: '203.0.113.1', expiresAt: '2001-01-01T00:00:00Z' }, 'expiresAt'],
      [{ value: '203.0.113.1', secondaryValue: 'x' }, 'secondaryValue'],
    ];
    for (const [input, field] of cases) {
      const r = await gql(ADD, { l: list.id, input });
      expect(codes(r)).toEqual(['BAD_USER_INPUT']);
      expect(fields(r)).toEqual([field]);
    }
    expect(
      codes(
        await gql(
          `mutation { createList(input: { name: "${'n'.repeat(300)}", color: "$red", primaryField: "ip" }) { id } }`,
        ),
      ),
    ).toEqual(['BAD_USER_INPUT']);
    // Unknown ids: null on reads, NOT_FOUND on changes; a hostile id is just an unknown one.
    expect((await data(`{ list(id: "{\\"$ne\\": null}") { id } }`)).list).toBeNull();
    expect(codes(await gql(ADD, { l: 'no-such-list', input: { value: '1.2.3.4' } }))).toEqual(['NOT_FOUND']);
    expect(
      codes(
        await gql(`mutation($l: ID!) { archiveListItem(listId: $l, itemId: "nope") { id } }`, { l: list.id }),
      ),
    ).toEqual(['NOT_FOUND']);
    // Page sizes and cursors.
    const page = await gql(`query($id: ID!) { list(id: $id) { items(first: 1000) { edges { cursor } } } }`, {
      id: list.id,
    });
    expect(codes(page)).toEqual(['BAD_USER_INPUT']);
    expect(fields(page)).toEqual(['first']);
    const cursor = await gql(
      `query($id: ID!) { list(id: $id) { items(after: "not-a-cursor") { edges { cursor } } } }`,
      { id: list.id },
    );
    expect(fields(cursor)).toEqual(['after']);
    expect(
      fields(
        await gql(`query($id: ID!) { list(id: $id) { auditEntries(first: 0) { id } } }`, { id: list.id }),
      ),
    ).toEqual(['first']);
    // A body over the limit is refused before it is parsed.
    const big = await fetch(`${app.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic(app.secret) },
      body: JSON.stringify({ query: ADD, variables: { l: list.id, input: { value: 'x'.repeat(300_000) } } }),
    });
    expect(big.status).toBe(413);
    // Too many lists in a policy condition.
    const many = await gql(
      `mutation($ids: [ID!]) { createPolicy(input: { name: "many", group: BEFORE, action: DENY, conditions: { inLists: $ids } }) { id } }`,
      { ids: Array.from({ length: 21 }, () => list.id) },
    );
    expect(codes(many)).toEqual(['BAD_USER_INPUT']);
  });

  it('pages items by cursor, newest first, and filters them by value and archived', async () => {
    const list = await newList('user.id');
    for (let i = 0; i < 7; i++) await data(ADD, { l: list.id, input: { value: `u-${i}` } });
    const Q = `query($id: ID!, $first: Int, $after: String, $filter: ListItemFilter) { list(id: $id) { items(first: $first, after: $after, filter: $filter) { edges { cursor node { id value } } pageInfo { hasNextPage endCursor } } } }`;
    const seen: string[] = [];
    let after: string | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const p: any = (await data(Q, { id: list.id, first: 3, after })).list.items;
      seen.push(...p.edges.map((e: { node: { value: string } }) => e.node.value));
      if (!p.pageInfo.hasNextPage) break;
      after = p.pageInfo.endCursor;
    }
    expect(seen).toEqual(['u-6', 'u-5', 'u-4', 'u-3', 'u-2', 'u-1', 'u-0']);
    // A page size changed between pages still continues where the last page ended.
    const p1: any = (await data(Q, { id: list.id, first: 2 })).list.items;
    const p2: any = (await data(Q, { id: list.id, first: 3, after: p1.pageInfo.endCursor })).list.items;
    expect(p2.edges.map((e: { node: { value: string } }) => e.node.value)).toEqual(['u-4', 'u-3', 'u-2']);
    const byValue: any = (await data(Q, { id: list.id, filter: { value: 'u-3' } })).list.items;
    expect(byValue.edges.map((e: { node: { value: string } }) => e.node.value)).toEqual(['u-3']);
    await data(`mutation($l: ID!, $i: ID!) { archiveListItem(listId: $l, itemId: $i) { id } }`, {
      l: list.id,
      i: byValue.edges[0].node.id,
    });
    const archived: any = (await data(Q, { id: list.id, filter: { archived: true } })).list.items;
    expect(archived.edges.map((e: { node: { value: string } }) => e.node.value)).toEqual(['u-3']);
    expect((await data(Q, { id: list.id, filter: { archived: false } })).list.items.edges).toHaveLength(6);
  });

  it('keeps the depth and complexity limits: every list with a large page of items is refused', async () => {
    const r = await gql(
      `{ lists { items(first: 100) { edges { node { id value comment author { type identifier } createdAt expiresAt archived } } } } }`,
    );
    expect(r.status).toBe(400);
    expect(r.body.errors?.[0]?.extensions?.limit?.name).toBe('complexity');
  });
});

describe('policies naming lists through GraphQL', () => {
  it('a policy with inLists denies the next REST login from a listed address, with the in_list signal', async () => {
    const list = await newList('ip');
    const POLICY = `mutation($input: PolicyCreateInput!) { createPolicy(input: $input) { id conditions { inLists notInLists } } }`;
    const policy = (
      await data(POLICY, {
        input: {
          name: 'Block listed addresses (gql)',
          group: 'BEFORE',
          action: 'DENY',
          conditions: { inLists: [list.id] },
        },
      })
    ).createPolicy;
    expect(policy.conditions).toEqual({ inLists: [list.id], notInLists: null });
    expect((await data(`query($id: ID!) { list(id: $id) { usedBy } }`, { id: list.id })).list.usedBy).toEqual(
      ['Block listed addresses (gql)'],
    );
    // A list a policy names cannot be deleted.
    const del = await gql(`mutation($id: ID!) { deleteList(id: $id) }`, { id: list.id });
    expect(codes(del)).toEqual(['BAD_USER_INPUT']);
    expect(fields(del)).toEqual(['id']);

    const before = await login('gql-listed', '192.0.2.44');
    expect(before.policy.action).not.toBe('deny');
    const item = (
      await data(ADD, { l: list.id, input: { value: '192.0.2.0/24', comment: 'seen in incident 7' } })
    ).addListItem;
    const after = await login('gql-listed', '192.0.2.44');
    expect(after.policy).toMatchObject({ action: 'deny', name: 'Block listed addresses (gql)' });
    expect(after.signals.in_list).toMatchObject({
      list_id: list.id,
      list_name: list.name,
      item_id: item.id,
      value: '192.0.2.0/24',
      field: 'ip',
    });
    expect((await login('gql-unlisted', '198.51.100.200')).policy.action).not.toBe('deny');

    // The dry run takes list conditions too: a notInLists draft changes nothing listed.
    const dry = await data(
      `query($l: ID!) { policyDryRun(days: 1, drafts: [{ create: { name: "d", group: BEFORE, action: DENY, conditions: { notInLists: [$l] } } }]) { scanned changed } }`,
      { l: list.id },
    );
    expect(dry.policyDryRun.scanned).toBeGreaterThanOrEqual(0);
    const dryBad = await gql(
      `{ policyDryRun(days: 1, drafts: [{ create: { name: "d", group: BEFORE, action: DENY, conditions: { inLists: ["no-such-list"] } } }]) { scanned } }`,
    );
    expect(codes(dryBad)).toEqual(['BAD_USER_INPUT']);

    await data(`mutation($id: ID!) { archivePolicy(id: $id) { id } }`, { id: policy.id });
  });
});

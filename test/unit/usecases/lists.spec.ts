/** Lists (ListService) and the policy conditions on them, on in-memory fakes and fake time. */
import { createFakeServices } from '../../support/fakes';

const login = (user: string, ip: string, extra: Record<string, unknown> = {}) => ({
  event: '$login',
  status: '$succeeded',
  user: { id: user, email: `${user}@example.com` },
  context: {
    ip,
    headers: {
      'User-Agent':
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36',
      'Accept-Language': 'en-GB',
    },
  },
  ...extra,
});
const actor = { type: '$analyst_email', identifier: 'ana@example.com' };

describe('lists in verdicts', () => {
  it('in list / not in list decide; the signal names the list and the item', async () => {
    const s = createFakeServices();
    const { principal, env } = await s.environment();
    const block = await s.lists.create(env.id, actor, { name: 'Blocked', color: '$red', primaryField: 'ip' });
    const staff = await s.lists.create(env.id, actor, {
      name: 'Staff',
      color: '$green',
      primaryField: 'user.email',
    });
    await s.policies.create(env.id, {
      name: 'Deny blocked unless staff',
      group: 'before',
      action: 'deny',
      conditions: { inLists: [block.id], notInLists: [staff.id] },
    });
    const item = await s.lists.createItem(env.id, actor, block.id, {
      primaryValue: '203.0.113.0/24',
      comment: 'ring',
    });
    const denied = await s.verdicts.evaluate(principal, 'risk', login('u1', '203.0.113.5'));
    expect(denied.action).toBe('deny');
    expect(denied.signals.in_list).toMatchObject({
      list_id: block.id,
      list_name: 'Blocked',
      item_id: item.id,
      value: '203.0.113.0/24',
      score: 0,
    });
    await s.lists.createItem(env.id, actor, staff.id, { primaryValue: 'u1@example.com' });
    const allowed = await s.verdicts.evaluate(principal, 'risk', login('u1', '203.0.113.5'));
    expect(allowed.action).toBe('allow');
    expect(String(allowed.signals.in_list?.list_ids).split(',').sort()).toEqual([block.id, staff.id].sort());
  });

  it('an expired item stops matching at its expiry', async () => {
    const s = createFakeServices();
    const { principal, env } = await s.environment();
    const block = await s.lists.create(env.id, actor, {
      name: 'Blocked',
      color: '$red',
      primaryField: 'user.id',
    });
    await s.policies.create(env.id, {
      name: 'Deny listed',
      group: 'before',
      action: 'deny',
      conditions: { inLists: [block.id] },
    });
    await s.verdicts.evaluate(principal, 'risk', login('u2', '81.2.69.142'));
    await s.lists.createItem(env.id, actor, block.id, {
      primaryValue: 'u2',
      expiresAt: new Date(s.time.clock.now().getTime() + 60_000).toISOString(),
    });
    expect((await s.verdicts.evaluate(principal, 'risk', login('u2', '81.2.69.142'))).action).toBe('deny');
    await s.time.advance(60_000);
    expect((await s.verdicts.evaluate(principal, 'risk', login('u2', '81.2.69.142'))).action).toBe('allow');
  });

  it("another instance's change is seen after the cache period and one read", async () => {
    const s = createFakeServices();
    const { principal, env } = await s.environment();
    const block = await s.lists.create(env.id, actor, {
      name: 'Blocked',
      color: '$red',
      primaryField: 'user.id',
    });
    await s.policies.create(env.id, {
      name: 'Deny listed',
      group: 'before',
      action: 'deny',
      conditions: { inLists: [block.id] },
    });
    expect((await s.verdicts.evaluate(principal, 'risk', login('u3', '81.2.69.142'))).action).toBe('allow');
    // Another instance writes straight to the shared store.
    const { ListService } = await import('../../../src/core/lists/service');
    const other = new ListService({ store: s.listStore, audit: s.audit, clock: s.time.clock });
    await other.createItem(env.id, actor, block.id, { primaryValue: 'u3' });
    expect((await s.verdicts.evaluate(principal, 'risk', login('u3', '81.2.69.142'))).action).toBe('allow');
    await s.time.advance(1000);
    // The verdict after the delay starts the refresh and answers what it has; the refresh lands.
    await s.verdicts.evaluate(principal, 'risk', login('u3', '81.2.69.142'));
    await new Promise((r) => setImmediate(r));
    expect((await s.verdicts.evaluate(principal, 'risk', login('u3', '81.2.69.142'))).action).toBe('deny');
  });

  it("an item added here to a list another instance made is matched by this instance's next verdict", async () => {
    const s = createFakeServices();
    const { principal, env } = await s.environment();
    // This instance compiles the environment's lists (none yet) with its first verdict.
    expect((await s.verdicts.evaluate(principal, 'risk', login('u5', '81.2.69.142'))).action).toBe('allow');
    const { ListService } = await import('../../../src/core/lists/service');
    const other = new ListService({ store: s.listStore, audit: s.audit, clock: s.time.clock });
    const block = await other.create(env.id, actor, {
      name: 'Made elsewhere',
      color: '$red',
      primaryField: 'user.id',
    });
    await s.policies.create(env.id, {
      name: 'Deny listed',
      group: 'before',
      action: 'deny',
      conditions: { inLists: [block.id] },
    });
    await s.lists.createItem(env.id, actor, block.id, { primaryValue: 'u5' });
    const next = await s.verdicts.evaluate(principal, 'risk', login('u5', '81.2.69.142'));
    expect(next.action).toBe('deny');
    expect(next.signals.in_list?.list_id).toBe(block.id);
  });

  it('the dry run matches lists on stored verdicts', async () => {
    const s = createFakeServices();
    const { env } = await s.environment();
    const block = await s.lists.create(env.id, actor, { name: 'Blocked', color: '$red', primaryField: 'ip' });
    await s.lists.createItem(env.id, actor, block.id, { primaryValue: '192.0.2.0/24' });
    const { PolicyDryRunService } = await import('../../../src/core/policies/dry-run');
    const now = s.time.clock.now();
    const points = [
      {
        id: 'e1',
        name: '$login.succeeded',
        at: now,
        action: 'allow' as const,
        risk: 0.1,
        signals: [],
        country: null,
        userId: 'u',
        deviceToken: null,
        ip: '192.0.2.7',
        email: null,
        asn: null,
        policyName: 'Allow everything else',
      },
      {
        id: 'e2',
        name: '$login.succeeded',
        at: now,
        action: 'allow' as const,
        risk: 0.1,
        signals: [],
        country: null,
        userId: 'u',
        deviceToken: null,
        ip: '198.51.100.7',
        email: null,
        asn: null,
        policyName: 'Allow everything else',
      },
    ];
    const events = {
      decisions: async () => ({ points, truncated: false }),
      reviewedDevices: async () => [],
    } as never;
    const dry = new PolicyDryRunService({
      policies: s.policies,
      events,
      clock: s.time.clock,
      lists: s.lists,
    });
    const r = await dry.run(env.id, {
      drafts: [
        {
          create: {
            name: 'Deny blocked',
            group: 'before',
            action: 'deny',
            conditions: { inLists: [block.id] },
          },
        },
      ],
    });
    expect(r.changed).toBe(1);
    expect(r.samples[0]).toMatchObject({ eventId: 'e1', before: 'allow', after: 'deny' });
  });

  it('every change is audited with who, when and what', async () => {
    const s = createFakeServices();
    const { env } = await s.environment();
    const l = await s.lists.create(env.id, actor, { name: 'Watch', color: '$blue', primaryField: 'ip.asn' });
    const i = await s.lists.createItem(env.id, actor, l.id, { primaryValue: 'AS64500' });
    await s.lists.updateItem(env.id, actor, l.id, i.id, { comment: 'hosting' });
    await s.lists.archiveItem(env.id, actor, l.id, i.id);
    await s.lists.unarchiveItem(env.id, actor, l.id, i.id);
    await s.lists.update(env.id, actor, l.id, { name: 'Watched ASNs' });
    await s.lists.delete(env.id, actor, l.id);
    expect(s.audit.entries.map((e) => e.action)).toEqual([
      'list.create',
      'list_item.create',
      'list_item.update',
      'list_item.archive',
      'list_item.unarchive',
      'list.update',
      'list.delete',
    ]);
    expect(s.audit.entries[1]).toMatchObject({
      actor,
      target: { kind: 'list_item', id: i.id, listId: l.id },
      detail: { value: '64500' },
    });
  });
});

describe('a write cut off part-way', () => {
  it('is counted as the store holds it, and matched once read again', async () => {
    const s = createFakeServices();
    const { principal, env } = await s.environment();
    const block = await s.lists.create(env.id, actor, { name: 'Blocked', color: '$red', primaryField: 'ip' });
    await s.policies.create(env.id, {
      name: 'Deny blocked',
      group: 'before',
      action: 'deny',
      conditions: { inLists: [block.id] },
    });
    await s.lists.createItem(env.id, actor, block.id, { primaryValue: '198.51.100.1' });
    // Compiled and answering from memory.
    expect(await s.lists.countItems(env.id, block.id, undefined)).toBe(1);
    expect((await s.verdicts.evaluate(principal, 'risk', login('u1', '198.51.100.1'))).action).toBe('deny');
    // The database goes away in the middle of a batch: its first item is stored, then the write fails.
    const putItems = s.listStore.putItems.bind(s.listStore);
    s.listStore.putItems = async (items) => {
      await putItems(items.slice(0, 1));
      throw new Error('connection closed');
    };
    await expect(
      s.lists.createItems(env.id, actor, block.id, [
        { primaryValue: '198.51.100.2' },
        { primaryValue: '198.51.100.3' },
      ]),
    ).rejects.toThrow('connection closed');
    s.listStore.putItems = putItems;
    // What the store holds, not what this process last compiled.
    expect(await s.lists.countItems(env.id, block.id, undefined)).toBe(2);
    // Read again, the stored half of the batch is matched; the other half is not there.
    await waitForMatch(
      async () => (await s.verdicts.evaluate(principal, 'risk', login('u2', '198.51.100.2'))).action,
    );
    expect((await s.verdicts.evaluate(principal, 'risk', login('u3', '198.51.100.3'))).action).toBe('allow');
  });
});

/** A few verdicts: the first after the reload starts it, a later one sees it (no clock involved). */
async function waitForMatch(action: () => Promise<string>): Promise<void> {
  let last = '';
  for (let i = 0; i < 5 && last !== 'deny'; i++) last = await action();
  expect(last).toBe('deny');
}

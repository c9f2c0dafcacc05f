/** The lists matcher: networks (IPv4 and IPv6, nested, overlapping by nesting), exact values, expiry, archiving. */
import {
  CompiledList,
  CompiledLists,
  IpRanges,
  matchLists,
  type EventValues,
  type MatchEntry,
} from '../../../src/core/lists/matcher';
import { normaliseValue, writeAddressWords } from '../../../src/core/lists/values';
import { LIST_FIELDS, type List, type ListItem } from '../../../src/core/lists/model';
import { asEnvId } from '../../../src/core/model';

const env = asEnvId('e1');
const T0 = Date.parse('2030-01-01T00:00:00Z');
let seq = 0;
const list = (primaryField: string, secondaryField: string | null = null): List => ({
  id: `l${++seq}`,
  envId: env,
  name: `list ${seq}`,
  color: '$red',
  description: null,
  primaryField,
  type: LIST_FIELDS[primaryField] as List['type'],
  secondaryField,
  secondaryType: secondaryField ? (LIST_FIELDS[secondaryField] as List['type']) : null,
  createdAt: new Date(T0),
  updatedAt: new Date(T0),
});
const item = (l: List, raw: string, o: Partial<ListItem> = {}): ListItem => {
  const n = normaliseValue(l.type, raw);
  if (!n.ok) throw new Error(`${raw}: ${n.message}`);
  return {
    id: `i${++seq}`,
    envId: env,
    listId: l.id,
    primaryValue: n.value,
    secondaryValue: null,
    comment: null,
    author: { type: '$test', identifier: 't' },
    createdAt: new Date(T0),
    updatedAt: new Date(T0),
    expiresAt: null,
    archived: false,
    archivedAt: null,
    ...o,
  };
};
const values = (o: Partial<EventValues>): EventValues => ({
  userId: null,
  email: null,
  emailDomain: null,
  ip: null,
  asn: null,
  country: null,
  devices: [],
  machine: null,
  shape: null,
  ...o,
});

describe('normaliseValue', () => {
  it.each([
    ['ip', '203.0.113.7', '203.0.113.7'],
    ['ip', '203.0.113.7/24', '203.0.113.0/24'],
    ['ip', '203.0.113.7/32', '203.0.113.7'],
    ['ip', '::ffff:203.0.113.7', '203.0.113.7'],
    ['ip', '2001:DB8:0:0::1/32', '2001:db8::/32'],
    ['ip', '2001:db8::1', '2001:db8::1'],
    ['ip', '0.0.0.0/0', '0.0.0.0/0'],
    ['user.email', ' Ana@Example.COM ', 'ana@example.com'],
    ['email.domain', '@Example.com', 'example.com'],
    ['ip.asn', 'as13335', '13335'],
    ['ip.country_code', 'de', 'DE'],
    ['user.id', ' Case-Kept ', 'Case-Kept'],
  ])('%s %j → %j', (field, raw, want) => {
    expect(normaliseValue(LIST_FIELDS[field] as List['type'], raw)).toEqual({ ok: true, value: want });
  });
  it.each([
    ['ip', '1.2.3'],
    ['ip', '01.2.3.4'],
    ['ip', '1.2.3.4/33'],
    ['ip', '::/129'],
    ['ip', '1.2.3.4/-1'],
    ['user.email', 'a@b'],
    ['ip.asn', '0'],
    ['ip.asn', '4294967296'],
    ['ip.country_code', 'DEU'],
    ['user.id', ''],
    ['user.id', 'a\u0007b'],
  ])('%s %j is refused', (field, raw) => {
    expect(normaliseValue(LIST_FIELDS[field] as List['type'], raw).ok).toBe(false);
  });
});

describe('IpRanges', () => {
  const words = (ip: string) => {
    const w = new Uint32Array(4);
    if (!writeAddressWords(ip, w)) throw new Error(`${ip} is not an address`);
    return w;
  };
  const e = (id: string): MatchEntry => ({
    itemId: id,
    listId: 'l',
    value: id,
    secondary: null,
    expiresAtMs: Infinity,
    active: true,
  });
  const ranges = new IpRanges(
    [
      '10.0.0.0/8',
      '10.1.0.0/16',
      '10.1.2.0/24',
      '10.1.2.3',
      '192.168.0.0/16',
      '0.0.0.0/0',
      '2001:db8::/32',
      '2001:db8:1::/48',
      '255.255.255.255',
      '::/0',
    ].map((v) => ({
      value: normaliseValue('ip', v).ok ? (normaliseValue('ip', v) as { value: string }).value : v,
      entry: e(v),
    })),
  );
  const any = () => true;
  it.each([
    ['10.1.2.3', '10.1.2.3'],
    ['10.1.2.4', '10.1.2.0/24'],
    ['10.1.3.1', '10.1.0.0/16'],
    ['10.2.0.0', '10.0.0.0/8'],
    ['10.255.255.255', '10.0.0.0/8'],
    ['11.0.0.0', '0.0.0.0/0'],
    ['192.168.255.255', '192.168.0.0/16'],
    ['255.255.255.255', '255.255.255.255'],
    ['2001:db8:1::5', '2001:db8:1::/48'],
    ['2001:db8:2::5', '2001:db8::/32'],
    ['2001:db9::1', '::/0'],
  ])('%s is in %s (the innermost network)', (ip, want) => {
    expect(ranges.find(words(ip), any)?.itemId).toBe(want);
  });
  it('walks out to the enclosing networks when the innermost entry is not usable', () => {
    expect(
      ranges.find(words('10.1.2.3'), (x) => x.itemId !== '10.1.2.3' && x.itemId !== '10.1.2.0/24')?.itemId,
    ).toBe('10.1.0.0/16');
  });
  it('finds networks added after the build, before and after the rebuild', () => {
    const r = new IpRanges([]);
    expect(r.find(words('172.16.0.1'), any)).toBeNull();
    for (let i = 0; i < 100; i++) r.add(`172.16.${i}.0/24`, e(`n${i}`));
    expect(r.find(words('172.16.99.200'), any)?.itemId).toBe('n99');
    expect(r.find(words('172.16.100.1'), any)).toBeNull();
  });
  it('matches 10,000 random networks as a scan would', () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const nets: { a: number; bits: number }[] = [];
    for (let i = 0; i < 10_000; i++) {
      const bits = 8 + (rnd() % 25);
      const mask = bits === 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0;
      nets.push({ a: (rnd() * 2 + (rnd() & 1)) & mask, bits });
    }
    const text = (a: number) => [a >>> 24, (a >>> 16) & 255, (a >>> 8) & 255, a & 255].join('.');
    const r = new IpRanges(
      nets.map((n, i) => ({
        value: n.bits === 32 ? text(n.a >>> 0) : `${text(n.a >>> 0)}/${n.bits}`,
        entry: e(String(i)),
      })),
    );
    // The scan: every network's mask and masked address, computed once.
    const masks = Uint32Array.from(nets, (n) =>
      n.bits === 32 ? 0xffffffff : (0xffffffff << (32 - n.bits)) >>> 0,
    );
    const starts = Uint32Array.from(nets, (n, i) => (n.a & (masks[i] as number)) >>> 0);
    const wrong: [string, boolean][] = [];
    let found = 0;
    for (let k = 0; k < 2000; k++) {
      const probe = k % 2 ? (nets[rnd() % nets.length] as { a: number }).a + (rnd() % 256) : rnd() * 2;
      const ip = text(probe >>> 0);
      let inside = false;
      for (let i = 0; i < masks.length && !inside; i++)
        inside = ((probe >>> 0) & (masks[i] as number)) >>> 0 === starts[i];
      if (inside) found++;
      if ((r.find(words(ip), any) !== null) !== inside) wrong.push([ip, inside]);
    }
    // One expect for the lot (2,000 of them take a second), naming every probe answered wrongly.
    expect(wrong).toEqual([]);
    // Both answers occur (most probes fall in one of so many networks).
    expect(found).toBeGreaterThan(0);
    expect(found).toBeLessThan(2000);
  });
});

describe('matchLists', () => {
  const ipList = list('ip');
  const emailList = list('user.email');
  const domainList = list('email.domain');
  const deviceList = list('device.fingerprint');
  const pairList = list('user.id', 'ip');
  const soon = item(ipList, '198.51.100.0/24', { expiresAt: new Date(T0 + 60_000) });
  const compiled = new CompiledLists(1, [
    new CompiledList(ipList, [item(ipList, '203.0.113.0/24'), soon, item(ipList, '2001:db8::/32')]),
    new CompiledList(emailList, [item(emailList, 'fraud@example.com')]),
    new CompiledList(domainList, [item(domainList, 'mailinator.com')]),
    new CompiledList(deviceList, [item(deviceList, 'tok_123')]),
    new CompiledList(pairList, [item(pairList, 'u1', { secondaryValue: '192.0.2.1' })]),
  ]);
  const ids = (v: Partial<EventValues>, now = T0) =>
    matchLists(compiled, values(v), now)
      .map((m) => `${m.list.primaryField}:${m.entry.value}`)
      .sort();
  it.each<[string, Partial<EventValues>, string[]]>([
    ['an address in a network', { ip: '203.0.113.77' }, ['ip:203.0.113.0/24']],
    ['an IPv6 address', { ip: '2001:db8:ffff::1' }, ['ip:2001:db8::/32']],
    ['an address outside', { ip: '203.0.114.1' }, []],
    [
      'an e-mail (lower-cased by the event)',
      { email: 'fraud@example.com' },
      ['user.email:fraud@example.com'],
    ],
    ['a domain', { emailDomain: 'mailinator.com' }, ['email.domain:mailinator.com']],
    ['any name of the device', { devices: ['d:key', 'tok_123'] }, ['device.fingerprint:tok_123']],
    ['a pair: both values', { userId: 'u1', ip: '192.0.2.1' }, ['user.id:u1']],
    ['a pair: one value only', { userId: 'u1', ip: '192.0.2.2' }, []],
    [
      'several lists',
      { ip: '203.0.113.1', email: 'fraud@example.com' },
      ['ip:203.0.113.0/24', 'user.email:fraud@example.com'],
    ],
    ['nothing', {}, []],
  ])('%s', (_name, v, want) => {
    expect(ids(v)).toEqual(want);
  });
  it('an item stops matching at its expiry', () => {
    expect(ids({ ip: '198.51.100.5' }, T0 + 59_999)).toEqual(['ip:198.51.100.0/24']);
    expect(ids({ ip: '198.51.100.5' }, T0 + 60_000)).toEqual([]);
  });
  it('an archived item stops matching at once; a new one matches at once', () => {
    const l = list('ip');
    const first = item(l, '192.0.2.0/24');
    const c = new CompiledLists(1, [new CompiledList(l, [first])]);
    expect(matchLists(c, values({ ip: '192.0.2.9' }), T0)).toHaveLength(1);
    c.byId.get(l.id)?.apply({ ...first, archived: true });
    expect(matchLists(c, values({ ip: '192.0.2.9' }), T0)).toHaveLength(0);
    c.byId.get(l.id)?.apply(item(l, '192.0.2.9'));
    expect(matchLists(c, values({ ip: '192.0.2.9' }), T0)[0]?.entry.value).toBe('192.0.2.9');
  });
});

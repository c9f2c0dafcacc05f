/**
 * Where an address's window is kept with its network's (addressWindowFold), and how a host is
 * named inside its network (hostInNetwork): every kind of address value a window can have.
 */
import { addressWindowFold } from '../../../src/core/scoring/counters';
import { hostInNetwork } from '../../../src/core/scoring/features';

describe('hostInNetwork', () => {
  it.each([
    ['81.2.69.142', 'o142'],
    ['10.0.0.0', 'o0'],
    ['2001:db8:85a3:8d3::/64', 'h8d3'],
    ['2001:DB8:85A3:8D3::/64', 'h8d3'],
    ['2001:db8::/64', 'h0'],
    ['81.2.69', null],
    ['not-an-address', null],
    ['2001:db8:85a3:zzzz::/64', null],
  ])('%s → %p', (host, part) => {
    expect(hostInNetwork(host)).toBe(part);
  });
});

describe('addressWindowFold', () => {
  it.each([
    ['w:ip:81.2.69.142:498801', { doc: 'w:net:81.2.69.0/24:498801', part: 'o142' }],
    ['w:ip:2001:db8:85a3:8d3::/64:498801', { doc: 'w:net:2001:db8:85a3::/48:498801', part: 'h8d3' }],
    ['w:net:81.2.69.0/24:498801', null],
    ['w:dev:f:abc:498801', null],
    ['p:asn:AS3320', null],
    ['w:ip:garbage:498801', null],
  ])('%s → %p', (key, fold) => {
    expect(addressWindowFold(key)).toEqual(fold);
  });

  it('names a part that is a valid counter name with any count or set name after it', () => {
    for (const host of ['255.255.255.255', 'ffff:ffff:ffff:ffff::/64']) {
      const part = addressWindowFold(`w:ip:${host}:1`)!.part;
      for (const name of ['a', 'uf', 'x11']) expect(`${part}_${name}`).toMatch(/^[a-z_][a-z0-9_]{0,31}$/);
    }
  });
});

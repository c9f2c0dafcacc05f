/**
 * The client's address behind proxies (doors/proxies.ts): the right-most hop of the chain that is
 * not a trusted proxy, so that what a client writes into X-Forwarded-For is never read as its
 * address.
 */
import { clientAddress, parseTrustedProxies, proxyTrust } from '../../../src/doors/proxies';

const behind = (spec: string) => proxyTrust(parseTrustedProxies(spec));

describe('proxyTrust', () => {
  it('trusts the listed addresses and networks, IPv4 as a dual-stack socket reports it included', () => {
    const t = behind('10.0.0.0/8,192.0.2.7,2001:db8::/32');
    expect(['10.1.2.3', '::ffff:10.1.2.3', '192.0.2.7', '2001:db8::1'].map(t)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['11.0.0.1', '192.0.2.8', '2001:db9::1', 'not-an-address', ''].map(t)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it('true is loopback and the private networks, nothing public', () => {
    const t = behind('true');
    expect(['127.0.0.1', '::1', '10.0.0.5', '172.20.0.1', '192.168.1.1', 'fd00::1'].map(t)).toEqual([
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(['203.0.113.9', '172.32.0.1', '2001:db8::1', '169.254.1.1'].map(t)).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(behind('false')('127.0.0.1')).toBe(false);
  });
});

describe('clientAddress', () => {
  const t = behind('127.0.0.1,10.0.0.0/8');

  it('is the peer when the peer is not a trusted proxy, whatever it forwards', () => {
    expect(clientAddress('203.0.113.9', '198.51.100.1', t)).toBe('203.0.113.9');
    expect(clientAddress('::ffff:203.0.113.9', undefined, t)).toBe('203.0.113.9');
    expect(clientAddress(null, '198.51.100.1', t)).toBeNull();
  });

  it('is the right-most hop that is not a trusted proxy: what a client wrote to the left is never read', () => {
    // The client wrote 192.0.2.1 (a backend's address, or a new one per request); the proxy appended the address it saw.
    expect(clientAddress('127.0.0.1', '192.0.2.1, 198.51.100.7', t)).toBe('198.51.100.7');
    // Two proxies: the outer (10.0.0.2) appended the client, the inner one (the peer) appended the outer.
    expect(clientAddress('127.0.0.1', '192.0.2.1, 198.51.100.7, 10.0.0.2', t)).toBe('198.51.100.7');
    // The header repeated counts as one list, in order.
    expect(clientAddress('127.0.0.1', ['192.0.2.1', '198.51.100.7'], t)).toBe('198.51.100.7');
  });

  it('is the left-most hop when every hop is trusted, and the peer when nothing is forwarded', () => {
    expect(clientAddress('127.0.0.1', '10.0.0.9, 10.0.0.2', t)).toBe('10.0.0.9');
    expect(clientAddress('127.0.0.1', undefined, t)).toBe('127.0.0.1');
    expect(clientAddress('127.0.0.1', '', t)).toBe('127.0.0.1');
  });
});

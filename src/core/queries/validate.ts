/** Validation of read-side filters: one place, so every door refuses the same input the same way. */
import { InvalidParameters, type FieldProblem } from '../errors';
import { ACTIONS } from '../model';
import type { DeviceFilter, EventFilter, RejectedFilter } from './model';

const COUNTRY = /^[A-Z]{2}$/;
const MAX_TEXT = 1024;

function text(p: FieldProblem[], field: string, v: string | undefined): void {
  if (v !== undefined && (typeof v !== 'string' || v.length === 0 || v.length > MAX_TEXT))
    p.push({ field, message: `must be 1-${MAX_TEXT} characters` });
}

function range(
  p: FieldProblem[],
  fromField: string,
  toField: string,
  from: Date | undefined,
  to: Date | undefined,
): void {
  for (const [field, d] of [
    [fromField, from],
    [toField, to],
  ] as const) {
    if (d !== undefined && (!(d instanceof Date) || Number.isNaN(d.getTime())))
      p.push({ field, message: 'must be a valid instant' });
  }
  if (from && to && from.getTime() >= to.getTime())
    p.push({ field: toField, message: `must be after ${fromField}` });
}

/**
 * The leading octets of an IPv4 network of prefix /24, /16 or /8 (`81.2.69.0/24` → `81.2.69.`),
 * or null when it is not one: what an address in it starts with.
 */
export function ipv4Network(network: string): string | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(8|16|24)$/.exec(network);
  if (!m) return null;
  const octets = m.slice(1, 5).map(Number);
  if (octets.some((o) => o > 255)) return null;
  const kept = Number(m[5]) / 8;
  if (octets.slice(kept).some((o) => o !== 0)) return null;
  return `${octets.slice(0, kept).join('.')}.`;
}

/** Throws InvalidParameters naming each bad field of an event filter. */
export function validateEventFilter(f: EventFilter, field = 'filter'): void {
  const p: FieldProblem[] = [];
  for (const k of ['name', 'signal', 'userId', 'deviceToken', 'ip', 'email', 'policyId'] as const)
    text(p, `${field}.${k}`, f[k]);
  if (f.network !== undefined && ipv4Network(f.network) === null)
    p.push({
      field: `${field}.network`,
      message: 'must be an IPv4 network of prefix /24, /16 or /8, e.g. 81.2.69.0/24',
    });
  if (f.action !== undefined && !ACTIONS.includes(f.action))
    p.push({ field: `${field}.action`, message: 'must be allow, challenge or deny' });
  if (f.asn !== undefined && (!Number.isInteger(f.asn) || f.asn < 0 || f.asn > 4_294_967_295))
    p.push({ field: `${field}.asn`, message: 'must be an AS number' });
  if (f.country !== undefined && !COUNTRY.test(f.country))
    p.push({ field: `${field}.country`, message: 'must be an ISO country code (two capital letters)' });
  range(p, `${field}.from`, `${field}.to`, f.from, f.to);
  if (p.length) throw new InvalidParameters(p);
}

/** Throws InvalidParameters naming each bad field of a device filter. */
export function validateDeviceFilter(f: DeviceFilter, field = 'filter'): void {
  const p: FieldProblem[] = [];
  text(p, `${field}.userId`, f.userId);
  if (f.country !== undefined && !COUNTRY.test(f.country))
    p.push({ field: `${field}.country`, message: 'must be an ISO country code (two capital letters)' });
  // Named as the filter's input names them (minRisk/maxRisk).
  for (const [k, name] of [
    ['minRiskScore', 'minRisk'],
    ['maxRiskScore', 'maxRisk'],
  ] as const) {
    const v = f[k];
    if (v !== undefined && (!Number.isInteger(v) || v < 0 || v > 100))
      p.push({ field: `${field}.${name}`, message: 'must be an integer from 0 to 100' });
  }
  if (f.minRiskScore !== undefined && f.maxRiskScore !== undefined && f.minRiskScore > f.maxRiskScore)
    p.push({ field: `${field}.maxRisk`, message: 'must not be below minRisk' });
  range(p, `${field}.lastSeenFrom`, `${field}.lastSeenTo`, f.lastSeenFrom, f.lastSeenTo);
  if (p.length) throw new InvalidParameters(p);
}

export function validateRejectedFilter(f: RejectedFilter, field = 'filter'): void {
  const p: FieldProblem[] = [];
  text(p, `${field}.userId`, f.userId);
  range(p, `${field}.from`, `${field}.to`, f.from, f.to);
  if (p.length) throw new InvalidParameters(p);
}

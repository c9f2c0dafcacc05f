/** Validation of read-side filters: one place, so every door refuses the same input the same way. */
import { InvalidParameters, type FieldProblem } from '../errors';
import { ACTIONS } from '../model';
import type { DeviceFilter, EventFilter, RejectedFilter } from './model';

const COUNTRY = /^[A-Z]{2}$/;
const MAX_TEXT = 1024;

function text(p: FieldProblem[], field: string, v: string | undefined): void {
  if (v !== undefined && (typeof v !== 'string' || v.length === 0 || v.length > MAX_TEXT)) p.push({ field, message: `must be 1-${MAX_TEXT} characters` });
}

function range(p: FieldProblem[], fromField: string, toField: string, from: Date | undefined, to: Date | undefined): void {
  for (const [field, d] of [[fromField, from], [toField, to]] as const) {
    if (d !== undefined && (!(d instanceof Date) || Number.isNaN(d.getTime()))) p.push({ field, message: 'must be a valid instant' });
  }
  if (from && to && from.getTime() >= to.getTime()) p.push({ field: toField, message: `must be after ${fromField}` });
}

/** Throws InvalidParameters naming each bad field of an event filter. */
export function validateEventFilter(f: EventFilter, field = 'filter'): void {
  const p: FieldProblem[] = [];
  for (const k of ['name', 'signal', 'userId', 'deviceToken', 'ip'] as const) text(p, `${field}.${k}`, f[k]);
  if (f.action !== undefined && !ACTIONS.includes(f.action)) p.push({ field: `${field}.action`, message: 'must be allow, challenge or deny' });
  if (f.asn !== undefined && (!Number.isInteger(f.asn) || f.asn < 0 || f.asn > 4_294_967_295)) p.push({ field: `${field}.asn`, message: 'must be an AS number' });
  if (f.country !== undefined && !COUNTRY.test(f.country)) p.push({ field: `${field}.country`, message: 'must be an ISO country code (two capital letters)' });
  range(p, `${field}.from`, `${field}.to`, f.from, f.to);
  if (p.length) throw new InvalidParameters(p);
}

/** Throws InvalidParameters naming each bad field of a device filter. */
export function validateDeviceFilter(f: DeviceFilter, field = 'filter'): void {
  const p: FieldProblem[] = [];
  text(p, `${field}.userId`, f.userId);
  if (f.country !== undefined && !COUNTRY.test(f.country)) p.push({ field: `${field}.country`, message: 'must be an ISO country code (two capital letters)' });
  // Named as the filter's input names them (minRisk/maxRisk).
  for (const [k, name] of [['minRiskScore', 'minRisk'], ['maxRiskScore', 'maxRisk']] as const) {
    const v = f[k];
    if (v !== undefined && (!Number.isInteger(v) || v < 0 || v > 100)) p.push({ field: `${field}.${name}`, message: 'must be an integer from 0 to 100' });
  }
  if (f.minRiskScore !== undefined && f.maxRiskScore !== undefined && f.minRiskScore > f.maxRiskScore) p.push({ field: `${field}.maxRisk`, message: 'must not be below minRisk' });
  range(p, `${field}.lastSeenFrom`, `${field}.lastSeenTo`, f.lastSeenFrom, f.lastSeenTo);
  if (p.length) throw new InvalidParameters(p);
}

export function validateRejectedFilter(f: RejectedFilter, field = 'filter'): void {
  const p: FieldProblem[] = [];
  text(p, `${field}.userId`, f.userId);
  range(p, `${field}.from`, `${field}.to`, f.from, f.to);
  if (p.length) throw new InvalidParameters(p);
}

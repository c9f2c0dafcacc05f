/** A policy's conditions, as the API answers them, and in words. */

export interface Conditions {
  events: string[] | null;
  riskLevels: string[] | null;
  minRisk: number | null;
  maxRisk: number | null;
  signalsAny: string[] | null;
  signalsAll: string[] | null;
  countries: string[] | null;
  deviceStates: string[] | null;
}

/** "event ∈ {$login} and risk level ∈ {high}", or "every event". */
export function conditionText(c: Conditions): string {
  const parts: string[] = [];
  if (c.events?.length) parts.push(`event ∈ {${c.events.join(', ')}}`);
  if (c.riskLevels?.length) parts.push(`risk level ∈ {${c.riskLevels.map((l) => l.toLowerCase()).join(', ')}}`);
  if (c.minRisk !== null) parts.push(`risk ≥ ${c.minRisk}`);
  if (c.maxRisk !== null) parts.push(`risk ≤ ${c.maxRisk}`);
  if (c.signalsAny?.length) parts.push(`any of {${c.signalsAny.join(', ')}}`);
  if (c.signalsAll?.length) parts.push(`all of {${c.signalsAll.join(', ')}}`);
  if (c.countries?.length) parts.push(`country ∈ {${c.countries.join(', ')}}`);
  if (c.deviceStates?.length) parts.push(`device ${c.deviceStates.map((s) => s.toLowerCase()).join(' or ')}`);
  return parts.length ? parts.join(' and ') : 'every event';
}

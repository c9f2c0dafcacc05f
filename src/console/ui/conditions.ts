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
  inLists?: string[] | null;
  notInLists?: string[] | null;
}

/** The fields of PolicyConditions every page asks for. */
export const CONDITION_FIELDS =
  'events riskLevels minRisk maxRisk signalsAny signalsAll countries deviceStates inLists notInLists';

/**
 * "event ∈ {$login} and risk level ∈ {high}", or "every event". `listNames` names lists by id
 * (a list deleted since, or not given, shows as its id).
 */
export function conditionText(c: Conditions, listNames: ReadonlyMap<string, string> = new Map()): string {
  const parts: string[] = [];
  const lists = (ids: string[]) => ids.map((id) => listNames.get(id) ?? id).join(', ');
  if (c.events?.length) parts.push(`event ∈ {${c.events.join(', ')}}`);
  if (c.riskLevels?.length)
    parts.push(`risk level ∈ {${c.riskLevels.map((l) => l.toLowerCase()).join(', ')}}`);
  if (c.minRisk !== null) parts.push(`risk ≥ ${c.minRisk}`);
  if (c.maxRisk !== null) parts.push(`risk ≤ ${c.maxRisk}`);
  if (c.signalsAny?.length) parts.push(`any of {${c.signalsAny.join(', ')}}`);
  if (c.signalsAll?.length) parts.push(`all of {${c.signalsAll.join(', ')}}`);
  if (c.countries?.length) parts.push(`country ∈ {${c.countries.join(', ')}}`);
  if (c.deviceStates?.length) parts.push(`device ${c.deviceStates.map((s) => s.toLowerCase()).join(' or ')}`);
  if (c.inLists?.length) parts.push(`in list {${lists(c.inLists)}}`);
  if (c.notInLists?.length) parts.push(`not in list {${lists(c.notInLists)}}`);
  return parts.length ? parts.join(' and ') : 'every event';
}

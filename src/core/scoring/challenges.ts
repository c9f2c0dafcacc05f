/**
 * What a challenge teaches a user's record before and after its answer: the values an event
 * leaves in the tables, the pending challenge an answer settles, and, where the application does
 * not report answers, when the operator of an unanswered challenge may be learnt anyway.
 *
 * Pure: no I/O.
 */
import { LEVEL, type FeatureValues, type Features } from './features';
import type { Behaviour, PendingChallenge } from './behaviour-tables';
import { ANSWER_EARLY_MS, ANSWER_WITHIN_MS, RECURRING_AFTER_MS, RECURRING_WITHIN_MS } from './weights';

export { RECURRING_AFTER_MS, RECURRING_WITHIN_MS };

/** The values of an event that the tables keep. */
export const learnedValues = (f: Features): Partial<FeatureValues> => ({ ...f.values });

/** The challenge a `$challenge.succeeded/failed` answers: the latest one within a day before it. */
export function answeredChallenge(b: Behaviour, at: number): [string, PendingChallenge] | null {
  let best: [string, PendingChallenge] | null = null;
  for (const entry of Object.entries(b.pending)) {
    const [, p] = entry;
    if (p.at > at + ANSWER_EARLY_MS || at - p.at > ANSWER_WITHIN_MS) continue;
    if (!best || p.at > best[1].at) best = entry;
  }
  return best;
}

/*
 * RECURRING_AFTER_MS (weights.ts): how long before an unanswered challenge from the same operator
 * must lie for the operator to be learnt tentatively: a person challenged at the office on Monday
 * is there again on Tuesday; an attacker retrying from another address of the same network within
 * hours gains nothing. Older than RECURRING_WITHIN_MS, it does not count as the operator recurring.
 */

/**
 * Where the application does not report challenge answers: whether the event's operator was
 * already met at an unanswered challenge of this user between RECURRING_WITHIN_MS and
 * RECURRING_AFTER_MS before it (the user keeps coming back from it).
 */
export function recurringOperator(b: Behaviour, asn: string | null | undefined, at: number): boolean {
  if (!asn) return false;
  for (const p of Object.values(b.pending)) {
    const age = at - p.at;
    if (p.values[LEVEL.operator] === asn && age >= RECURRING_AFTER_MS && age <= RECURRING_WITHIN_MS)
      return true;
  }
  return false;
}

/** The levels that name the event's operator (alone, with the software, the network, the place; as an anonymiser). */
const OPERATOR_LEVELS = [
  LEVEL.operator,
  LEVEL.softwareOnOperator,
  LEVEL.networkInOperator,
  LEVEL.placeInOperator,
  LEVEL.anonymisingOperator,
] as const;

/** The values without the operator's: what an unanswered challenge teaches at first. */
export function withoutOperator(values: Partial<FeatureValues>): Partial<FeatureValues> {
  const out = { ...values };
  for (const level of OPERATOR_LEVELS) out[level] = null;
  return out;
}

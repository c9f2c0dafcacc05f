/**
 * Policies: ordered rules that turn an evaluated event (risk, signals, device state, country)
 * into an action. Every edit makes a new revision; old revisions stay readable.
 */
import type { Action, EnvId, PolicyRef, RiskLevel } from '../model';

/**
 * The policies a sandbox test token's forced verdict names (`policy.action:deny`): one fixed test
 * policy per action, with an id and a revision of its own, so that the answer never pairs the
 * forced action with the id and revision of the environment's policy that would have decided. The
 * ids are UUIDs like every policy's, but not random ones (those are version 4): no stored policy
 * ever has one. A test policy has one revision, whose id is the policy's.
 */
export const TEST_TOKEN_POLICIES: Readonly<Record<Action, PolicyRef>> = {
  allow: testTokenPolicy('allow', '00000000-0000-0000-0000-000000000001'),
  challenge: testTokenPolicy('challenge', '00000000-0000-0000-0000-000000000002'),
  deny: testTokenPolicy('deny', '00000000-0000-0000-0000-000000000003'),
};

function testTokenPolicy(action: Action, id: string): PolicyRef {
  return { id, revision: id, name: `Sandbox test token (${action})`, action };
}

/** Whether a verdict's policy is a sandbox test token's (see TEST_TOKEN_POLICIES). */
export function isTestTokenPolicy(id: string): boolean {
  return Object.values(TEST_TOKEN_POLICIES).some((p) => p.id === id);
}

export type PolicyGroup = 'before' | 'event' | 'after';
export const POLICY_GROUPS: readonly PolicyGroup[] = ['before', 'event', 'after'];
export type DeviceReviewState = 'approved' | 'reported' | 'unreviewed';

/** All conditions present must hold; an absent condition always holds. */
export interface PolicyConditions {
  /** Canonical event names the policy applies to. Empty or absent: every event. */
  events?: string[];
  riskLevels?: RiskLevel[];
  minRisk?: number;
  maxRisk?: number;
  /** At least one of these signals fired. */
  signalsAny?: string[];
  /** All of these signals fired. */
  signalsAll?: string[];
  /** ISO country codes of the IP. */
  countries?: string[];
  /** Review state of the device the event came from. */
  deviceStates?: DeviceReviewState[];
  /** Ids of lists (core/lists): the event is in at least one of them. */
  inLists?: string[];
  /** Ids of lists: the event is in none of them. */
  notInLists?: string[];
}

export interface PolicyDraft {
  name: string;
  group: PolicyGroup;
  conditions: PolicyConditions;
  action: Action;
}

export interface Policy extends PolicyDraft {
  id: string;
  envId: EnvId;
  revision: string;
  /** Position within its group; lower first. */
  position: number;
  archived: boolean;
  /** The environment's catch-all (allow when nothing else matched). Not editable in its action. */
  catchAll: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface PolicyRevision extends PolicyDraft {
  id: string;
  policyId: string;
  envId: EnvId;
  archived: boolean;
  createdAt: Date;
}

/** The set of policies of one environment, read and written as one unit. */
export interface PolicySet {
  envId: EnvId;
  version: number;
  policies: Policy[];
}

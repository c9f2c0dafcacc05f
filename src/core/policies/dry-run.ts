/**
 * Policy dry run: what a draft would have decided. The stored verdicts of the last days are read
 * through the analysts' bulkhead (bounded in days and in number, newest first) and decided again,
 * once by the policies as they are now and once with the draft applied, with the evidence each
 * verdict recorded (event, risk, signals, country) and the device's review state as it is now
 * (devices with feedback are read through the same bulkhead; every other device is unreviewed),
 * and the environment's lists as they are now, matched on what each event stored (user id, e-mail
 * and its domain, address, ASN, country, device token; machine and request shape are not stored,
 * so lists of those never match here). Nothing is written.
 */
import { InvalidParameters } from '../errors';
import type { Action, EnvId } from '../model';
import { ACTIONS } from '../model';
import type { Clock } from '../ports';
import type { AnalyticsStore, DecisionPoint } from '../analytics/ports';
import { riskLevel } from '../scoring/signals';
import type { PolicyDraftChange, PolicyService } from './service';
import { TEST_TOKEN_POLICIES, type DeviceReviewState, type PolicySet } from './model';
import type { ListService } from '../lists/service';
import { matchLists, NO_MATCHES, type CompiledLists, type ListMatch } from '../lists/matcher';

export const DRY_RUN_MAX_DAYS = 30;
export const DRY_RUN_MAX_EVENTS = 20_000;
/** Devices with feedback read at most (the rest count as unreviewed). */
export const DRY_RUN_MAX_REVIEWED_DEVICES = 50_000;
/** Changed verdicts kept as samples. */
export const DRY_RUN_SAMPLES = 100;
const DAY_MS = 86_400_000;
/** Sandbox test tokens force their action: a verdict their test policies decided keeps it. */
const FORCED: ReadonlySet<string> = new Set(Object.values(TEST_TOKEN_POLICIES).map((p) => p.name));

export interface DryRunChange {
  eventId: string;
  before: Action;
  beforePolicy: string;
  after: Action;
  afterPolicy: string;
}

export interface DryRunResult {
  from: Date;
  to: Date;
  scanned: number;
  truncated: boolean;
  before: { action: Action; count: number }[];
  after: { action: Action; count: number }[];
  changed: number;
  transitions: { from: Action; to: Action; count: number }[];
  /** Changed verdicts, newest first (at most DRY_RUN_SAMPLES). */
  samples: DryRunChange[];
}

export interface DryRunRequest {
  drafts: readonly PolicyDraftChange[];
  days?: number | null;
  maxEvents?: number | null;
}

export class PolicyDryRunService {
  constructor(
    private readonly d: {
      policies: PolicyService;
      events: AnalyticsStore;
      clock: Clock;
      lists?: ListService;
    },
  ) {}

  async run(env: EnvId, req: DryRunRequest): Promise<DryRunResult> {
    const days = req.days ?? 7;
    const maxEvents = req.maxEvents ?? 5000;
    const problems: { field: string; message: string }[] = [];
    if (!Number.isInteger(days) || days < 1 || days > DRY_RUN_MAX_DAYS)
      problems.push({ field: 'days', message: `must be an integer from 1 to ${DRY_RUN_MAX_DAYS}` });
    if (!Number.isInteger(maxEvents) || maxEvents < 1 || maxEvents > DRY_RUN_MAX_EVENTS)
      problems.push({ field: 'maxEvents', message: `must be an integer from 1 to ${DRY_RUN_MAX_EVENTS}` });
    if (req.drafts.length === 0 || req.drafts.length > 50)
      problems.push({ field: 'drafts', message: 'give 1-50 drafts' });
    if (problems.length) throw new InvalidParameters(problems);

    const { current, draft } = await this.d.policies.draftSet(env, req.drafts);
    const to = this.d.clock.now();
    const from = new Date(to.getTime() - days * DAY_MS);
    const { points, truncated } = await this.d.events.decisions(env, { from, to }, maxEvents);
    const states = new Map<string, DeviceReviewState>();
    if (points.some((p) => p.deviceToken))
      for (const r of await this.d.events.reviewedDevices(env, DRY_RUN_MAX_REVIEWED_DEVICES))
        states.set(r.token, r.state);

    const lists = this.d.lists ? await this.d.lists.forVerdicts(env) : null;
    const before = new Map<Action, number>();
    const after = new Map<Action, number>();
    const moves = new Map<string, { from: Action; to: Action; count: number }>();
    const samples: DryRunChange[] = [];
    let changed = 0;
    for (const p of points) {
      const matches = lists ? listsOf(lists, p, to.getTime()) : NO_MATCHES;
      const was = this.decide(current, p, states, matches);
      const would = this.decide(draft, p, states, matches);
      before.set(was.action, (before.get(was.action) ?? 0) + 1);
      after.set(would.action, (after.get(would.action) ?? 0) + 1);
      if (was.action === would.action) continue;
      changed++;
      const key = `${was.action}>${would.action}`;
      const m = moves.get(key) ?? { from: was.action, to: would.action, count: 0 };
      m.count++;
      moves.set(key, m);
      if (samples.length < DRY_RUN_SAMPLES)
        samples.push({
          eventId: p.id,
          before: was.action,
          beforePolicy: was.policy,
          after: would.action,
          afterPolicy: would.policy,
        });
    }
    const counts = (m: Map<Action, number>) =>
      ACTIONS.map((action) => ({ action, count: m.get(action) ?? 0 }));
    return {
      from,
      to,
      scanned: points.length,
      truncated,
      before: counts(before),
      after: counts(after),
      changed,
      transitions: [...moves.values()].sort((a, b) => b.count - a.count),
      samples,
    };
  }

  private decide(
    set: PolicySet,
    p: DecisionPoint,
    states: Map<string, DeviceReviewState>,
    lists: readonly ListMatch[],
  ): { action: Action; policy: string } {
    if (p.policyName && FORCED.has(p.policyName)) return { action: p.action, policy: p.policyName };
    const matched = this.d.policies.match(set, {
      event: p.name,
      risk: p.risk,
      level: riskLevel(p.risk),
      signals: p.signals,
      country: p.country,
      deviceState: (p.deviceToken && states.get(p.deviceToken)) || 'unreviewed',
      lists,
    });
    return { action: matched.action, policy: matched.name };
  }
}

/** The lists a stored verdict's values are in now. */
function listsOf(lists: CompiledLists, p: DecisionPoint, nowMs: number): readonly ListMatch[] {
  if (lists.size === 0) return NO_MATCHES;
  const email = p.email && p.email.includes('@') ? p.email.trim().toLowerCase() : null;
  return matchLists(
    lists,
    {
      userId: p.userId,
      email,
      emailDomain: email ? email.slice(email.lastIndexOf('@') + 1) : null,
      ip: p.ip ?? null,
      asn: p.asn ?? null,
      country: p.country,
      devices: p.deviceToken ? [p.deviceToken] : [],
      machine: null,
      shape: null,
    },
    nowMs,
  );
}

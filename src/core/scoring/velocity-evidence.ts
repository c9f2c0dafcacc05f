/**
 * Velocity across accounts: attempts, failures and sign-ups per address, network, operator,
 * device, machine, request shape, e-mail domain and across the environment, over the hour, the
 * last minutes and the day. Pure: no I/O.
 */
import type { SignalDetail } from '../model';
import { SIGNUP_RECENT_MINUTES, type DayCounts, type Window } from './population';
import { LEVEL } from './features';
import { languageMismatch } from './request-evidence';
import {
  BURST_ACCOUNTS_FROM,
  BURST_ACCOUNTS_FULL,
  BURST_LIFT,
  BURST_USUAL_SHARE_MIN,
  DEVICE_ACCOUNTS,
  ENV_USUAL_AFTER_HOURS,
  FAILURE_RATIO_FROM,
  FAILURE_RATIO_SPAN,
  HIGH_ACTIVITY_IP,
  HONEST_FROM,
  HONEST_FULL,
  NEW_DOMAIN_BELOW,
  NEW_DOMAIN_IN_ATTACKS,
  NEW_DOMAIN_MAX,
  NEW_DOMAIN_MIN,
  NEW_DOMAIN_MIN_SIGNUPS,
  OPERATOR_BURST_MAX,
  POPULATION_KNOWN,
  REGISTRATION_LIFT_FROM,
  REGISTRATION_LIFT_FULL,
  REGISTRATION_MAX,
  REGISTRATIONS_HOUR_MIN,
  REGISTRATIONS_USUAL_MIN,
  RESEMBLANCE_LIFT_FROM,
  RESEMBLANCE_LIFT_SPAN,
  SHAPE_BURST_MAX,
  SIGNUP_SHARE_FLOOR,
  SIGNUPS_DEVICE,
  SIGNUPS_DOMAIN,
  SIGNUPS_IP,
  SIGNUPS_MACHINE,
  SLOW_WAVE_FAILURE_SHARE_FLOOR,
  SLOW_WAVE_FROM,
  SLOW_WAVE_FULL,
  SLOW_WAVE_MAX,
  SLOW_WAVE_MIN,
  SLOW_WAVE_UNKNOWN_SHARE_FLOOR,
  STUFFING_IP,
  STUFFING_NETWORK,
  STUFFING_OPERATOR,
  STUFFING_SHAPE,
  VELOCITY_MIN_WEIGHT,
  UNCOMMON_DOMAIN_BELOW,
  UNKNOWN_ACCOUNT_AGE_HOURS,
  UNKNOWN_ACCOUNT_MAX,
  UNKNOWN_ACCOUNT_MIN_ATTEMPTS,
  UNKNOWN_IN_ATTACKS,
  WAVE_HOUR_FAILURES_MIN,
  WAVE_HOUR_UNKNOWN_MIN,
  WAVE_LIFT_FROM,
  WAVE_LIFT_FULL,
  WAVE_LIKE_FULL,
  WAVE_MAX,
  WAVE_RECENT_MIN,
  WAVE_UNLIKE,
  WAVE_USUAL_FAILURES_MIN,
  WAVE_USUAL_SHARE_MIN,
  WAVE_USUAL_UNKNOWN_MIN,
} from './weights';
import {
  clamp,
  ramp,
  byRamp,
  count,
  perHour,
  ATTEMPT_KINDS,
  type Contribution,
  type EvidenceInput,
  type EventKind,
} from './evidence';

/**
 * The environment is under a wave: attempts on accounts that do not exist, or failures, far above
 * their usual rate. Seen over the last hour, and over the last 5–10 minutes so that a burst counts
 * from its first few attempts (at least WAVE_RECENT_MIN of them) rather than once an hour's worth
 * has gathered. Only for login attempts (ATTEMPT_KINDS: a sign-up's account is new by
 * definition; sign-up waves are registration_velocity). Null when there is none (a lift under 3).
 */
export function attackWave(x: EvidenceInput): { lift: number; detail: Record<string, number> } | null {
  const envWindow = x.windows.env;
  if (!envWindow || !ATTEMPT_KINDS.has(x.kind)) return null;
  const usualUnknown = Math.max(x.env.unknownPerHour, WAVE_USUAL_UNKNOWN_MIN);
  const usualFailures = Math.max(x.env.failuresPerHour, WAVE_USUAL_FAILURES_MIN);
  const hourly = Math.max(
    envWindow.unknown >= WAVE_HOUR_UNKNOWN_MIN ? envWindow.unknown / usualUnknown : 0,
    envWindow.failures >= WAVE_HOUR_FAILURES_MIN ? envWindow.failures / usualFailures : 0,
  );
  // Recently: both the rate and the share of attempts must stand out. A young environment or a
  // busy hour brings more attempts on accounts Rampart has not seen yet, but not a larger share.
  const r = envWindow.recent;
  const lift = (n: number, usual: number, usualShare: number, min: number) => {
    if (!r || n < min) return 0;
    const rate = perHour(n, r) / usual;
    const share = n / Math.max(r.attempts, n) / Math.max(usualShare, WAVE_USUAL_SHARE_MIN);
    return Math.min(rate, share);
  };
  const attemptsPerHour = Math.max(x.env.attemptsPerHour, 1e-9);
  const recent = Math.max(
    lift(r?.unknown ?? 0, usualUnknown, x.env.unknownPerHour / attemptsPerHour, WAVE_RECENT_MIN),
    lift(r?.failures ?? 0, usualFailures, x.env.failuresPerHour / attemptsPerHour, WAVE_RECENT_MIN * 2),
  );
  const wave = Math.max(hourly, recent);
  if (wave < WAVE_LIFT_FROM) return null;
  return {
    lift: wave,
    detail: {
      unknown_accounts_last_hour: count(envWindow.unknown),
      failures_last_hour: count(envWindow.failures),
      attempts_recently: r ? count(r.attempts) : 0,
      unknown_accounts_recently: r ? count(r.unknown) : 0,
      failures_recently: r ? count(r.failures) : 0,
      recent_minutes: r ? Math.round(r.minutes) : 0,
      usual_per_hour: count(Math.max(x.env.unknownPerHour, x.env.failuresPerHour)),
    },
  };
}

/**
 * `attack_wave` over the last 24 hours: a campaign spread over days ("low and slow") keeps every
 * hour, and every five minutes, near their usual counts, but not the day's share of attempts on
 * accounts Rampart does not know (or of failures). At least SLOW_WAVE_MIN such attempts in the
 * day (twice as many failures), in an environment a week old (before that every account is new,
 * and the share falls day by day). The lift is the day's share over the usual one: for unknown
 * accounts, the share Rampart let through over the last week or so (usualUnknownShare), at least
 * 1%; for failures, the environment's long-run share, at least 2%. Weighed from SLOW_WAVE_FROM×
 * up to SLOW_WAVE_MAX at SLOW_WAVE_FULL×: with unknown_account a challenge from about 3.3×, when
 * seven in ten of the day's attempts on unknown accounts are beyond the usual; never alone a
 * deny, since a day's rise can also be real users returning after a mailing.
 */
/** Sign-ups are a few in a thousand attempts: their usual share counts as at least SIGNUP_SHARE_FLOOR. */

/**
 * How many times its usual share of attempts `n` of the day's are (0 under `min` of them, or in an
 * environment younger than a week). The usual share counts as at least `floor`.
 */
function dayLift(
  x: EvidenceInput,
  d: DayCounts,
  n: number,
  usualShare: number,
  floor: number,
  min: number,
): number {
  if (n < min || x.env.ageHours < UNKNOWN_ACCOUNT_AGE_HOURS) return 0;
  return n / Math.max(d.attempts, n) / Math.max(usualShare, floor);
}

export function slowWave(x: EvidenceInput): { lift: number; detail: Record<string, number> } | null {
  const d = x.windows.env?.day;
  if (!d || !ATTEMPT_KINDS.has(x.kind)) return null;
  const attemptsPerHour = Math.max(x.env.attemptsPerHour, 1e-9);
  const wave = Math.max(
    dayLift(x, d, d.unknown, x.env.usualUnknownShare, SLOW_WAVE_UNKNOWN_SHARE_FLOOR, SLOW_WAVE_MIN),
    dayLift(
      x,
      d,
      d.failures,
      x.env.failuresPerHour / attemptsPerHour,
      SLOW_WAVE_FAILURE_SHARE_FLOOR,
      SLOW_WAVE_MIN * 2,
    ),
  );
  if (wave <= SLOW_WAVE_FROM) return null;
  return {
    lift: wave,
    detail: {
      window_hours: 24,
      attempts_last_day: count(d.attempts),
      unknown_accounts_last_day: count(d.unknown),
      failures_last_day: count(d.failures),
      usual_unknown_share: Math.round(x.env.usualUnknownShare * 1000) / 1000,
      usual_failure_share: Math.round((x.env.failuresPerHour / attemptsPerHour) * 1000) / 1000,
    },
  };
}

/**
 * One signal from the request's (or the hour's) evidence and from the day's, counted as the
 * stronger of the two: the first in full, as it is; the day's only for what it adds beyond it, and
 * marked dayLevel (it raises the risk no further than the unfamiliarity cap). Adding them would
 * count one campaign twice; keeping only the day's would lose what the request itself shows.
 */
function strongerOf(
  signal: string,
  now: { weight: number; detail: SignalDetail } | null,
  day: { weight: number; detail: SignalDetail } | null,
): Contribution[] {
  const out: Contribution[] = [];
  const first = now && now.weight > 0 ? now.weight : 0;
  if (now && first > 0) out.push({ signal, weight: first, detail: now.detail });
  if (day && day.weight > first)
    out.push({ signal, weight: day.weight - first, detail: day.detail, dayLevel: true });
  return out;
}

/**
 * How surely a window's traffic is real users' (0–1): a carrier's or an office's NAT sends many
 * accounts' logins, and a new browser version many accounts' requests of one new shape, most of
 * them successful, while a stuffing source's or an attack tool's nearly all fail. Counted when
 * successful logins are at least HONEST_FROM of the window's attempts, fully at HONEST_FULL (an
 * honest login is one or two attempts: the pre-auth check and the login). Not for sign-ups, which
 * count as successes when allowed: several alike are registration_velocity's and a farm's.
 */
function honest(window: Window | null | undefined, kind: EventKind): number {
  if (!window || kind === 'registration' || window.attempts <= 0) return 0;
  return clamp((window.successes / window.attempts - HONEST_FROM) / (HONEST_FULL - HONEST_FROM), 0, 1);
}

/**
 * Legitimate events an environment has counted before its population's shares mean anything: a
 * share of nothing is not a rare value. Until then the burst signals, which weigh a value's share
 * of the hour's attempts against its usual share, and `new_email_domain` stay silent. An
 * integration that never reports a successful login (filters only) stays there.
 */

/**
 * A burst (request_shape_burst, high_activity_network): one value (a request shape, an operator)
 * across at least BURST_ACCOUNTS_FROM accounts within the hour, its share of the hour's attempts
 * at least BURST_LIFT times its usual share of legitimate events (a value the environment has
 * nearly never seen counts as a small one, not as none). Weighed by the accounts, fully at
 * BURST_ACCOUNTS_FULL, less where most of its attempts succeed (honest). Null: no burst.
 */
function burst(
  x: EvidenceInput,
  w: Window | null | undefined,
  usualShare: number,
  max: number,
): { weight: number; share: number } | null {
  const envAttempts = x.windows.env?.attempts ?? 0;
  if (!w || w.accounts < BURST_ACCOUNTS_FROM || envAttempts <= 0 || x.env.legit < POPULATION_KNOWN)
    return null;
  const share = Math.min(1, w.attempts / envAttempts);
  if (share / Math.max(usualShare, BURST_USUAL_SHARE_MIN) < BURST_LIFT) return null;
  return {
    weight: ramp(w.accounts, BURST_ACCOUNTS_FROM, BURST_ACCOUNTS_FULL, max) * (1 - honest(w, x.kind)),
    share,
  };
}

/**
 * How much a sign-up looks like the others of its hour: the largest share of the hour's sign-ups
 * (before it) that came from its address, its /24, or its e-mail domain (not one of the
 * environment's common ones); or from its machine, operator or request shape, counted as that
 * share only as far as it is many times their usual share (a popular browser's shape or a big
 * operator brings a large share of any hour's real sign-ups; a farm's machines, a proxy network
 * or a tool's rare configuration do not). A wave's members share these; real people signing up
 * in the same hour do not. So is a browser language rare in the address's country, where this
 * sign-up's is: one team's phones or browsers, set to their language, behind addresses in many
 * countries (rare is learned per country from the population: a country whose people often use
 * the language does not make it rare, and real people's languages seldom are).
 */
function waveResemblance(x: EvidenceInput, envRegs: number): number {
  const w = x.windows;
  const share = (n: number | undefined) => (n ?? 0) / Math.max(envRegs, 1);
  const beyond = (n: number | undefined, usual: number) =>
    share(n) *
    clamp((share(n) / Math.max(usual, 1e-4) - RESEMBLANCE_LIFT_FROM) / RESEMBLANCE_LIFT_SPAN, 0, 1);
  return Math.max(
    share(w.ip?.registrations),
    share(w.net?.registrations),
    x.domainCount < UNCOMMON_DOMAIN_BELOW ? share(w.dom?.registrations) : 0,
    beyond(w.mk?.registrations, x.machineShare ?? 0),
    beyond(w.shape?.registrations, x.shapeShare),
    beyond(w.asn?.registrations, x.operatorShare),
    languageMismatch(x) ? share(w.env?.foreignRegistrations) : 0,
  );
}
/** Sign-ups within the hour from phones of one machine key, against what its share of the environment's sign-ups brings. */
function machineSignups(x: EvidenceInput, w: Window): { by: string; n: number; from: number; to: number } {
  const expected = x.env.registrationsPerHour * (x.machineShare ?? 0);
  // A sign-up is counted twice when the application asks before and after it (filter, then
  // risk): one is never a wave. Where the model brings next to none an hour, a second sign-up
  // from it within the hour is already as unlikely as the fourth from one device: full weight.
  return {
    by: 'machine',
    n: w.registrations,
    from: SIGNUPS_MACHINE.from + SIGNUPS_MACHINE.fromPerExpected * expected,
    to: SIGNUPS_MACHINE.to + SIGNUPS_MACHINE.toPerExpected * expected,
  };
}

function operatorBurst(x: EvidenceInput): Contribution | null {
  const b = ATTEMPT_KINDS.has(x.kind) ? burst(x, x.windows.asn, x.operatorShare, OPERATOR_BURST_MAX) : null;
  if (!b || b.weight <= VELOCITY_MIN_WEIGHT) return null;
  return {
    signal: 'high_activity_network',
    weight: b.weight,
    detail: {
      by: 'operator',
      asn: x.features.values[LEVEL.operator] ?? '',
      accounts_last_hour: x.windows.asn?.accounts ?? 0,
      share_of_attempts: Math.round(b.share * 1000) / 1000,
      usual_share: Math.round(x.operatorShare * 1000) / 1000,
    },
  };
}

/**
 * `new_email_domain`: a sign-up wave on invented domains names a domain no legitimate user has
 * about NEW_DOMAIN_IN_ATTACKS of the time; legitimate sign-ups do as often as the environment has
 * seen (its own rate, learned once it has NEW_DOMAIN_MIN_SIGNUPS legitimate sign-ups). Weighed by
 * that likelihood ratio, from NEW_DOMAIN_MIN to NEW_DOMAIN_MAX: alone it challenges no one. So it
 * weighs by how rarely legitimate sign-ups bring one (a consumer service's users share a few big
 * providers; a business tool's bring their companies' domains, and this weighs little there).
 */
function newEmailDomain(domain: string, env: EvidenceInput['env']): Contribution {
  const learned = env.signups >= NEW_DOMAIN_MIN_SIGNUPS;
  // Smoothed: one sign-up in two with a new domain, before the first.
  const share = (env.newDomainSignups + 1) / (env.signups + 2);
  const weight = learned
    ? clamp(Math.log(NEW_DOMAIN_IN_ATTACKS / share), NEW_DOMAIN_MIN, NEW_DOMAIN_MAX)
    : NEW_DOMAIN_MIN;
  const detail: SignalDetail = { domain };
  if (learned) detail.usual_share = Math.round(share * 1000) / 1000;
  return { signal: 'new_email_domain', weight, detail };
}

/** Evidence from velocity across accounts, in the last sixty minutes of event time. */
export function velocityEvidence(x: EvidenceInput): Contribution[] {
  const out: Contribution[] = [];
  const w = x.windows;

  // Failed logins across accounts from one address, network, operator or request shape. Beyond
  // a single address, only where failures far outnumber successes (a big network or a common
  // browser has its share of typos).
  const ratio = (window: Window | null | undefined) =>
    window
      ? Math.min(
          1,
          Math.max(0, (window.failures / (window.successes + 1) - FAILURE_RATIO_FROM) / FAILURE_RATIO_SPAN),
        )
      : 0;
  const shared = honest(w.ip, x.kind);
  const failed = [
    { window: w.ip, kind: 'ip', weight: byRamp(w.ip?.failedAccounts ?? 0, STUFFING_IP) * (1 - shared) },
    {
      window: w.net,
      kind: 'network',
      weight: byRamp(w.net?.failedAccounts ?? 0, STUFFING_NETWORK) * ratio(w.net),
    },
    {
      window: w.asn,
      kind: 'operator',
      weight: byRamp(w.asn?.failedAccounts ?? 0, STUFFING_OPERATOR) * ratio(w.asn),
    },
    {
      window: w.shape,
      kind: 'request_shape',
      weight: byRamp(w.shape?.failedAccounts ?? 0, STUFFING_SHAPE) * ratio(w.shape),
    },
  ].sort((a, b) => b.weight - a.weight)[0];
  if (failed && failed.weight > VELOCITY_MIN_WEIGHT) {
    out.push({
      signal: 'credential_stuffing',
      weight: failed.weight,
      detail: {
        by: failed.kind,
        accounts_failed_last_hour: failed.window?.failedAccounts ?? 0,
        failures_last_hour: count(failed.window?.failures ?? 0),
        successes_last_hour: count(failed.window?.successes ?? 0),
      },
    });
  }

  // Many accounts tried from one address (beyond what a shared household or office shows).
  const ipAccounts = w.ip?.accounts ?? 0;
  const ipWeight = byRamp(ipAccounts, HIGH_ACTIVITY_IP) * (1 - shared);
  if (ipWeight > 0)
    out.push({
      signal: 'high_activity_ip',
      weight: ipWeight,
      detail: { accounts_last_hour: ipAccounts, attempts_last_hour: count(w.ip?.attempts ?? 0) },
    });

  // One fingerprinted device, many accounts: a device farm, or one phone opening accounts.
  const devAccounts = x.features.fingerprinted ? (w.dev?.accounts ?? 0) : 0;
  const devWeight = byRamp(devAccounts, DEVICE_ACCOUNTS);
  if (devWeight > 0)
    out.push({
      signal: 'multiple_accounts_per_device',
      weight: devWeight,
      detail: { accounts: devAccounts },
    });

  // The same request shape (client, header set, language) across many accounts at once, far
  // beyond its usual share of this environment's traffic.
  const shape = x.ownDevice ? null : burst(x, w.shape, x.shapeShare, SHAPE_BURST_MAX);
  if (shape && shape.weight > 0) {
    const detail = {
      accounts_last_hour: w.shape?.accounts ?? 0,
      share_of_attempts: Math.round(shape.share * 1000) / 1000,
      usual_share: Math.round(x.shapeShare * 1000) / 1000,
    };
    out.push({
      signal: 'request_shape_burst',
      weight: shape.weight,
      detail: x.habitualAgent ? { ...detail, users_own_client: true } : detail,
      ...(x.habitualAgent ? { capped: true as const } : {}),
    });
  }

  // Many accounts through one operator at once, far beyond its usual share of the traffic: a VPN
  // provider or a hosting network that a login list is pushed through. Attempts Rampart stops
  // at the pre-auth check never reach the password, so failures alone miss it. Not where most of
  // the operator's attempts succeed (an office or a carrier in its busy hour), and not a
  // residential proxy network, whose addresses follow the users' own operators.
  const operator = x.ownDevice ? null : operatorBurst(x);
  if (operator) out.push(operator);

  // The environment is under a wave (see attackWave): what names an account that is not here is
  // more likely part of it. (Unfamiliar logins to accounts that are here: see the model.)
  if (x.unknownAccount) {
    const fast = attackWave(x);
    const slow = slowWave(x);
    const fastWeight = fast ? ramp(fast.lift, WAVE_LIFT_FROM, WAVE_LIFT_FULL, WAVE_MAX) : 0;
    const slowWeight = slow ? ramp(slow.lift, SLOW_WAVE_FROM, SLOW_WAVE_FULL, SLOW_WAVE_MAX) : 0;
    out.push(
      ...strongerOf(
        'attack_wave',
        fast ? { weight: fastWeight, detail: fast.detail } : null,
        slow ? { weight: slowWeight, detail: slow.detail } : null,
      ),
    );
  }

  // An account Rampart does not know, where nearly every attempt is on one it knows: a login list
  // names mostly accounts that are not here, while a settled environment sees a new account in a
  // few attempts of a hundred. Weighed by that likelihood ratio, at most UNKNOWN_ACCOUNT_MAX: alone
  // it challenges nobody (a user's first login), it tips an anonymising address or missing headers.
  // A young environment, where every account is new to Rampart, gives it no weight.
  if (
    x.unknownAccount &&
    ATTEMPT_KINDS.has(x.kind) &&
    x.env.ageHours >= UNKNOWN_ACCOUNT_AGE_HOURS &&
    x.env.attemptsPerHour * x.env.ageHours >= UNKNOWN_ACCOUNT_MIN_ATTEMPTS
  ) {
    const share = Math.min(1, x.env.unknownPerHour / Math.max(x.env.attemptsPerHour, 1e-9));
    const weight = Math.min(UNKNOWN_ACCOUNT_MAX, Math.log(UNKNOWN_IN_ATTACKS / Math.max(share, 1e-3)));
    if (weight > 0)
      out.push({
        signal: 'unknown_account',
        weight,
        detail: { usual_share: Math.round(share * 1000) / 1000 },
      });
  }

  // Registrations: several from one address, device or e-mail domain.
  if (x.kind === 'registration') {
    const regs = [
      { by: 'ip', n: w.ip?.registrations ?? 0, from: SIGNUPS_IP.from, to: SIGNUPS_IP.to },
      {
        by: 'device',
        n: x.features.fingerprinted ? (w.dev?.registrations ?? 0) : 0,
        from: SIGNUPS_DEVICE.from,
        to: SIGNUPS_DEVICE.to,
      },
      {
        by: 'email_domain',
        n: x.domainCount < UNCOMMON_DOMAIN_BELOW ? (w.dom?.registrations ?? 0) : 0,
        from: SIGNUPS_DOMAIN.from,
        to: SIGNUPS_DOMAIN.to,
      },
      // Phones of one model, OS and screen (a farm's emulator images, spoofed alike): as many
      // sign-ups as from one device, beyond what the model's share of the environment's sign-ups
      // brings in an hour (a popular phone in a busy environment signs up several an hour).
      ...(w.mk ? [machineSignups(x, w.mk)] : []),
    ].map((r) => ({
      by: r.by,
      n: r.n,
      weight: ramp(r.n, r.from, r.to, REGISTRATION_MAX),
      usual: null as number | null,
    }));
    // Sign-ups across the environment far above their usual hourly rate: a wave from many
    // addresses and devices at once (a farm, a bought list), each of which looks new anyway.
    // Over the last hour, and over the last 5–10 minutes (at least WAVE_RECENT_MIN of them), so
    // that a wave counts from its first sign-ups.
    const envRegs = w.env?.registrations ?? 0;
    const usualRegs = Math.max(x.env.registrationsPerHour, REGISTRATIONS_USUAL_MIN);
    const recent = w.env?.recent;
    const recentLift =
      recent && recent.signups >= WAVE_RECENT_MIN
        ? (recent.signups * 60) / SIGNUP_RECENT_MINUTES / usualRegs
        : 0;
    // An environment younger than a day has no usual rate yet: its first users signing up
    // minutes apart are how every deployment starts, not a wave.
    const regLift =
      x.env.ageHours < ENV_USUAL_AFTER_HOURS
        ? 0
        : Math.max(envRegs >= REGISTRATIONS_HOUR_MIN ? envRegs / usualRegs : 0, recentLift);
    // The wave is challenged, not everybody who signs up during it: the weight goes with how much
    // this sign-up looks like the hour's others (see waveResemblance).
    const like = regLift > 0 ? waveResemblance(x, envRegs) : 0;
    if (regLift > 0)
      regs.push({
        by: 'environment',
        n: envRegs,
        weight:
          ramp(regLift, REGISTRATION_LIFT_FROM, REGISTRATION_LIFT_FULL, REGISTRATION_MAX) *
          (WAVE_UNLIKE + (1 - WAVE_UNLIKE) * clamp(like / WAVE_LIKE_FULL, 0, 1)),
        usual: x.env.registrationsPerHour,
      });
    const top = regs.sort((a, b) => b.weight - a.weight)[0];
    let hour: { weight: number; detail: SignalDetail } | null = null;
    if (top && top.weight > 0) {
      const detail: SignalDetail = { by: top.by, registrations_last_hour: count(top.n) };
      if (top.usual !== null) detail.usual_per_hour = count(top.usual);
      hour = { weight: top.weight, detail };
    }
    // And spread over days (a farm opening an account an hour): the day's share of attempts that
    // were sign-ups against their usual share (those Rampart let through, over the last week or
    // so), as for attempts on unknown accounts (slowWave). Alone it challenges no sign-up.
    const day = w.env?.day;
    const signups = day
      ? dayLift(x, day, day.registrations, x.env.usualSignupShare, SIGNUP_SHARE_FLOOR, SLOW_WAVE_MIN)
      : 0;
    const daily =
      day && signups > SLOW_WAVE_FROM
        ? {
            weight: ramp(signups, SLOW_WAVE_FROM, SLOW_WAVE_FULL, SLOW_WAVE_MAX),
            detail: {
              by: 'environment',
              window_hours: 24,
              registrations_last_day: count(day.registrations),
              usual_share: Math.round(x.env.usualSignupShare * 10000) / 10000,
            },
          }
        : null;
    out.push(...strongerOf('registration_velocity', hour, daily));
    // A domain no legitimate user of this environment has, while the environment has many.
    if (
      x.features.emailDomain &&
      x.domainCount < NEW_DOMAIN_BELOW &&
      x.env.legit >= POPULATION_KNOWN &&
      !x.disposableEmail
    ) {
      out.push(newEmailDomain(x.features.emailDomain, x.env));
    }
  }
  return out;
}

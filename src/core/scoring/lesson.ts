/**
 * What an event teaches: the legitimate profile only learns from evidence that the user was
 * really there (an allowed successful login or registration, a passed challenge); failures,
 * failed challenges and denied logins go to the hostile record. And what the event was, for the
 * environment's counters.
 *
 * Pure: no I/O.
 */
import type { IpIntel } from '../intel/types';
import type { Action, EventInput } from '../model';
import type { Behaviour, BehaviourChange } from './behaviour-tables';
import { answeredChallenge, learnedValues, recurringOperator, withoutOperator } from './challenges';
import type { EventKind } from './evidence';
import { LEVEL, placeless, type Features } from './features';
import { emailAccount } from './counters';
import type { Outcome } from './counter-bumps';
import { TENTATIVE_WEIGHT } from './weights';

/** What an event teaches: its behaviour change for the user and its outcome for the counters. */
export interface Lesson {
  behaviour: BehaviourChange | null;
  outcome: Outcome;
}

export interface LessonInput {
  event: EventInput;
  /** The account the event is about (its user id, or the one its e-mail belongs to). */
  userId: string | null;
  kind: EventKind;
  features: Features;
  behaviour: Behaviour | null;
  /** The verdict's action, or null for a tracked event. */
  action: Action | null;
  unknownAccount: boolean;
  /** The application reports challenge outcomes (so an unanswered challenge teaches nothing). */
  feedbackReported: boolean;
  ip: IpIntel | null;
  eventId: string;
  /** The verdict found the browser's language rare in the address's country (`language_country_mismatch`). */
  foreignLanguage?: boolean;
}

export function lesson(x: LessonInput): Lesson {
  const at = x.event.occurredAt.getTime();
  const email =
    x.event.email ?? (typeof x.event.properties.email === 'string' ? x.event.properties.email : null);
  const account = x.userId ?? (email ? emailAccount(email) : null);
  const outcome: Outcome = {
    attempt:
      x.kind === 'login' ||
      x.kind === 'preauth' ||
      x.kind === 'registration' ||
      x.kind === 'reset' ||
      x.kind === 'failure',
    failure:
      x.kind === 'failure' ||
      x.event.name === '$challenge.failed' ||
      (x.action === 'deny' && x.kind === 'login'),
    success: false,
    registration: x.kind === 'registration',
    unknownAccount: x.unknownAccount && (x.kind === 'login' || x.kind === 'preauth' || x.kind === 'failure'),
    credentialed: x.kind === 'login' && x.event.endpoint !== 'track',
    stopped: x.action === 'challenge' || x.action === 'deny',
    challengeFeedback: x.event.name === '$challenge.succeeded' || x.event.name === '$challenge.failed',
    account,
    ...(x.foreignLanguage && x.kind === 'registration' ? { foreignLanguage: true } : {}),
  };
  const values = learnedValues(x.features);
  const loc = x.ip?.location;
  const location =
    loc && loc.lat !== null && loc.lon !== null && !placeless(x.ip)
      ? { at, lat: loc.lat, lon: loc.lon, cc: loc.country_code }
      : null;
  let behaviour: BehaviourChange | null = null;
  if (!x.userId) return { behaviour, outcome };

  const learnable =
    x.kind === 'login' || (x.kind === 'registration' && x.event.name !== '$registration.attempted');
  if (learnable && (x.action === 'allow' || x.action === null)) {
    // An allowed login (or one the application reports as succeeded) is the user being there.
    behaviour = { legit: { values, weight: 1, at, location } };
    outcome.success = true;
  } else if (learnable && x.action === 'challenge') {
    const tentative = x.feedbackReported ? 0 : TENTATIVE_WEIGHT;
    // Tentatively, the device and the address; the operator only when the user was already
    // challenged from it hours or days before: an attacker trying again from another address of
    // the same network must still look new, and a user's new office or carrier must not be
    // challenged for ever where the application does not say that the challenges were passed.
    const operator =
      tentative > 0 && x.behaviour !== null && recurringOperator(x.behaviour, values[LEVEL.operator], at);
    const taught = operator ? values : withoutOperator(values);
    behaviour = {
      pend: {
        id: x.eventId,
        challenge: {
          at,
          values,
          tentative,
          operator,
          client: { app: x.features.app, release: x.features.release },
        },
      },
      ...(tentative > 0 ? { legit: { values: taught, weight: tentative, at, location: null } } : {}),
    };
  } else if (learnable && x.action === 'deny') {
    behaviour = { hostile: { values, weight: 1, at } };
  } else if (x.kind === 'failure' && x.event.name === '$login.failed') {
    behaviour = { hostile: { values, weight: 1, at } };
  } else if (
    (x.event.name === '$challenge.succeeded' || x.event.name === '$challenge.failed') &&
    x.behaviour
  ) {
    const answered = answeredChallenge(x.behaviour, at);
    if (answered) {
      const [id, p] = answered;
      if (x.event.name === '$challenge.succeeded' && p.client)
        outcome.passedChallenge = {
          fingerprinted: p.values[LEVEL.fingerprint] === 'y',
          app: p.client.app,
          release: p.client.release,
        };
      behaviour =
        x.event.name === '$challenge.succeeded'
          ? { resolve: id, legit: { values: p.values, weight: 1 - p.tentative, at: p.at, location: null } }
          : {
              resolve: id,
              hostile: { values: p.values, weight: 1, at: p.at },
              ...(p.tentative > 0
                ? {
                    legit: {
                      values: p.operator === true ? p.values : withoutOperator(p.values),
                      weight: -p.tentative,
                      at: p.at,
                      location: null,
                    },
                  }
                : {}),
            };
    } else if (x.event.name === '$challenge.failed') {
      behaviour = { hostile: { values, weight: 1, at } };
    }
  }
  return { behaviour, outcome };
}

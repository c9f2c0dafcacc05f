/**
 * @rampart/browser: Rampart's browser client. A page calls `configure({ publishableKey })` (or
 * castle-js 2.x's `configure({ pk })`) once and `createRequestToken()` before each login or
 * sign-up (or `injectTokenOnSubmit`), and its backend forwards the token to Rampart as
 * `request_token`, the way Castle's server SDKs forward Castle's. The token is a short-lived,
 * single-use, server-signed reference to what the page showed: the device's stable components and
 * any sign of automation (docs/client.md).
 *
 * Each token costs the page a small proof of work, solved in the background from `configure()` on,
 * and carries a summary of what happened on the page before it was asked for (counts of key,
 * pointer, paste and input events, how the password was entered; nothing typed): one a page pays
 * once, a script per attempt (core/client/proof.ts, docs/client.md).
 *
 * Castle's names too: castle-js 2.x's (`configure({pk, apiUrl, timeout, …})`,
 * `createRequestToken`, `injectTokenOnSubmit(event)`, `page`, `form`, `custom`, `formEventOnSubmit`,
 * with `user` or `userJwt`; events go to Rampart's events endpoint), so that
 * `import * as Castle from '@rampart/browser'` replaces `@castleio/castle-js`; and Castle's 1.x
 * front-end names (`exposeCastleNames`, started by itself when the script tag names the key:
 * `rampart.js?pk_…`).
 *
 * Built by scripts/build-browser.js into an ES module (rampart.mjs, the npm package's) and a
 * classic script (rampart.js: `window.Rampart` and `window.Castle`, global.ts), which Rampart
 * serves at /client/v1/. No dependencies; one random profile id in localStorage tells two profiles
 * of one machine apart; the `__cid` cookie only with Castle's 1.x names.
 */
import { PageWatch } from './behaviour';
import { formOf, injectOnRequests, injectOnSubmitEvent, markedValues, userArgument } from './castle';
import { CASTLE_TOKEN_FIELD, readOptions, REQUEST_TOKEN_HEADER, type ConfigureOptions } from './options';
import { CastleNames, keyFromQueue, type CastleNamesOptions } from './castle-names';
import { Collector } from './collector';
import {
  EventSender,
  wireEvent,
  type CustomParams,
  type FormParams,
  type PageParams,
  type UserParams,
} from './events';
import { proveWork } from './pow';
import { keyFromScriptTag, script, scriptOrigin } from './script';
import { attempt, setField } from './util';

export type { ConfigureOptions } from './options';
export type { CastleNamesOptions } from './castle-names';
export type { CustomParams, FormParams, PageParams, UserParams } from './events';
export { proveWork };

/** Rampart's own options (the names `configure` took before castle-js's were added). */
export interface RampartOptions {
  /** The environment's publishable key (`pk_…`): safe in a page. */
  publishableKey: string;
  /** Where Rampart answers (default: the origin this script was loaded from). */
  endpoint?: string;
}

/** What `configure` answers (castle-js 2.x answers its interface): the client's functions. */
export interface Client {
  configure: typeof configure;
  createRequestToken: typeof createRequestToken;
  injectTokenOnSubmit: typeof injectTokenOnSubmit;
  formEventOnSubmit: typeof formEventOnSubmit;
  page: typeof page;
  form: typeof form;
  custom: typeof custom;
  user: typeof user;
  userJwt: typeof userJwt;
  exposeCastleNames: typeof exposeCastleNames;
  getClientId: typeof getClientId;
  proveWork: typeof proveWork;
}

const watch = new PageWatch();
const collector = new Collector(watch);
const names = new CastleNames(
  collector,
  (key) => configure({ publishableKey: key, endpoint: collector.options?.endpoint }),
  () => createRequestToken(),
);
const events = new EventSender(collector);
/** What `configure` set beyond the collector's options, and the user later events are sent for. */
const settings = {
  verbose: true,
  cookieDomain: null as string | null,
  formTokenInputName: CASTLE_TOKEN_FIELD,
  submitWatched: false,
};
const defaults: { user: UserParams | null; userJwt: string | null } = { user: null, userJwt: null };

const warn = (message: string): void => {
  if (settings.verbose && typeof console !== 'undefined') console.warn(`Rampart: ${message}`);
};

/**
 * Configure the client: the publishable key (`publishableKey` or Castle's `pk`), Rampart's address
 * (`endpoint` or Castle's `apiUrl`; default the script's origin), and castle-js's other options
 * (ConfigureOptions). An unknown option is a console warning. Starts on the first token's proof of
 * work at once. Answers the client's functions, as castle-js does.
 */
export function configure(o: ConfigureOptions | RampartOptions | string): Client {
  const read = readOptions(o, scriptOrigin);
  settings.verbose = read.verbose;
  for (const w of read.warnings) warn(w);
  collector.configure(read.collector);
  settings.cookieDomain = read.cookieDomain;
  settings.formTokenInputName = read.formTokenInputName;
  if (read.autoInjectTokenOnSubmit && !settings.submitWatched) {
    settings.submitWatched = true;
    // Bubbling: the page's own handlers ran first; a submit one of them held (injectTokenOnSubmit) is left to it.
    document.addEventListener('submit', (e) => {
      if (!e.defaultPrevented) injectOnSubmitEvent(e, settings.formTokenInputName, createRequestToken);
    });
  }
  if (read.autoInjectTokenOnRequest)
    injectOnRequests(
      REQUEST_TOKEN_HEADER,
      createRequestToken,
      (u) =>
        u.origin === new URL(collector.options?.endpoint ?? location.origin, location.href).origin &&
        u.pathname.startsWith('/v1/client/'),
    );
  return client;
}

/** A fresh token for one login or sign-up (valid five minutes, for one flow). */
export async function createRequestToken(): Promise<string> {
  return (await collector.mint()).token;
}

/**
 * Put a fresh token into a form when it is submitted. Two forms:
 *  - Rampart's: `injectTokenOnSubmit(form, field = 'rampart_request_token')` watches the form's submits;
 *  - castle-js's: `injectTokenOnSubmit(event, onDone?)` in the form's submit handler
 *    (`<form onsubmit="Castle.injectTokenOnSubmit(event)">`) fills `castle_request_token` (or
 *    `formTokenInputName`) and submits the form (or calls `onDone(event)`).
 */
export function injectTokenOnSubmit(
  target: HTMLFormElement | Event,
  fieldOrOnDone?: string | ((event: Event) => unknown),
): void {
  if (typeof Event === 'function' && target instanceof Event) {
    injectOnSubmitEvent(
      target,
      settings.formTokenInputName,
      createRequestToken,
      typeof fieldOrOnDone === 'function' ? fieldOrOnDone : undefined,
    );
    return;
  }
  const form = target as HTMLFormElement;
  const field = typeof fieldOrOnDone === 'string' ? fieldOrOnDone : 'rampart_request_token';
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const done = (token: string) => {
      setField(form, field, token);
      // HTMLFormElement.submit() does not fire 'submit' again.
      form.submit();
    };
    // Without a token the login still goes through: the backend scores it with less evidence.
    createRequestToken().then(done, () => done(''));
  });
}

/** castle-js's `page`: a page view (name, address and referrer default to the document's), for `user` or `userJwt`. */
export function page(params: PageParams = {}): Promise<boolean | null> {
  return send('page', params);
}

/** castle-js's `form`: a form's submission, by name, with `values` (strings). */
export function form(params: FormParams): Promise<boolean | null> {
  return send('form', params);
}

/** castle-js's `custom`: an event of the application's own, by name, with `properties`. */
export function custom(params: CustomParams): Promise<boolean | null> {
  return send('custom', params);
}

/** The user later events are sent for when they name none (castle-js passes `user` with each event; this sets it once). */
export function user(u: UserParams | null): void {
  defaults.user =
    u && typeof u === 'object' && (typeof u.id === 'string' || typeof u.id === 'number') ? u : null;
  if (u !== null && defaults.user === null) warn('user: a user is { id: "…", … }; ignored');
}

/** The signed user (the backend's JWT of the user, HS256 under the API secret) later events are sent for when they name none. */
export function userJwt(jwt: string | null): void {
  defaults.userJwt = typeof jwt === 'string' && jwt !== '' ? jwt : null;
}

/**
 * castle-js's `formEventOnSubmit(event, user, opts?, onDone?)`: a form event named by the form's
 * `data-castle-name` with the values of its fields marked `data-castle-value` (never a password),
 * a token injected too with `{ injectToken: true }`, then the form submitted (or `onDone(event, result)`).
 */
export function formEventOnSubmit(
  event: Event,
  who: UserParams | string,
  opts: { injectToken?: boolean } = {},
  onDone?: (event: Event, result: boolean | null) => unknown,
): void {
  const f = formOf(event);
  if (!f) return;
  event.preventDefault();
  const name = f.getAttribute('data-castle-name') || f.getAttribute('name') || f.id || 'form';
  const sent = form({ name, values: markedValues(f), ...userArgument(who) });
  const token = opts.injectToken ? createRequestToken().catch(() => '') : Promise.resolve(null);
  void Promise.all([sent, token]).then(([result, t]) => {
    if (t !== null) setField(f, settings.formTokenInputName, t);
    if (typeof onDone === 'function') onDone(event, result);
    else f.submit();
  });
}

function send(type: 'page' | 'form' | 'custom', params: unknown): Promise<boolean | null> {
  if (!collector.options) {
    warn(`${type}: call configure() first`);
    return Promise.resolve(false);
  }
  const e = wireEvent(type, params, defaults);
  if (!e) {
    warn(`${type}: a ${type} event needs a name`);
    return Promise.resolve(false);
  }
  return events.send(e);
}

/** Castle's 1.x names (`_castle`, `__cid`, `castle_client_id`), backed by Rampart's tokens; after `configure`. */
export function exposeCastleNames(o: CastleNamesOptions = {}): void {
  names.expose({ cookieDomain: o.cookieDomain ?? settings.cookieDomain ?? undefined });
}

/** The current token, at once (empty before the first one arrived), with Castle's 1.x names. */
export function getClientId(): string {
  return names.getClientId();
}

const client: Client = {
  configure,
  createRequestToken,
  injectTokenOnSubmit,
  formEventOnSubmit,
  page,
  form,
  custom,
  user,
  userJwt,
  exposeCastleNames,
  getClientId,
  proveWork,
};

// What the page saw is counted from the moment the script runs.
watch.start();

// A script tag naming its key (or Castle's snippet queuing it) starts Castle's 1.x names by itself:
// the page changes only that tag (or the key it queues).
attempt(() => {
  const key = keyFromScriptTag() ?? keyFromQueue();
  if (key) {
    configure({ publishableKey: key });
    exposeCastleNames({ cookieDomain: script?.dataset.cookieDomain });
  }
}, undefined);

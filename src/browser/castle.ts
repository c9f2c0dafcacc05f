/**
 * castle-js 2.x's helpers over Rampart's client (docs/client.md, "Castle's 2.x names"): its
 * submit helpers, and the token on every same-origin request that changes something
 * (`autoInjectTokenOnRequest`). Its `configure` options are read in options.ts.
 */
import type { UserParams } from './events';
import { attempt, setField } from './util';

/** The form a submit event is for (the handler's element, else the event's target). */
export function formOf(event: Event): HTMLFormElement | null {
  const f = event.currentTarget instanceof HTMLFormElement ? event.currentTarget : event.target;
  return f instanceof HTMLFormElement ? f : null;
}

/**
 * castle-js's `injectTokenOnSubmit(event, onDone?)`: the submit held, a fresh token put in the
 * form's `field` (added when missing), then the form submitted (or `onDone(event)` called). Without
 * a token the form still goes: the backend scores the login with less evidence.
 */
export function injectOnSubmitEvent(
  event: Event,
  field: string,
  token: () => Promise<string>,
  onDone?: (event: Event) => unknown,
): void {
  const form = formOf(event);
  if (!form) return;
  event.preventDefault();
  const done = (t: string) => {
    setField(form, field, t);
    // HTMLFormElement.submit() does not fire 'submit' again.
    if (typeof onDone === 'function') onDone(event);
    else form.submit();
  };
  token().then(done, () => done(''));
}

/** The values castle-js's `formEventOnSubmit` reports: the fields marked `data-castle-value="<name>"`, never a password. */
export function markedValues(form: HTMLFormElement): Record<string, string> {
  const values: Record<string, string> = {};
  for (const el of Array.from(
    form.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>('[data-castle-value]'),
  )) {
    const name = el.getAttribute('data-castle-value');
    if (!name || (el instanceof HTMLInputElement && el.type === 'password')) continue;
    values[name] = el.value;
  }
  return values;
}

/** A user argument of castle-js's helpers: a user object, or the backend's JWT. */
export function userArgument(user: UserParams | string | undefined): { user?: UserParams; userJwt?: string } {
  return typeof user === 'string' ? { userJwt: user } : user ? { user } : {};
}

let requestsPatched = false;

/**
 * `autoInjectTokenOnRequest`: every same-origin request the page makes with fetch or
 * XMLHttpRequest, other than GET, HEAD and OPTIONS (a login, a sign-up, a change), carries a fresh
 * token in `header`; requests to `skip` (Rampart's own) and to other origins never do. A request
 * waits for its token; without one it goes as it was.
 */
export function injectOnRequests(
  header: string,
  token: () => Promise<string>,
  skip: (url: URL) => boolean,
): void {
  if (requestsPatched) return;
  requestsPatched = true;
  const wants = (url: string, method: string) => {
    const u = attempt(() => new URL(url, location.href), null);
    return u !== null && u.origin === location.origin && !/^(GET|HEAD|OPTIONS)$/i.test(method) && !skip(u);
  };
  const nativeFetch = window.fetch;
  if (typeof nativeFetch === 'function') {
    window.fetch = function (input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
      const request = typeof Request === 'function' && input instanceof Request ? input : null;
      const method = init?.method ?? request?.method ?? 'GET';
      if (!wants(request ? request.url : String(input), method)) return nativeFetch.call(window, input, init);
      return token().then(
        (t) => {
          const headers = new Headers(init?.headers ?? request?.headers);
          headers.set(header, t);
          return nativeFetch.call(window, input, { ...init, headers });
        },
        () => nativeFetch.call(window, input, init),
      );
    };
  }
  if (typeof XMLHttpRequest !== 'function') return;
  const proto = XMLHttpRequest.prototype;
  const open = proto.open as (this: XMLHttpRequest, ...args: unknown[]) => void;
  const send = proto.send;
  const opened = new WeakMap<XMLHttpRequest, boolean>();
  proto.open = function (this: XMLHttpRequest, ...args: unknown[]): void {
    // A synchronous request cannot wait for a token: it goes as it is.
    opened.set(this, args[2] !== false && wants(String(args[1]), String(args[0])));
    open.apply(this, args);
  } as typeof proto.open;
  proto.send = function (this: XMLHttpRequest, body?: Document | XMLHttpRequestBodyInit | null): void {
    if (!opened.get(this)) return send.call(this, body);
    opened.delete(this);
    token().then(
      (t) => {
        attempt(() => this.setRequestHeader(header, t), undefined);
        send.call(this, body);
      },
      () => send.call(this, body),
    );
  };
}

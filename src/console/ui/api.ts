/**
 * The console's only ways out: the session endpoints (/console/session) and the public GraphQL
 * API (/graphql), with the session cookie (the browser sends it; the page cannot read it) and the
 * session's CSRF token in `x-rampart-csrf`. The CSRF token lives in memory only: a reload asks
 * /console/session for it again.
 */

export interface SessionInfo {
  environment: { id: string; name: string; sandbox: boolean };
  credentialKind: 'SECRET' | 'ANALYST';
  canMutate: boolean;
  csrfToken: string;
  expiresAt: string;
  absoluteExpiresAt: string;
}

export interface FieldProblem {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
    readonly fields: FieldProblem[] = [],
  ) {
    super(message);
  }
}

let csrf: string | null = null;
let signedOutListener: ((message: string) => void) | null = null;

/** Called when the API says the session is gone (expired, revoked, signed out elsewhere). */
export function onSignedOut(listener: (message: string) => void): void {
  signedOutListener = listener;
}

async function json(res: Response): Promise<Record<string, unknown> | null> {
  try {
    return (await res.json()) as Record<string, unknown>;
  } catch {
    return null;
  }
}

function restError(res: Response, body: Record<string, unknown> | null): ApiError {
  const message = typeof body?.message === 'string' ? body.message : `HTTP ${res.status}`;
  const fields = Array.isArray(body?.fields) ? (body?.fields as FieldProblem[]) : [];
  return new ApiError(message, typeof body?.type === 'string' ? body.type : 'http', res.status, fields);
}

export async function currentSession(): Promise<SessionInfo | null> {
  const res = await fetch('/console/session', { credentials: 'same-origin', cache: 'no-store' });
  if (res.status === 401) return null;
  const body = await json(res);
  if (!res.ok) throw restError(res, body);
  const s = body as unknown as SessionInfo;
  csrf = s.csrfToken;
  return s;
}

export async function signIn(key: string): Promise<SessionInfo> {
  const res = await fetch('/console/session', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ key }),
  });
  const body = await json(res);
  if (!res.ok) throw restError(res, body);
  const s = body as unknown as SessionInfo;
  csrf = s.csrfToken;
  return s;
}

export async function signOut(): Promise<void> {
  const res = await fetch('/console/session', {
    method: 'DELETE',
    credentials: 'same-origin',
    headers: { 'x-rampart-csrf': csrf ?? '' },
  });
  csrf = null;
  if (!res.ok && res.status !== 401) throw restError(res, await json(res));
}

interface GraphqlError {
  message: string;
  extensions?: { code?: string; fields?: FieldProblem[] };
}

/** Run one GraphQL operation; the first error (if any) is thrown as an ApiError. */
export async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  let res: Response;
  try {
    res = await fetch('/graphql', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-rampart-csrf': csrf ?? '' },
      body: JSON.stringify({ query, variables }),
    });
  } catch {
    throw new ApiError('Rampart cannot be reached: check the connection and try again', 'NETWORK', 0);
  }
  const body = (await json(res)) as { data?: T; errors?: GraphqlError[] } | null;
  const first = body?.errors?.[0];
  if (first) {
    const code = first.extensions?.code ?? 'ERROR';
    if (code === 'UNAUTHENTICATED') {
      csrf = null;
      signedOutListener?.(first.message);
    }
    throw new ApiError(first.message, code, res.status, first.extensions?.fields ?? []);
  }
  if (!body?.data) throw new ApiError(`unexpected answer (HTTP ${res.status})`, 'HTTP', res.status);
  return body.data;
}

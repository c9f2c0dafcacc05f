/**
 * Rampart's web console: sign-in, the environment always in view, and the pages. Built by
 * scripts/build-console.js (esbuild) into dist/console/ and served at /console.
 */
import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { render } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError, currentSession, onSignedOut, signIn, signOut, type SessionInfo } from './api';
import { ErrorBox, Loading } from './components';
import { time } from './format';
import { href, useRoute } from './router';
import { Overview } from './pages/overview';
import { EventDetail, Events } from './pages/events';
import { UserPage, UserSearch } from './pages/user';
import { Policies } from './pages/policies';
import { Lists } from './pages/lists';
import { Webhooks } from './pages/webhooks';
import { Privacy } from './pages/privacy';
import { Settings } from './pages/settings';

const NAV: [string, string][] = [
  ['overview', 'Overview'],
  ['events', 'Events'],
  ['users', 'Users'],
  ['policies', 'Policies'],
  ['lists', 'Lists'],
  ['webhooks', 'Webhooks'],
  ['privacy', 'Privacy'],
  ['settings', 'Settings'],
];

/** What a refused sign-in is, by the answer's type (its message says why and what to do). */
const SIGN_IN_TITLES: Readonly<Record<string, string>> = {
  unauthorized: 'Key not accepted',
  forbidden: 'Not allowed',
  rate_limited: 'Too many attempts',
};

function SignIn({ message, onSignedIn }: { message: string | null; onSignedIn: (s: SessionInfo) => void }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  // Focused as it is inserted (autofocus on an element added after load waits for the browser's
  // next autofocus pass, and the first keys typed before it went nowhere).
  const input = useRef<HTMLInputElement>(null);
  useLayoutEffect(() => input.current?.focus(), []);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const s = await signIn(key.trim());
      setKey('');
      onSignedIn(s);
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(String(err), 'ERROR', 0));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin" id="main">
      <form onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Rampart console</h1>
        <p>
          Sign in with an environment's key: an analyst key (read-only;{' '}
          <code>npx rampart analyst-key add &lt;environment&gt;</code> prints one) or the API secret (may edit
          policies and review devices). The key chooses the environment; to switch, sign out and sign in with
          another.
        </p>
        {message && (
          <p class="note" role="status">
            {message}
          </p>
        )}
        <label>
          Key
          <input
            ref={input}
            type="password"
            name="key"
            autoComplete="off"
            spellcheck={false}
            value={key}
            onInput={(e) => setKey((e.target as HTMLInputElement).value)}
            required
            autoFocus
          />
        </label>
        {error && <ErrorBox error={error} title={SIGN_IN_TITLES[error.code]} />}
        <button class="primary" type="submit" disabled={busy || !key.trim()}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p class="muted small">
          The key is sent once; the browser then keeps only a session cookie it cannot read, which ends after
          30 minutes idle, 12 hours at most, on sign-out, or when the key is revoked.
        </p>
      </form>
    </main>
  );
}

function Shell({ session, onSignOut }: { session: SessionInfo; onSignOut: () => void }) {
  const route = useRoute();
  const [page, ...rest] = route.parts.length ? route.parts : ['overview'];
  const [menu, setMenu] = useState(false);
  // A new page takes the focus (for keyboard and screen-reader users) as it is shown, never later:
  // by then the user may be typing in one of its fields, whose keys would be lost.
  useLayoutEffect(() => {
    setMenu(false);
    const main = document.getElementById('main');
    const active = document.activeElement;
    if (main && !(active && main.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)))
      main.focus();
  }, [route.parts.join('/')]);
  let body;
  switch (page) {
    case 'overview':
      body = <Overview route={route} />;
      break;
    case 'events':
      body = rest[0] ? <EventDetail id={rest[0]} session={session} /> : <Events route={route} />;
      break;
    case 'users':
      body = rest[0] ? <UserPage key={rest[0]} id={rest[0]} session={session} /> : <UserSearch />;
      break;
    case 'policies':
      body = <Policies id={rest[0] ?? null} session={session} />;
      break;
    case 'lists':
      body = <Lists id={rest[0] ?? null} session={session} />;
      break;
    case 'webhooks':
      body = <Webhooks route={route} canMutate={session.canMutate} />;
      break;
    case 'privacy':
      body = <Privacy />;
      break;
    case 'settings':
      body = <Settings session={session} />;
      break;
    default:
      body = (
        <p class="state empty">
          No such page. <a href={href(['overview'])}>Go to the overview</a>.
        </p>
      );
  }
  const env = session.environment;
  return (
    <>
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href(['overview'])}>
          Rampart
        </a>
        <div class="env" data-testid="environment" title={`Environment id ${env.id}`}>
          <span class="env-name">{env.name}</span>
          {env.sandbox && <span class="badge muted">sandbox</span>}
          <code class="env-id">{env.id}</code>
          <span class={`badge ${session.canMutate ? 'admin' : 'readonly'}`} data-testid="credential-kind">
            {session.canMutate ? 'admin' : 'read-only'}
          </span>
        </div>
        <button
          type="button"
          class="menu-toggle"
          aria-expanded={menu}
          aria-controls="nav"
          onClick={() => setMenu(!menu)}
        >
          Menu
        </button>
        <nav id="nav" class={menu ? 'open' : ''} aria-label="Console">
          <ul>
            {NAV.map(([k, label]) => (
              <li key={k}>
                <a href={href([k])} aria-current={page === k ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
          <button
            type="button"
            onClick={onSignOut}
            data-testid="sign-out"
            title={`Signed in until ${time(session.absoluteExpiresAt)} at most`}
          >
            Sign out / switch environment
          </button>
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        {body}
      </main>
    </>
  );
}

function App() {
  const [session, setSession] = useState<SessionInfo | null>(null);
  const [checking, setChecking] = useState(true);
  const [error, setError] = useState<ApiError | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const check = () => {
    setChecking(true);
    setError(null);
    currentSession()
      .then(setSession, (e: unknown) =>
        setError(e instanceof ApiError ? e : new ApiError(String(e), 'ERROR', 0)),
      )
      .finally(() => setChecking(false));
  };
  useEffect(() => {
    onSignedOut((m) => {
      setSession(null);
      setMessage(`Signed out: ${m}`);
    });
    check();
  }, []);
  useEffect(() => {
    document.title = session ? `Rampart · ${session.environment.name}` : 'Rampart console';
  }, [session]);
  if (checking) return <Loading what="Checking the session" />;
  if (error) return <ErrorBox error={error} retry={check} />;
  if (!session)
    return (
      <SignIn
        message={message}
        onSignedIn={(s) => {
          setMessage(null);
          setSession(s);
        }}
      />
    );
  return (
    <Shell
      session={session}
      onSignOut={() => {
        void signOut().finally(() => {
          setSession(null);
          setMessage('Signed out.');
          location.hash = '';
        });
      }}
    />
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);

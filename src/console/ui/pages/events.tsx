/** Event explorer: filter by user, IP, device, signal, action, event type and time; page through; open one. */
import { useEffect, useState } from 'preact/hooks';
import { gql, type ApiError, type SessionInfo } from '../api';
import { ActionBadge, Card, Empty, ErrorBox, Facts, Json, Loading, StateBadge } from '../components';
import { fromLocalInput, risk, time, toLocalInput } from '../format';
import { useQuery } from '../hooks';
import { conditionText, type Conditions } from '../conditions';
import { href, navigate, type Route } from '../router';
import { EVENT, EVENTS } from '../queries';
import { AddToList, domainOf } from '../lists';

export interface EventRow {
  id: string;
  occurredAt: string;
  name: string;
  kind: EventKind;
  action: string | null;
  risk: number | null;
  riskLevel: string | null;
  userId: string | null;
  email: string | null;
  ip: string | null;
  country: string | null;
  asn: number | null;
  deviceToken: string | null;
  signals: { name: string }[];
}

/** The API's `EventKind`: decided by Rampart, or sent to track or log as feedback or activity. */
export type EventKind = 'VERDICT' | 'FEEDBACK' | 'ACTIVITY';

interface EventsData {
  events: {
    edges: { cursor: string; node: EventRow }[];
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
}

const TEXT_FILTERS = [
  ['userId', 'User id'],
  ['email', 'E-mail'],
  ['ip', 'IP address'],
  ['network', 'Network (/24)'],
  ['deviceToken', 'Device token'],
  ['signal', 'Signal'],
  ['name', 'Event type'],
  ['country', 'Country'],
  ['asn', 'ASN'],
] as const;
const FILTER_KEYS = [...TEXT_FILTERS.map(([k]) => k), 'action', 'from', 'to'];

/** The API's filter from the route's parameters. */
function filterOf(params: URLSearchParams): Record<string, unknown> {
  const f: Record<string, unknown> = {};
  for (const k of FILTER_KEYS) {
    const v = params.get(k);
    if (!v) continue;
    f[k] = k === 'asn' ? Number(v) : v;
  }
  return f;
}

/**
 * Whom an event is about: its user id, and the e-mail it carried beside it. An event with only an
 * e-mail (a failed login for an address, as a credential-stuffing wave sends them) shows that.
 */
function EventAccount({ event: e }: { event: EventRow }) {
  if (!e.userId) return e.email ? <a href={href(['events'], { email: e.email })}>{e.email}</a> : <>—</>;
  return (
    <>
      <a href={href(['users', e.userId])}>{e.userId}</a>
      {e.email && e.email !== e.userId && <span class="muted"> {e.email}</span>}
    </>
  );
}

export function EventTable({ rows, showUser = true }: { rows: EventRow[]; showUser?: boolean }) {
  return (
    <div class="table-wrap">
      <table class="data">
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Event</th>
            <th scope="col">Verdict</th>
            <th scope="col">Risk</th>
            {showUser && <th scope="col">User</th>}
            <th scope="col">IP</th>
            <th scope="col">Signals</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((e) => (
            <tr key={e.id}>
              <td>
                <a href={href(['events', e.id])} data-testid="event-link">
                  {time(e.occurredAt)}
                </a>
              </td>
              <td>
                <code>{e.name}</code>
              </td>
              <td>
                <ActionBadge action={e.action} kind={e.kind} />
              </td>
              <td>{risk(e.risk)}</td>
              {showUser && (
                <td>
                  <EventAccount event={e} />
                </td>
              )}
              <td>
                {e.ip ? <a href={href(['events'], { ip: e.ip })}>{e.ip}</a> : '—'}{' '}
                {e.country && <span class="muted">{e.country}</span>}
              </td>
              <td class="signals">
                {e.signals.map((s) => (
                  <a key={s.name} class="chip" href={href(['events'], { signal: s.name })}>
                    {s.name}
                  </a>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Events({ route }: { route: Route }) {
  const filter = filterOf(route.params);
  const [draft, setDraft] = useState<Record<string, string>>({});
  useEffect(() => {
    const d: Record<string, string> = {};
    for (const k of FILTER_KEYS) d[k] = route.params.get(k) ?? '';
    d.from = toLocalInput(d.from);
    d.to = toLocalInput(d.to);
    setDraft(d);
  }, [route.params.toString()]);
  const first = useQuery<EventsData>(EVENTS, { filter });
  const [more, setMore] = useState<{
    rows: EventRow[];
    next: string | null;
    error: ApiError | null;
    loading: boolean;
  }>({ rows: [], next: null, error: null, loading: false });
  useEffect(() => setMore({ rows: [], next: null, error: null, loading: false }), [JSON.stringify(filter)]);

  const apply = (e: Event) => {
    e.preventDefault();
    const p: Record<string, string> = {};
    for (const k of FILTER_KEYS) if (draft[k]) p[k] = draft[k].trim();
    if (p.from) p.from = fromLocalInput(p.from) ?? '';
    if (p.to) p.to = fromLocalInput(p.to) ?? '';
    navigate(href(['events'], p));
  };
  const loadMore = async () => {
    const after = more.next ?? first.data?.events.pageInfo.endCursor;
    setMore((m) => ({ ...m, loading: true, error: null }));
    try {
      const d = await gql<EventsData>(EVENTS, { filter, after });
      setMore((m) => ({
        rows: [...m.rows, ...d.events.edges.map((x) => x.node)],
        next: d.events.pageInfo.hasNextPage ? d.events.pageInfo.endCursor : null,
        error: null,
        loading: false,
      }));
    } catch (err) {
      setMore((m) => ({ ...m, loading: false, error: err as ApiError }));
    }
  };
  const rows = [...(first.data?.events.edges.map((x) => x.node) ?? []), ...more.rows];
  const hasMore = more.rows.length ? more.next !== null : Boolean(first.data?.events.pageInfo.hasNextPage);
  const active = Object.keys(filter).length > 0;

  return (
    <div class="page">
      <h1>Events</h1>
      <form class="filters" onSubmit={apply} aria-label="Event filters">
        {TEXT_FILTERS.map(([k, label]) => (
          <label key={k}>
            {label}
            <input
              name={k}
              value={draft[k] ?? ''}
              onInput={(e) => setDraft({ ...draft, [k]: (e.target as HTMLInputElement).value })}
              inputMode={k === 'asn' ? 'numeric' : undefined}
            />
          </label>
        ))}
        <label>
          Verdict
          <select
            name="action"
            value={draft.action ?? ''}
            onChange={(e) => setDraft({ ...draft, action: (e.target as HTMLSelectElement).value })}
          >
            <option value="">any</option>
            <option value="ALLOW">allow</option>
            <option value="CHALLENGE">challenge</option>
            <option value="DENY">deny</option>
          </select>
        </label>
        <label>
          From (UTC)
          <input
            type="datetime-local"
            name="from"
            value={draft.from ?? ''}
            onInput={(e) => setDraft({ ...draft, from: (e.target as HTMLInputElement).value })}
          />
        </label>
        <label>
          To (UTC)
          <input
            type="datetime-local"
            name="to"
            value={draft.to ?? ''}
            onInput={(e) => setDraft({ ...draft, to: (e.target as HTMLInputElement).value })}
          />
        </label>
        <div class="row">
          <button class="primary" type="submit">
            Apply filters
          </button>
          {active && (
            <a class="button" href={href(['events'])}>
              Clear
            </a>
          )}
        </div>
      </form>
      {first.loading && <Loading what="Searching events" />}
      {first.error && <ErrorBox error={first.error} retry={first.reload} />}
      {first.data && rows.length === 0 && (
        <Empty>{active ? 'No event matches these filters.' : 'No events yet.'}</Empty>
      )}
      {rows.length > 0 && <EventTable rows={rows} />}
      {more.error && <ErrorBox error={more.error} />}
      {hasMore && (
        <button type="button" onClick={loadMore} disabled={more.loading}>
          {more.loading ? 'Loading…' : 'Load more'}
        </button>
      )}
    </div>
  );
}

interface EventData {
  event: {
    id: string;
    name: string;
    kind: EventKind;
    endpoint: string;
    occurredAt: string;
    receivedAt: string;
    action: string | null;
    risk: number | null;
    riskLevel: string | null;
    degraded: boolean;
    userId: string | null;
    email: string | null;
    ip: string | null;
    country: string | null;
    asn: number | null;
    userAgent: string;
    deviceToken: string | null;
    device: { token: string; reviewState: string; risk: number } | null;
    signals: { name: string; details: Record<string, unknown> }[];
    policy: {
      id: string;
      revision: string;
      name: string;
      action: string;
      testToken: boolean;
      revisionDetails: {
        id: string;
        createdAt: string;
        name: string;
        action: string;
        conditions: Conditions;
      } | null;
      current: { id: string; revision: string; name: string; archived: boolean } | null;
    } | null;
    headers: unknown;
    properties: unknown;
    userTraits: unknown;
  } | null;
}

export function EventDetail({ id, session }: { id: string; session: SessionInfo }) {
  const q = useQuery<EventData>(EVENT, { id });
  const can = session.canMutate;
  if (q.loading) return <Loading what="Loading the event" />;
  if (q.error) return <ErrorBox error={q.error} retry={q.reload} />;
  const e = q.data?.event;
  if (!e) return <Empty>No such event in this environment.</Empty>;
  const domain = domainOf(e.email);
  return (
    <div class="page">
      <div class="page-head">
        <h1>
          <code>{e.name}</code> <ActionBadge action={e.action} kind={e.kind} />
        </h1>
        <a href={href(['events'])}>All events</a>
      </div>
      <div class="grid2">
        <Card title="Event">
          <Facts
            items={[
              ['Occurred', time(e.occurredAt)],
              ['Received', time(e.receivedAt)],
              ['Endpoint', e.endpoint.toLowerCase()],
              ['Risk', `${risk(e.risk)}${e.riskLevel ? ` (${e.riskLevel.toLowerCase()})` : ''}`],
              [
                'User',
                e.userId ? (
                  <span>
                    <a href={href(['users', e.userId])}>{e.userId}</a>
                    <AddToList type="USER_ID" value={e.userId} canMutate={can} />
                  </span>
                ) : null,
              ],
              [
                'E-mail',
                e.email ? (
                  <span>
                    {e.email}
                    <AddToList type="EMAIL" value={e.email} canMutate={can} />
                  </span>
                ) : null,
              ],
              [
                'E-mail domain',
                domain ? (
                  <span>
                    {domain}
                    <AddToList type="EMAIL_DOMAIN" value={domain} canMutate={can} />
                  </span>
                ) : null,
              ],
              [
                'IP',
                e.ip ? (
                  <span data-testid="event-ip">
                    <a href={href(['events'], { ip: e.ip })}>{e.ip}</a>
                    <AddToList type="IP" value={e.ip} canMutate={can} />
                  </span>
                ) : null,
              ],
              ['Country', e.country],
              [
                'ASN',
                e.asn !== null ? (
                  <span>
                    AS{e.asn}
                    <AddToList type="ASN" value={String(e.asn)} canMutate={can} />
                  </span>
                ) : null,
              ],
              [
                'Device',
                e.device ? (
                  <span>
                    <a href={href(['events'], { deviceToken: e.device.token })}>
                      <code class="token">{e.device.token}</code>
                    </a>{' '}
                    <StateBadge state={e.device.reviewState} />
                    <AddToList type="DEVICE" value={e.device.token} canMutate={can} />
                  </span>
                ) : e.deviceToken ? (
                  <span>
                    <code class="token">{e.deviceToken}</code>
                    <AddToList type="DEVICE" value={e.deviceToken} canMutate={can} />
                  </span>
                ) : null,
              ],
              ['User agent', <span class="wrap">{e.userAgent}</span>],
              ['Degraded', e.degraded ? 'yes: decided without all of its state' : 'no'],
            ]}
          />
        </Card>
        <Card title="Policy that decided it">
          {!e.policy && (
            <Empty>
              {e.kind === 'FEEDBACK'
                ? 'No policy: feedback reports how something ended, and has no verdict.'
                : 'No policy: this event was sent to track or log, and has no verdict.'}
            </Empty>
          )}
          {e.policy?.testToken && (
            <>
              <Facts
                items={[
                  ['Policy', e.policy.name],
                  ['Action', <ActionBadge action={e.policy.action} />],
                  [
                    'Revision',
                    <code class="token" data-testid="event-revision">
                      {e.policy.revision}
                    </code>,
                  ],
                ]}
              />
              <p class="note">
                This verdict was forced by a sandbox test token (
                <code>policy.action:{e.policy.action.toLowerCase()}</code> in the request token): none of this
                environment's policies decided it.
              </p>
            </>
          )}
          {e.policy && !e.policy.testToken && (
            <>
              <Facts
                items={[
                  [
                    'Policy',
                    e.policy.current ? (
                      <a href={href(['policies', e.policy.id])}>{e.policy.name}</a>
                    ) : (
                      e.policy.name
                    ),
                  ],
                  ['Action', <ActionBadge action={e.policy.action} />],
                  [
                    'Revision',
                    <code class="token" data-testid="event-revision">
                      {e.policy.revision}
                    </code>,
                  ],
                  ['Revision made', time(e.policy.revisionDetails?.createdAt)],
                  [
                    'Now',
                    e.policy.current
                      ? e.policy.current.revision === e.policy.revision
                        ? 'unchanged since'
                        : `edited since${e.policy.current.archived ? ' (archived)' : ''}`
                      : 'deleted',
                  ],
                ]}
              />
              {e.policy.revisionDetails && (
                <>
                  <h3>Conditions at that revision</h3>
                  <p data-testid="event-conditions">
                    {e.policy.action.toLowerCase()} when {conditionText(e.policy.revisionDetails.conditions)}
                  </p>
                </>
              )}
            </>
          )}
        </Card>
      </div>
      <Card title={`Signals (${e.signals.length})`}>
        {e.signals.length === 0 && <Empty>No signal fired.</Empty>}
        <ul class="signal-list">
          {e.signals.map((s) => (
            <li key={s.name}>
              <a href={href(['events'], { signal: s.name })}>
                <strong>{s.name}</strong>
              </a>
              {s.name === 'in_list' && typeof s.details.list_id === 'string' && (
                <>
                  {' '}
                  <a href={href(['lists', s.details.list_id])} data-testid="in-list-link">
                    open list {typeof s.details.list_name === 'string' ? s.details.list_name : ''}
                  </a>
                </>
              )}
              <Json value={s.details} />
            </li>
          ))}
        </ul>
      </Card>
      <div class="grid3">
        <Card title="Headers">
          <Json value={e.headers} />
        </Card>
        <Card title="Properties">
          <Json value={e.properties} />
        </Card>
        <Card title="User traits">
          <Json value={e.userTraits} />
        </Card>
      </div>
    </div>
  );
}

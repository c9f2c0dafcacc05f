/** A user: profile, devices (approve / report), timeline, webhooks about them, privacy requests. */
import { useState } from 'preact/hooks';
import { gql, type ApiError, type SessionInfo } from '../api';
import {
  Card,
  Confirm,
  DataTable,
  Empty,
  ErrorBox,
  Facts,
  Loading,
  ReadOnlyNote,
  StateBadge,
} from '../components';
import { count, time } from '../format';
import { useAction, useQuery } from '../hooks';
import { href, navigate } from '../router';
import { EventTable, type EventRow } from './events';
import { DeliveryTable, type Delivery } from './webhooks';
import { JobTable, type PrivacyJob } from './privacy';
import { REVIEW, USER } from '../queries';
import { AddToList, domainOf } from '../lists';

interface Device {
  token: string;
  reviewState: string;
  risk: number;
  type: string;
  lastSeenAt: string;
  createdAt: string;
  approvedAt: string | null;
  escalatedAt: string | null;
  removedAt: string | null;
  ip: string | null;
  location: { country: string | null; city: string | null } | null;
  userAgent: { browser: string; version: string; os: string; mobile: boolean };
  /** A phone a mobile client token named: the app and the phone. */
  app: { id: string; version: string; model: string; os: string } | null;
}

interface UserData {
  user: {
    id: string;
    email: string | null;
    username: string | null;
    phone: string | null;
    registeredAt: string | null;
    createdAt: string;
    lastSeenAt: string;
    countries: string[];
    lastPasswordResetAt: string | null;
    lastLocation: { lat: number; lon: number; country: string | null; at: string } | null;
    riskSummary: {
      level: string;
      deviceCount: number;
      approvedDevices: number;
      reportedDevices: number;
      unreviewedDevices: number;
      highestDeviceRisk: number;
      eventCount: number;
      countsPartial: boolean;
      actions: { action: string | null; count: number }[];
      topSignals: { signal: string; count: number }[];
    };
    devices: Device[];
    events: { edges: { node: EventRow }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
  } | null;
  webhookDeliveries: { edges: { node: Delivery }[] };
  privacyJobs: { edges: { node: PrivacyJob }[] };
}

type Pending = { kind: 'report' | 'approve'; device: Device } | { kind: 'export' } | { kind: 'purge' } | null;

export function UserPage({ id, session }: { id: string; session: SessionInfo }) {
  const [after, setAfter] = useState<string | null>(null);
  const q = useQuery<UserData>(USER, { id, after });
  const [pending, setPending] = useState<Pending>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const act = useAction(async (p: NonNullable<Pending>) => {
    if (p.kind === 'approve')
      await gql(`mutation($t: ID!) { approveDevice(token: $t) { token reviewState } }`, {
        t: p.device.token,
      });
    if (p.kind === 'report')
      await gql(`mutation($t: ID!) { reportDevice(token: $t) { token reviewState } }`, { t: p.device.token });
    if (p.kind === 'export') {
      const r = await gql<{ requestPrivacyExport: { id: string; status: string } }>(
        `mutation($u: ID!) { requestPrivacyExport(userId: $u) { id status } }`,
        { u: id },
      );
      setNotice(
        `Export requested: job ${r.requestPrivacyExport.id} is ${r.requestPrivacyExport.status.toLowerCase()}.`,
      );
    }
    if (p.kind === 'purge') {
      const r = await gql<{ purgeUser: { total: number } }>(
        `mutation($u: ID!) { purgeUser(userId: $u) { total } }`,
        { u: id },
      );
      setNotice(`Purged: ${r.purgeUser.total} records deleted.`);
      setPending(null);
      navigate(href(['privacy']));
      return;
    }
    setPending(null);
    q.reload();
  });

  if (q.loading && !q.data) return <Loading what="Loading the user" />;
  if (q.error) return <ErrorBox error={q.error} retry={q.reload} />;
  const u = q.data?.user;
  if (!u)
    return <Empty>Rampart has never seen user {id} in this environment (or the user was purged).</Empty>;
  const rs = u.riskSummary;
  const jobs = (q.data?.privacyJobs.edges ?? []).map((e) => e.node);
  const deliveries = (q.data?.webhookDeliveries.edges ?? []).map((e) => e.node);
  return (
    <div class="page">
      <div class="page-head">
        <h1>
          User <code>{u.id}</code>{' '}
          <span class={`badge risk-${rs.level.toLowerCase()}`}>{rs.level.toLowerCase()} risk</span>
        </h1>
      </div>
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <div class="grid2">
        <Card title="Profile">
          <Facts
            items={[
              [
                'User id',
                <span>
                  {u.id}
                  <AddToList type="USER_ID" value={u.id} canMutate={session.canMutate} />
                </span>,
              ],
              [
                'E-mail',
                u.email ? (
                  <span>
                    {u.email}
                    <AddToList type="EMAIL" value={u.email} canMutate={session.canMutate} />
                  </span>
                ) : null,
              ],
              [
                'E-mail domain',
                domainOf(u.email) ? (
                  <span>
                    {domainOf(u.email)}
                    <AddToList
                      type="EMAIL_DOMAIN"
                      value={domainOf(u.email) as string}
                      canMutate={session.canMutate}
                    />
                  </span>
                ) : null,
              ],
              ['User name', u.username],
              ['Phone', u.phone],
              ['Registered', time(u.registeredAt)],
              ['First seen', time(u.createdAt)],
              ['Last seen', time(u.lastSeenAt)],
              ['Countries of successful events', u.countries.join(', ') || null],
              [
                'Last location',
                u.lastLocation
                  ? `${u.lastLocation.country ?? '?'} (${u.lastLocation.lat.toFixed(2)}, ${u.lastLocation.lon.toFixed(2)}) at ${time(u.lastLocation.at)}`
                  : null,
              ],
              ['Last password reset', time(u.lastPasswordResetAt)],
            ]}
          />
        </Card>
        <Card title="Risk summary">
          <Facts
            items={[
              [
                'Devices',
                `${rs.deviceCount} (${rs.approvedDevices} approved, ${rs.reportedDevices} reported, ${rs.unreviewedDevices} unreviewed)`,
              ],
              ['Highest device risk', `${rs.highestDeviceRisk} / 100`],
              [
                'Events',
                rs.countsPartial ? `${count(rs.eventCount)}+ (counts of the newest)` : count(rs.eventCount),
              ],
              [
                'Verdicts',
                rs.actions
                  .map((a) => `${a.action ? a.action.toLowerCase() : 'no verdict'} ${a.count}`)
                  .join(', ') || null,
              ],
              ['Top signals', rs.topSignals.map((s) => `${s.signal} (${s.count})`).join(', ') || null],
            ]}
          />
        </Card>
      </div>
      <Card title={`Devices (${u.devices.length})`} id="devices">
        {!session.canMutate && <ReadOnlyNote />}
        {u.devices.length === 0 && <Empty>No device recorded.</Empty>}
        {u.devices.length > 0 && (
          <DataTable head={['Device', 'State', 'Risk', 'Last seen', 'Where', 'Actions']}>
            {u.devices.map((d) => (
              <tr key={d.token} data-testid="device-row">
                <td>
                  <strong>
                    {d.app
                      ? `${d.app.id} ${d.app.version} on ${d.app.model} (${d.app.os})`
                      : `${d.userAgent.browser} ${d.userAgent.version.split('.')[0]} on ${d.userAgent.os}`}
                  </strong>
                  <br />
                  <a href={href(['events'], { deviceToken: d.token })}>
                    <code class="token">{d.token}</code>
                  </a>
                  <AddToList type="DEVICE" value={d.token} canMutate={session.canMutate} />
                </td>
                <td>
                  <StateBadge state={d.removedAt ? 'removed' : d.reviewState} />
                </td>
                <td>{d.risk}</td>
                <td>{time(d.lastSeenAt)}</td>
                <td>
                  {d.ip ?? '—'}{' '}
                  {d.location && (
                    <span class="muted">
                      {[d.location.city, d.location.country].filter(Boolean).join(', ')}
                    </span>
                  )}
                  {d.ip && <AddToList type="IP" value={d.ip} canMutate={session.canMutate} />}
                </td>
                <td class="row">
                  <button
                    type="button"
                    disabled={!session.canMutate || d.reviewState === 'APPROVED'}
                    onClick={() => setPending({ kind: 'approve', device: d })}
                    data-testid="approve"
                  >
                    Approve
                  </button>
                  <button
                    type="button"
                    class="danger"
                    disabled={!session.canMutate || d.reviewState === 'REPORTED'}
                    onClick={() => setPending({ kind: 'report', device: d })}
                    data-testid="report"
                  >
                    Report
                  </button>
                </td>
              </tr>
            ))}
          </DataTable>
        )}
      </Card>
      <Card
        title="Timeline"
        id="timeline"
        actions={<a href={href(['events'], { userId: u.id })}>Search these events</a>}
      >
        {u.events.edges.length === 0 ? (
          <Empty>No events.</Empty>
        ) : (
          <EventTable rows={u.events.edges.map((e) => e.node)} showUser={false} />
        )}
        <div class="row">
          {after && (
            <button type="button" onClick={() => setAfter(null)}>
              Newest
            </button>
          )}
          {u.events.pageInfo.hasNextPage && (
            <button type="button" onClick={() => setAfter(u.events.pageInfo.endCursor)}>
              Older
            </button>
          )}
        </div>
      </Card>
      <Card
        title="Webhooks about this user"
        id="user-webhooks"
        actions={
          <button type="button" onClick={q.reload} disabled={q.loading} data-testid="refresh-user">
            {q.loading ? 'Refreshing…' : 'Refresh'}
          </button>
        }
      >
        {deliveries.length === 0 ? (
          <Empty>No webhook was sent about this user.</Empty>
        ) : (
          <DeliveryTable rows={deliveries} />
        )}
      </Card>
      <Card title="Privacy" id="user-privacy">
        {!session.canMutate && <ReadOnlyNote />}
        <p>
          Export e-mails every record of this user to the environment's privacy address. Purge deletes the
          user and every record about them, permanently.
        </p>
        <div class="row">
          <button
            type="button"
            disabled={!session.canMutate}
            onClick={() => setPending({ kind: 'export' })}
            data-testid="export"
          >
            Request export
          </button>
          <button
            type="button"
            class="danger"
            disabled={!session.canMutate}
            onClick={() => setPending({ kind: 'purge' })}
            data-testid="purge"
          >
            Purge user…
          </button>
        </div>
        {jobs.length > 0 && <JobTable rows={jobs} />}
      </Card>
      {pending && (
        <PendingDialog
          pending={pending}
          userId={u.id}
          busy={act.busy}
          error={act.error}
          onConfirm={() => void act.go(pending)}
          onCancel={() => {
            act.clear();
            setPending(null);
          }}
        />
      )}
    </div>
  );
}

function PendingDialog({
  pending,
  userId,
  busy,
  error,
  onConfirm,
  onCancel,
}: {
  pending: NonNullable<Pending>;
  userId: string;
  busy: boolean;
  error: ApiError | null;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const text = {
    approve: {
      title: 'Approve this device?',
      body: 'It is marked as the user’s own: its risk becomes 0 and medium-risk logins from it are no longer challenged.',
      label: 'Approve',
      danger: false,
    },
    report: {
      title: 'Report this device?',
      body: 'It is marked as not the user’s: its next login is denied by the default policies, and a $incident.confirmed webhook is sent.',
      label: 'Report device',
      danger: true,
    },
    export: {
      title: 'Request a privacy export?',
      body: `Every record of user ${userId} is compiled and a download link is e-mailed to the environment's privacy address.`,
      label: 'Request export',
      danger: false,
    },
    purge: {
      title: `Purge user ${userId}?`,
      body: 'The user, their devices, events and webhooks are deleted permanently. This cannot be undone.',
      label: 'Purge permanently',
      danger: true,
    },
  }[pending.kind];
  return (
    <Confirm
      title={text.title}
      confirmLabel={text.label}
      danger={text.danger}
      onConfirm={onConfirm}
      onCancel={onCancel}
      busy={busy}
    >
      <p>{text.body}</p>
      {'device' in pending && (
        <p>
          <code class="token">{pending.device.token}</code>
        </p>
      )}
      {error && <ErrorBox error={error} />}
    </Confirm>
  );
}

interface ReviewDevice {
  token: string;
  userId: string;
  reviewState: string;
  risk: number;
  lastSeenAt: string;
  ip: string | null;
  location: { country: string | null; city: string | null } | null;
  userAgent: { browser: string; os: string };
}

function ReviewList({ rows, empty }: { rows: ReviewDevice[]; empty: string }) {
  if (rows.length === 0) return <Empty>{empty}</Empty>;
  return (
    <DataTable head={['User', 'Device', 'Risk', 'State', 'Last seen']}>
      {rows.map((d) => (
        <tr key={d.token} data-testid="review-row">
          <td>
            <a href={href(['users', d.userId])}>{d.userId}</a>
          </td>
          <td>
            {d.userAgent.browser} on {d.userAgent.os}{' '}
            <span class="muted">{[d.ip, d.location?.country].filter(Boolean).join(' ')}</span>
          </td>
          <td>{d.risk}</td>
          <td>
            <StateBadge state={d.reviewState} />
          </td>
          <td>{time(d.lastSeenAt)}</td>
        </tr>
      ))}
    </DataTable>
  );
}

/** Users: jump to one by id, or start from the devices that need a look. */
export function UserSearch() {
  const [id, setId] = useState('');
  const q = useQuery<{
    risky: { edges: { node: ReviewDevice }[] };
    reported: { edges: { node: ReviewDevice }[] };
  }>(REVIEW, {
    risky: { minRisk: 60, reviewState: 'UNREVIEWED' },
    reported: { reviewState: 'REPORTED' },
  });
  return (
    <div class="page">
      <h1>Users</h1>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (id.trim()) navigate(href(['users', id.trim()]));
        }}
      >
        <label>
          User id
          <input
            value={id}
            onInput={(e) => setId((e.target as HTMLInputElement).value)}
            name="userId"
            required
          />
        </label>
        <button class="primary" type="submit">
          Open
        </button>
      </form>
      {q.loading && <Loading what="Finding devices to review" />}
      {q.error && <ErrorBox error={q.error} retry={q.reload} />}
      {q.data && (
        <div class="grid2">
          <Card title="Risky devices not reviewed yet" id="risky-devices">
            <ReviewList
              rows={q.data.risky.edges.map((e) => e.node)}
              empty="No unreviewed device with a risk of 60 or more."
            />
          </Card>
          <Card title="Reported devices" id="reported-devices">
            <ReviewList
              rows={q.data.reported.edges.map((e) => e.node)}
              empty="No device has been reported."
            />
          </Card>
        </div>
      )}
    </div>
  );
}

/** Privacy jobs: exports with their status, recipient, size and error. */
import { useState } from 'preact/hooks';
import { Card, DataTable, Empty, ErrorBox, Loading, StateBadge } from '../components';
import { bytes, time } from '../format';
import { useQuery } from '../hooks';
import { href } from '../router';
import { JOB_FIELDS } from '../queries';

export interface PrivacyJob {
  id: string;
  userId: string;
  status: string;
  recipient: string;
  createdAt: string;
  expiresAt: string;
  sentAt: string | null;
  exportBytes: number | null;
  error: string | null;
}

export function JobTable({ rows }: { rows: PrivacyJob[] }) {
  return (
    <DataTable head={['Requested', 'User', 'Status', 'Recipient', 'Sent', 'Size', 'Expires', 'Error']}>
      {rows.map((j) => (
        <tr key={j.id} data-testid="job-row">
          <td>{time(j.createdAt)}</td>
          <td>
            <a href={href(['users', j.userId])}>{j.userId}</a>
          </td>
          <td>
            <StateBadge state={j.status} />
          </td>
          <td>{j.recipient}</td>
          <td>{time(j.sentAt)}</td>
          <td>{bytes(j.exportBytes)}</td>
          <td>{time(j.expiresAt)}</td>
          <td class="wrap">{j.error ?? '—'}</td>
        </tr>
      ))}
    </DataTable>
  );
}

const LIST = `query Jobs($after: String) { privacyJobs(first: 25, after: $after) { edges { node { ${JOB_FIELDS} } } pageInfo { hasNextPage endCursor } } }`;

interface ListData {
  privacyJobs: {
    edges: { node: PrivacyJob }[];
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
}

export function Privacy() {
  const [after, setAfter] = useState<string | null>(null);
  const q = useQuery<ListData>(LIST, { after });
  const rows = q.data?.privacyJobs.edges.map((e) => e.node) ?? [];
  return (
    <div class="page">
      <h1>Privacy jobs</h1>
      <p class="muted">
        Exports are requested from a user's page (or POST /v1/privacy/users/…); the link is e-mailed to the
        environment's privacy address and works for 48 hours. Purges leave no job: nothing of the user is
        left.
      </p>
      <Card title="Exports">
        {q.loading && <Loading what="Loading privacy jobs" />}
        {q.error && <ErrorBox error={q.error} retry={q.reload} />}
        {q.data && rows.length === 0 && <Empty>No privacy export has been requested.</Empty>}
        {rows.length > 0 && <JobTable rows={rows} />}
        <div class="row">
          {after && (
            <button type="button" onClick={() => setAfter(null)}>
              Newest
            </button>
          )}
          {q.data?.privacyJobs.pageInfo.hasNextPage && (
            <button type="button" onClick={() => setAfter(q.data?.privacyJobs.pageInfo.endCursor ?? null)}>
              Older
            </button>
          )}
        </div>
      </Card>
    </div>
  );
}

/** Webhook deliveries: status, attempts and body of each, filterable by status. */
import { useState } from 'preact/hooks';
import { gql, type ApiError } from '../api';
import { Card, DataTable, Empty, ErrorBox, Facts, Json, Loading, StateBadge } from '../components';
import { time } from '../format';
import { useQuery } from '../hooks';
import { href, navigate, type Route } from '../router';
import { DELIVERY_FIELDS } from '../queries';

export interface Delivery {
  id: string;
  type: string;
  trigger: string;
  url: string;
  status: string;
  userId: string | null;
  deviceToken: string | null;
  test: boolean;
  maxAttempts: number;
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
  lastError: string | null;
  body: string;
  attempts: {
    at: string;
    statusCode: number | null;
    error: string | null;
    durationMs: number;
    url: string;
  }[];
}

const LIST = `query Deliveries($status: DeliveryStatus, $after: String) {
  webhookDeliveries(status: $status, first: 25, after: $after) { edges { node { ${DELIVERY_FIELDS} } } pageInfo { hasNextPage endCursor } }
}`;

interface ListData {
  webhookDeliveries: {
    edges: { node: Delivery }[];
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
}

export function DeliveryTable({ rows }: { rows: Delivery[] }) {
  const [open, setOpen] = useState<string | null>(null);
  return (
    <DataTable head={['Created', 'Type', 'Status', 'Attempts', 'User', 'Last error']}>
      {rows.map((d) => [
        <tr key={d.id} data-testid="delivery-row">
          <td>
            <button
              type="button"
              class="link"
              aria-expanded={open === d.id}
              onClick={() => setOpen(open === d.id ? null : d.id)}
            >
              {time(d.createdAt)}
            </button>
          </td>
          <td>
            <code>{d.type}</code> <span class="muted">{d.trigger}</span>
          </td>
          <td>
            <StateBadge state={d.status} />
          </td>
          <td>
            {d.attempts.length} / {d.maxAttempts}
          </td>
          <td>{d.userId ? <a href={href(['users', d.userId])}>{d.userId}</a> : '—'}</td>
          <td class="wrap">{d.lastError ?? '—'}</td>
        </tr>,
        open === d.id && (
          <tr key={`${d.id}-detail`} class="detail">
            <td colSpan={6}>
              <Facts
                items={[
                  ['Delivery id', <code class="token">{d.id}</code>],
                  ['URL', <span class="wrap">{d.url}</span>],
                  ['Next attempt', time(d.nextAttemptAt)],
                  ['Delivered', time(d.deliveredAt)],
                  ['Test', d.test ? 'yes' : 'no'],
                ]}
              />
              <h3>Attempts</h3>
              {d.attempts.length === 0 ? (
                <Empty>Not attempted yet.</Empty>
              ) : (
                <ol class="attempts">
                  {d.attempts.map((a, i) => (
                    <li key={i}>
                      {time(a.at)}: {a.statusCode !== null ? `HTTP ${a.statusCode}` : 'no answer'} in{' '}
                      {a.durationMs} ms{a.error ? ` — ${a.error}` : ''}
                    </li>
                  ))}
                </ol>
              )}
              <h3>Body</h3>
              <Json value={safeParse(d.body)} />
            </td>
          </tr>
        ),
      ])}
    </DataTable>
  );
}

function safeParse(s: string): unknown {
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return s;
  }
}

export function Webhooks({ route, canMutate }: { route: Route; canMutate: boolean }) {
  const status = route.params.get('status') || null;
  const [after, setAfter] = useState<string[]>([]);
  const q = useQuery<ListData>(LIST, { status, after: after[after.length - 1] ?? null });
  const [test, setTest] = useState<{ busy: boolean; error: ApiError | null; result: Delivery | null }>({
    busy: false,
    error: null,
    result: null,
  });
  const sendTest = async () => {
    setTest({ busy: true, error: null, result: null });
    try {
      const r = await gql<{ sendTestWebhook: Delivery }>(
        `mutation { sendTestWebhook { ${DELIVERY_FIELDS} } }`,
      );
      setTest({ busy: false, error: null, result: r.sendTestWebhook });
      q.reload();
    } catch (e) {
      setTest({ busy: false, error: e as ApiError, result: null });
    }
  };
  const rows = q.data?.webhookDeliveries.edges.map((e) => e.node) ?? [];
  return (
    <div class="page">
      <div class="page-head">
        <h1>Webhook deliveries</h1>
        <div class="row">
          <label class="inline">
            Status{' '}
            <select
              value={status ?? ''}
              onChange={(e) => {
                setAfter([]);
                navigate(href(['webhooks'], { status: (e.target as HTMLSelectElement).value }));
              }}
            >
              <option value="">any</option>
              {['PENDING', 'DELIVERING', 'DELIVERED', 'FAILED'].map((s) => (
                <option key={s} value={s}>
                  {s.toLowerCase()}
                </option>
              ))}
            </select>
          </label>
          {canMutate && (
            <button type="button" onClick={sendTest} disabled={test.busy}>
              {test.busy ? 'Sending…' : 'Send a test webhook'}
            </button>
          )}
        </div>
      </div>
      {test.error && <ErrorBox error={test.error} />}
      {test.result && (
        <p class="notice" role="status">
          Test webhook {test.result.status.toLowerCase()}
          {test.result.lastError ? `: ${test.result.lastError}` : ''}.
        </p>
      )}
      <Card title="Deliveries">
        {q.loading && <Loading what="Loading deliveries" />}
        {q.error && <ErrorBox error={q.error} retry={q.reload} />}
        {q.data && rows.length === 0 && (
          <Empty>
            {status
              ? `No ${status.toLowerCase()} delivery.`
              : 'No webhook has been sent yet. Set the URL with npx rampart env set-webhook.'}
          </Empty>
        )}
        {rows.length > 0 && <DeliveryTable rows={rows} />}
        <div class="row">
          {after.length > 0 && (
            <button type="button" onClick={() => setAfter([])}>
              Newest
            </button>
          )}
          {q.data?.webhookDeliveries.pageInfo.hasNextPage && (
            <button
              type="button"
              onClick={() => setAfter([...after, q.data?.webhookDeliveries.pageInfo.endCursor ?? ''])}
            >
              Older
            </button>
          )}
        </div>
      </Card>
    </div>
  );
}

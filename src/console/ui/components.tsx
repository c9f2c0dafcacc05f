/** Building blocks of every page: states (loading, error, empty), badges, tables, charts. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import type { ApiError } from './api';
import { count } from './format';

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p class="state loading" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" />
      {what}…
    </p>
  );
}

/** A message with its `commands` set as code. */
export function Message({ text }: { text: string }) {
  return <>{text.split('`').map((part, i) => (i % 2 === 1 ? <code key={i}>{part}</code> : part))}</>;
}

const TITLES: Readonly<Record<string, string>> = {
  FORBIDDEN: 'Not allowed',
  BAD_USER_INPUT: 'Not accepted',
};

export function ErrorBox({ error, retry, title }: { error: ApiError; retry?: () => void; title?: string }) {
  // The API's message for refused fields is those fields joined: the list says it once.
  const onlyFields =
    error.fields.length > 0 &&
    error.message === error.fields.map((f) => `${f.field}: ${f.message}`).join('; ');
  return (
    <div class="state error" role="alert">
      <strong>{title ?? TITLES[error.code] ?? 'Something went wrong'}</strong>
      {!onlyFields && (
        <p>
          <Message text={error.message} />
        </p>
      )}
      {error.fields.length > 0 && (
        <ul>
          {error.fields.map((f) => (
            <li key={f.field}>
              <code>{f.field}</code>: <Message text={f.message} />
            </li>
          ))}
        </ul>
      )}
      {retry && (
        <button type="button" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="state empty">{children}</p>;
}

/** The console's data table: scrolls sideways in its wrapper on a narrow screen; `head` names the columns, `children` are the body's rows. */
export function DataTable({
  head,
  children,
  compact,
  caption,
}: {
  head: string[];
  children: ComponentChildren;
  compact?: boolean;
  caption?: string;
}) {
  return (
    <div class="table-wrap">
      <table class={compact ? 'data compact' : 'data'}>
        {caption && <caption>{caption}</caption>}
        <thead>
          <tr>
            {head.map((h) => (
              <th scope="col" key={h}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

export function Card({
  title,
  children,
  actions,
  id,
}: {
  title: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
  id?: string;
}) {
  return (
    <section class="card" aria-labelledby={id ? `${id}-title` : undefined} id={id}>
      <header>
        <h2 id={id ? `${id}-title` : undefined}>{title}</h2>
        {actions && <div class="card-actions">{actions}</div>}
      </header>
      {children}
    </section>
  );
}

/** What an event without a verdict is (the API's `Event.kind`), as its badge says it. */
const NO_VERDICT: Readonly<Record<string, { label: string; title: string }>> = {
  FEEDBACK: {
    label: 'feedback',
    title:
      'Feedback: the application reported how a challenge, a review, an incident or a password reset ended (no verdict)',
  },
  ACTIVITY: {
    label: 'no verdict',
    title: 'Activity sent to track or log, such as a logout or a failed login: recorded without a verdict',
  },
};

/** A verdict's action; for an event without one, what the event is (`kind`: FEEDBACK or ACTIVITY). */
export function ActionBadge({ action, kind }: { action: string | null | undefined; kind?: string }) {
  if (!action) {
    const k = NO_VERDICT[kind ?? 'ACTIVITY'] ?? NO_VERDICT.ACTIVITY;
    return (
      <span class="badge muted" title={k.title}>
        {k.label}
      </span>
    );
  }
  const a = action.toLowerCase();
  return <span class={`badge action-${a}`}>{a}</span>;
}

export function StateBadge({ state }: { state: string }) {
  const s = state.toLowerCase();
  return <span class={`badge state-${s}`}>{s}</span>;
}

/** A ranked list as horizontal bars (readable as a table by screen readers). */
export function Bars({
  rows,
  label,
  render,
}: {
  rows: { key: string; count: number }[];
  label: string;
  render?: (key: string) => ComponentChildren;
}) {
  if (rows.length === 0) return <Empty>No {label.toLowerCase()} in this range.</Empty>;
  const max = Math.max(...rows.map((r) => r.count), 1);
  return (
    <table class="bars">
      <thead class="visually-hidden">
        <tr>
          <th scope="col">{label}</th>
          <th scope="col">Events</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.key}>
            <th scope="row" class="bar-key">
              {render ? render(r.key) : r.key}
            </th>
            <td class="bar-cell">
              <span class="bar" style={{ width: `${Math.max(2, (r.count / max) * 100)}%` }} />
              <span class="bar-n">{count(r.count)}</span>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export interface Series {
  label: string;
  color: string;
  values: number[];
}

/** A time chart (uPlot) of several series over the same timestamps (epoch seconds). */
export function TimeChart({ times, series, title }: { times: number[]; series: Series[]; title: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = () => Math.max(280, el.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 240,
        title: undefined,
        scales: { x: { time: true } },
        axes: [
          { stroke: '#5b6474', grid: { stroke: '#eef0f3' } },
          { stroke: '#5b6474', grid: { stroke: '#eef0f3' }, size: 50 },
        ],
        series: [
          {},
          ...series.map((s) => ({
            label: s.label,
            stroke: s.color,
            width: 2,
            fill: `${s.color}22`,
            points: { show: false },
          })),
        ],
      },
      [times, ...series.map((s) => s.values)],
      el,
    );
    const observer = new ResizeObserver(() => plot.setSize({ width: width(), height: 240 }));
    observer.observe(el);
    return () => {
      observer.disconnect();
      plot.destroy();
    };
  }, [times, series]);
  const totals = series.map((s) => `${s.label}: ${count(s.values.reduce((a, b) => a + b, 0))}`).join(', ');
  return <div class="chart" ref={box} role="img" aria-label={`${title}. ${totals}`} />;
}

/** Key/value pairs as a definition list. */
export function Facts({ items }: { items: [string, ComponentChildren][] }) {
  return (
    <dl class="facts">
      {items.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v ?? '—'}</dd>
        </div>
      ))}
    </dl>
  );
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

/** A dialog that asks before something that cannot be undone. */
export function Confirm({
  title,
  children,
  confirmLabel,
  danger,
  onConfirm,
  onCancel,
  busy,
}: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
  busy?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      class="confirm"
      aria-labelledby="confirm-title"
      onCancel={(e) => {
        e.preventDefault();
        onCancel();
      }}
    >
      <h2 id="confirm-title">{title}</h2>
      <div>{children}</div>
      <div class="row end">
        <button type="button" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
        <button
          type="button"
          class={danger ? 'danger' : 'primary'}
          onClick={onConfirm}
          disabled={busy}
          data-testid="confirm"
        >
          {busy ? 'Working…' : confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/** Explains why a change is not offered to an analyst key. */
export function ReadOnlyNote() {
  return (
    <p class="note">Signed in with an analyst key: read-only. Changes need the environment's API secret.</p>
  );
}

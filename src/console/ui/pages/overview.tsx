/** Overview: verdicts by action over time, the signals that fire most, where denials and challenges come from. */
import { useMemo, useState } from 'preact/hooks';
import { Bars, Card, Empty, ErrorBox, Loading, TimeChart } from '../components';
import { count } from '../format';
import { useQuery, type QueryState } from '../hooks';
import { href, navigate, type Route } from '../router';
import { SERIES, SOURCES } from '../queries';

const RANGES: Record<string, { label: string; ms: number; bucket: 'HOUR' | 'DAY' }> = {
  '24h': { label: 'Last 24 hours', ms: 86_400_000, bucket: 'HOUR' },
  '7d': { label: 'Last 7 days', ms: 7 * 86_400_000, bucket: 'HOUR' },
  '30d': { label: 'Last 30 days', ms: 30 * 86_400_000, bucket: 'DAY' },
};

interface Counted {
  action: string | null;
  count: number;
}
interface SeriesData {
  analytics: {
    total: number;
    actions: Counted[];
    signals: { signal: string; count: number }[];
    timeSeries: { truncated: boolean; buckets: { start: string; total: number; actions: Counted[] }[] };
  };
}
interface TopList {
  distinct: number;
  entries: { key: string; count: number }[];
}
interface SourcesData {
  analytics: { total: number; ips: TopList; asns: TopList; countries: TopList };
}

const COLORS: Record<string, string> = { ALLOW: '#2f855a', CHALLENGE: '#b7791f', DENY: '#c53030' };

export function Overview({ route }: { route: Route }) {
  const rangeKey = RANGES[route.params.get('range') ?? ''] ? (route.params.get('range') as string) : '24h';
  const range = RANGES[rangeKey];
  // Aligned to the next minute, so that re-rendering does not make a new query and the range is
  // one the overview's rollups answer exactly (docs/state.md); Refresh moves it up to now.
  const [tick, setTick] = useState(0);
  const to = useMemo(() => new Date(Math.ceil(Date.now() / 60_000) * 60_000).toISOString(), [rangeKey, tick]);
  const from = new Date(Date.parse(to) - range.ms).toISOString();
  const series = useQuery<SeriesData>(SERIES, { filter: { from, to }, bucket: range.bucket });
  const denied = useQuery<SourcesData>(SOURCES, { filter: { from, to, action: 'DENY' } });
  const challenged = useQuery<SourcesData>(SOURCES, { filter: { from, to, action: 'CHALLENGE' } });

  const chart = useMemo(() => {
    const buckets = series.data?.analytics.timeSeries.buckets ?? [];
    const times = buckets.map((b) => Date.parse(b.start) / 1000);
    const of = (action: string) => buckets.map((b) => b.actions.find((a) => a.action === action)?.count ?? 0);
    return {
      times,
      series: ['ALLOW', 'CHALLENGE', 'DENY'].map((a) => ({
        label: a.toLowerCase(),
        color: COLORS[a],
        values: of(a),
      })),
    };
  }, [series.data]);

  const eventsLink = (params: Record<string, string>) => href(['events'], { from, to, ...params });
  const a = series.data?.analytics;
  return (
    <div class="page">
      <div class="page-head">
        <h1>Overview</h1>
        <div class="row">
          <button type="button" onClick={() => setTick((t) => t + 1)} disabled={series.loading}>
            Refresh
          </button>
          <label class="inline">
            Range{' '}
            <select
              value={rangeKey}
              onChange={(e) => navigate(href(['overview'], { range: (e.target as HTMLSelectElement).value }))}
              data-testid="range"
            >
              {Object.entries(RANGES).map(([k, r]) => (
                <option key={k} value={k}>
                  {r.label}
                </option>
              ))}
            </select>
          </label>
        </div>
      </div>
      {series.loading && !a && <Loading what="Counting verdicts" />}
      {series.error && <ErrorBox error={series.error} retry={series.reload} />}
      {a && (
        <>
          <div class="tiles">
            <a class="tile" href={eventsLink({})}>
              <span class="tile-n" data-testid="total">
                {count(a.total)}
              </span>
              <span>events</span>
            </a>
            {['ALLOW', 'CHALLENGE', 'DENY'].map((act) => (
              <a key={act} class={`tile action-${act.toLowerCase()}`} href={eventsLink({ action: act })}>
                <span class="tile-n" data-testid={`count-${act.toLowerCase()}`}>
                  {count(a.actions.find((x) => x.action === act)?.count ?? 0)}
                </span>
                <span>{act.toLowerCase()}</span>
              </a>
            ))}
          </div>
          <Card title="Verdicts over time" id="verdicts">
            {a.total === 0 ? (
              <Empty>
                No verdicts in this range yet. Send events to /v1/risk, /v1/filter or /v1/authenticate.
              </Empty>
            ) : (
              <TimeChart title="Verdicts over time" times={chart.times} series={chart.series} />
            )}
            {a.timeSeries.truncated && (
              <p class="note">
                The range holds more events than one analysis reads: the counts are partial. Choose a shorter
                range.
              </p>
            )}
          </Card>
          <Card title="Signals that fire most" id="signals">
            <Bars
              label="Signal"
              rows={a.signals.map((s) => ({ key: s.signal, count: s.count }))}
              render={(k) => <a href={eventsLink({ signal: k })}>{k}</a>}
            />
          </Card>
        </>
      )}
      <div class="grid2">
        <Sources
          title="Denied: where from"
          state={denied}
          link={(p) => eventsLink({ action: 'DENY', ...p })}
          id="denied"
        />
        <Sources
          title="Challenged: where from"
          state={challenged}
          link={(p) => eventsLink({ action: 'CHALLENGE', ...p })}
          id="challenged"
        />
      </div>
    </div>
  );
}

function Sources({
  title,
  state,
  link,
  id,
}: {
  title: string;
  state: QueryState<SourcesData>;
  link: (p: Record<string, string>) => string;
  id: string;
}) {
  const a = state.data?.analytics;
  return (
    <Card title={title} id={id}>
      {state.loading && !a && <Loading />}
      {state.error && <ErrorBox error={state.error} retry={state.reload} />}
      {a && a.total === 0 && <Empty>None in this range.</Empty>}
      {a && a.total > 0 && (
        <div class="sources">
          <h3>IP addresses ({count(a.ips.distinct)})</h3>
          <Bars label="IP" rows={a.ips.entries} render={(k) => <a href={link({ ip: k })}>{k}</a>} />
          <h3>Networks (ASN) ({count(a.asns.distinct)})</h3>
          <Bars label="ASN" rows={a.asns.entries} render={(k) => <a href={link({ asn: k })}>AS{k}</a>} />
          <h3>Countries ({count(a.countries.distinct)})</h3>
          <Bars
            label="Country"
            rows={a.countries.entries}
            render={(k) => <a href={link({ country: k })}>{k}</a>}
          />
        </div>
      )}
    </Card>
  );
}

/** Environment settings: how long raw records are kept (administrators change it). */
import { useCallback, useEffect, useState } from 'preact/hooks';
import { gql, type SessionInfo } from '../api';
import { Card, ErrorBox, Facts, Loading, ReadOnlyNote } from '../components';
import { useAction, useQuery } from '../hooks';

const RETENTION = `query Retention { environment { id name retentionDays } }`;
const SET_RETENTION = `mutation SetRetention($days: Int!) { setRetentionDays(days: $days) { id retentionDays } }`;

interface RetentionData {
  environment: { id: string; name: string; retentionDays: number };
}

export function Settings({ session }: { session: SessionInfo }) {
  const q = useQuery<RetentionData>(RETENTION);
  const current = q.data?.environment.retentionDays ?? null;
  const [days, setDays] = useState('');
  const [saved, setSaved] = useState<number | null>(null);
  useEffect(() => {
    if (current !== null) setDays(String(current));
  }, [current]);
  const save = useAction(
    useCallback(
      (value: number) => gql<{ setRetentionDays: { retentionDays: number } }>(SET_RETENTION, { days: value }),
      [],
    ),
  );
  const submit = async (e: Event) => {
    e.preventDefault();
    setSaved(null);
    // The API checks the value (a whole number of days, 1 to 3650) and names the field if not.
    const r = await save.go(/^\d+$/.test(days.trim()) ? Number(days.trim()) : Number.NaN);
    if (r) {
      setSaved(r.setRetentionDays.retentionDays);
      q.reload();
    }
  };
  return (
    <div class="page">
      <h1>Settings</h1>
      <Card title="Retention" id="retention">
        <p class="muted">
          Events, rejected track payloads and ended privacy requests older than this are deleted by the
          sweeper, which runs every 6 hours. What the model learnt from them (each user's profile and devices)
          is kept, so known users stay known.
        </p>
        {q.loading && <Loading what="Loading the retention" />}
        {q.error && <ErrorBox error={q.error} retry={q.reload} />}
        {q.data && (
          <Facts
            items={[
              [
                'Kept for',
                <span data-testid="retention-days">{`${q.data.environment.retentionDays} days`}</span>,
              ],
            ]}
          />
        )}
        {q.data && !session.canMutate && <ReadOnlyNote />}
        {q.data && session.canMutate && (
          <form class="row settings-form" onSubmit={submit} aria-label="Retention">
            <label>
              Days to keep raw records (1 to 3650)
              <input
                type="number"
                name="retentionDays"
                min={1}
                max={3650}
                step={1}
                required
                value={days}
                onInput={(e) => setDays((e.target as HTMLInputElement).value)}
              />
            </label>
            <button class="primary" type="submit" disabled={save.busy || !days.trim()}>
              {save.busy ? 'Saving…' : 'Save'}
            </button>
          </form>
        )}
        {save.error && <ErrorBox error={save.error} />}
        {saved !== null && (
          <p class="notice" role="status">
            Raw records are now kept {saved} days.
          </p>
        )}
      </Card>
    </div>
  );
}

/**
 * Policy editor: the ordered rules by group (reorder, archive), one policy's form with a dry run
 * on the stored verdicts of the last days before it is published, and its revisions with a diff
 * against the one before and a rollback.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { gql, type ApiError, type SessionInfo } from '../api';
import { ActionBadge, Card, Confirm, DataTable, Empty, ErrorBox, Loading, ReadOnlyNote } from '../components';
import { count, listOf, risk, time } from '../format';
import { useAction, useQuery } from '../hooks';
import { href, navigate } from '../router';
import { CONDITION_FIELDS, conditionText, type Conditions } from '../conditions';
import { LIST_TYPES, type ListType } from '../lists';
import { EVENT_ROW, LIST_CHOICES } from '../queries';
import type { EventRow } from './events';

const CONDITIONS = `conditions { ${CONDITION_FIELDS} }`;

const POLICIES = `query Policies { policies(includeArchived: true) { id revision name group position action archived catchAll updatedAt ${CONDITIONS} } }`;
const POLICY = `query Policy($id: ID!) { policy(id: $id) { id revision name group position action archived catchAll createdAt updatedAt ${CONDITIONS}
  revisions { id name group action archived createdAt ${CONDITIONS} } } }`;

interface PolicyRow {
  id: string;
  revision: string;
  name: string;
  group: string;
  position: number;
  action: string;
  archived: boolean;
  catchAll: boolean;
  updatedAt: string;
  conditions: Conditions;
}
interface Revision {
  id: string;
  name: string;
  group: string;
  action: string;
  archived: boolean;
  createdAt: string;
  conditions: Conditions;
}
interface PolicyFull extends PolicyRow {
  createdAt: string;
  revisions: Revision[];
}

const GROUPS = ['BEFORE', 'EVENT', 'AFTER'];
const LEVELS = ['LOW', 'MEDIUM', 'HIGH'];
const STATES = ['APPROVED', 'REPORTED', 'UNREVIEWED'];

/** The form's state: text boxes as typed. */
interface Draft {
  name: string;
  group: string;
  action: string;
  events: string;
  riskLevels: string[];
  minRisk: string;
  maxRisk: string;
  signalsAny: string;
  signalsAll: string;
  countries: string;
  deviceStates: string[];
  inLists: string[];
  notInLists: string[];
}

const EMPTY_DRAFT: Draft = {
  name: '',
  group: 'EVENT',
  action: 'CHALLENGE',
  events: '',
  riskLevels: [],
  minRisk: '',
  maxRisk: '',
  signalsAny: '',
  signalsAll: '',
  countries: '',
  deviceStates: [],
  inLists: [],
  notInLists: [],
};

function draftOf(p: { name: string; group: string; action: string; conditions: Conditions }): Draft {
  const c = p.conditions;
  return {
    name: p.name,
    group: p.group,
    action: p.action,
    events: (c.events ?? []).join(', '),
    riskLevels: c.riskLevels ?? [],
    minRisk: c.minRisk === null ? '' : String(c.minRisk),
    maxRisk: c.maxRisk === null ? '' : String(c.maxRisk),
    signalsAny: (c.signalsAny ?? []).join(', '),
    signalsAll: (c.signalsAll ?? []).join(', '),
    countries: (c.countries ?? []).join(', '),
    deviceStates: c.deviceStates ?? [],
    inLists: c.inLists ?? [],
    notInLists: c.notInLists ?? [],
  };
}

/** The API's PolicyConditionsInput from the form. */
function conditionsInput(d: Draft): Record<string, unknown> {
  const num = (s: string) => (s.trim() === '' ? null : Number(s));
  return {
    events: listOf(d.events),
    riskLevels: d.riskLevels.length ? d.riskLevels : null,
    minRisk: num(d.minRisk),
    maxRisk: num(d.maxRisk),
    signalsAny: listOf(d.signalsAny),
    signalsAll: listOf(d.signalsAll),
    countries: listOf(d.countries.toUpperCase()),
    deviceStates: d.deviceStates.length ? d.deviceStates : null,
    inLists: d.inLists.length ? d.inLists : null,
    notInLists: d.notInLists.length ? d.notInLists : null,
  };
}

export function Policies({ id, session }: { id: string | null; session: SessionInfo }) {
  const list = useQuery<{ policies: PolicyRow[] }>(POLICIES);
  const choices = useQuery<{ lists: ListChoice[] }>(LIST_CHOICES);
  const listNames = useMemo(
    () => new Map((choices.data?.lists ?? []).map((l) => [l.id, l.name])),
    [choices.data],
  );
  const reorder = useAction(async (group: string, ids: string[]) => {
    await gql(`mutation($g: PolicyGroup!, $ids: [ID!]!) { reorderPolicies(group: $g, ids: $ids) { id } }`, {
      g: group,
      ids,
    });
    list.reload();
  });
  const policies = list.data?.policies ?? [];
  const move = (p: PolicyRow, by: -1 | 1) => {
    const members = policies.filter((x) => x.group === p.group && !x.archived && !x.catchAll);
    const i = members.findIndex((x) => x.id === p.id);
    const j = i + by;
    if (j < 0 || j >= members.length) return;
    const ids = members.map((x) => x.id);
    [ids[i], ids[j]] = [ids[j], ids[i]];
    void reorder.go(p.group, ids);
  };
  return (
    <div class="page policies">
      <div class="page-head">
        <h1>Policies</h1>
        {session.canMutate && (
          <a class="button primary" href={href(['policies', 'new'])} data-testid="new-policy">
            New policy
          </a>
        )}
      </div>
      <p class="muted">
        Evaluated group by group (before, event, after), each group in order; the first active policy that
        matches decides, else the catch-all.
      </p>
      <div class="split">
        <Card title="Rules in order" id="policy-list">
          {list.loading && !list.data && <Loading />}
          {list.error && <ErrorBox error={list.error} retry={list.reload} />}
          {reorder.error && <ErrorBox error={reorder.error} />}
          {list.data && policies.length === 0 && <Empty>No policies.</Empty>}
          {GROUPS.map((g) => {
            const rows = policies.filter((p) => p.group === g && !p.archived);
            if (!rows.length) return null;
            return (
              <div key={g}>
                <h3>{g.toLowerCase()}</h3>
                <ol class="rules">
                  {rows.map((p, i) => (
                    <li key={p.id} class={p.id === id ? 'selected' : ''}>
                      <a href={href(['policies', p.id])} data-testid="policy-link">
                        <span class="rule-name">{p.name}</span>
                        <span class="rule-when">{conditionText(p.conditions, listNames)}</span>
                      </a>
                      <ActionBadge action={p.action} />
                      {session.canMutate && !p.catchAll && (
                        <span class="reorder">
                          <button
                            type="button"
                            aria-label={`Move ${p.name} up`}
                            disabled={i === 0 || reorder.busy}
                            onClick={() => move(p, -1)}
                          >
                            ↑
                          </button>
                          <button
                            type="button"
                            aria-label={`Move ${p.name} down`}
                            disabled={i >= rows.filter((x) => !x.catchAll).length - 1 || reorder.busy}
                            onClick={() => move(p, 1)}
                          >
                            ↓
                          </button>
                        </span>
                      )}
                    </li>
                  ))}
                </ol>
              </div>
            );
          })}
          {policies.some((p) => p.archived) && (
            <details>
              <summary>Archived ({policies.filter((p) => p.archived).length})</summary>
              <ul class="rules">
                {policies
                  .filter((p) => p.archived)
                  .map((p) => (
                    <li key={p.id}>
                      <a href={href(['policies', p.id])}>
                        <span class="rule-name">{p.name}</span>
                      </a>
                    </li>
                  ))}
              </ul>
            </details>
          )}
        </Card>
        <div>
          {id === 'new' && (
            <PolicyEditor
              key="new"
              session={session}
              policy={null}
              onSaved={(pid) => {
                list.reload();
                navigate(href(['policies', pid]));
              }}
            />
          )}
          {id && id !== 'new' && <PolicyById key={id} id={id} session={session} onChanged={list.reload} />}
          {!id && <Empty>Choose a policy to see and edit it, with its revisions.</Empty>}
        </div>
      </div>
    </div>
  );
}

function PolicyById({ id, session, onChanged }: { id: string; session: SessionInfo; onChanged: () => void }) {
  const q = useQuery<{ policy: PolicyFull | null }>(POLICY, { id });
  if (q.loading && !q.data) return <Loading what="Loading the policy" />;
  if (q.error) return <ErrorBox error={q.error} retry={q.reload} />;
  const p = q.data?.policy;
  if (!p) return <Empty>No such policy in this environment.</Empty>;
  const changed = () => {
    q.reload();
    onChanged();
  };
  return (
    <>
      <PolicyEditor key={p.revision} session={session} policy={p} onSaved={changed} />
      <Revisions policy={p} session={session} onRolledBack={changed} />
    </>
  );
}

interface DryRun {
  from: string;
  to: string;
  scanned: number;
  truncated: boolean;
  changed: number;
  before: { action: string; count: number }[];
  after: { action: string; count: number }[];
  transitions: { from: string; to: string; count: number }[];
  samples: { before: string; beforePolicy: string; after: string; afterPolicy: string; event: EventRow }[];
}

const DRY_RUN = `query DryRun($drafts: [PolicyDraftInput!]!, $days: Int) {
  policyDryRun(drafts: $drafts, days: $days) {
    from to scanned truncated changed
    before { action count } after { action count } transitions { from to count }
    samples(first: 20) { before beforePolicy after afterPolicy event { ${EVENT_ROW} } }
  }
}`;

function PolicyEditor({
  policy,
  session,
  onSaved,
}: {
  policy: PolicyFull | null;
  session: SessionInfo;
  onSaved: (id: string) => void;
}) {
  const [draft, setDraft] = useState<Draft>(() => (policy ? draftOf(policy) : EMPTY_DRAFT));
  const [days, setDays] = useState(7);
  const [dry, setDry] = useState<{ key: string; result: DryRun } | null>(null);
  const [confirmArchive, setConfirmArchive] = useState(false);
  const catchAll = policy?.catchAll ?? false;
  const readOnly = !session.canMutate || Boolean(policy?.archived);
  const key = JSON.stringify([draft, days]);

  const input = () =>
    catchAll
      ? { name: draft.name }
      : policy
        ? { name: draft.name, group: draft.group, action: draft.action, conditions: conditionsInput(draft) }
        : { name: draft.name, group: draft.group, action: draft.action, conditions: conditionsInput(draft) };

  const run = useAction(async () => {
    const drafts = [policy ? { id: policy.id, update: input() } : { create: input() }];
    const r = await gql<{ policyDryRun: DryRun }>(DRY_RUN, { drafts, days });
    setDry({ key, result: r.policyDryRun });
  });
  const publish = useAction(async () => {
    if (policy) {
      await gql(
        `mutation($id: ID!, $input: PolicyUpdateInput!) { updatePolicy(id: $id, input: $input) { id revision } }`,
        { id: policy.id, input: input() },
      );
      onSaved(policy.id);
    } else {
      const r = await gql<{ createPolicy: { id: string } }>(
        `mutation($input: PolicyCreateInput!) { createPolicy(input: $input) { id revision } }`,
        { input: input() },
      );
      onSaved(r.createPolicy.id);
    }
  });
  const archive = useAction(async () => {
    if (!policy) return;
    await gql(`mutation($id: ID!) { archivePolicy(id: $id) { id archived } }`, { id: policy.id });
    setConfirmArchive(false);
    onSaved(policy.id);
  });
  const lists = useQuery<{ lists: ListChoice[] }>(LIST_CHOICES);
  const fresh = dry?.key === key;
  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => setDraft({ ...draft, [k]: v });
  const toggle = (k: 'riskLevels' | 'deviceStates' | 'inLists' | 'notInLists', v: string) =>
    set(k, draft[k].includes(v) ? draft[k].filter((x) => x !== v) : [...draft[k], v]);
  const text = (
    k: 'events' | 'signalsAny' | 'signalsAll' | 'countries' | 'minRisk' | 'maxRisk',
    label: string,
    hint: string,
  ) => (
    <label>
      {label}
      <input
        name={k}
        value={draft[k]}
        disabled={readOnly || catchAll}
        onInput={(e) => set(k, (e.target as HTMLInputElement).value)}
        aria-describedby={`${k}-hint`}
      />
      <small id={`${k}-hint`}>{hint}</small>
    </label>
  );

  return (
    <Card title={policy ? `Edit: ${policy.name}` : 'New policy'} id="policy-editor">
      {!session.canMutate && <ReadOnlyNote />}
      {policy?.archived && (
        <p class="note">This policy is archived: roll back to a revision to restore it.</p>
      )}
      {catchAll && (
        <p class="note">The catch-all answers when nothing else matched; only its name can change.</p>
      )}
      <form
        class="policy-form"
        onSubmit={(e) => {
          e.preventDefault();
          void run.go();
        }}
      >
        <label>
          Name
          <input
            name="name"
            value={draft.name}
            required
            maxLength={200}
            disabled={readOnly}
            onInput={(e) => set('name', (e.target as HTMLInputElement).value)}
          />
        </label>
        <div class="row">
          <label>
            Group
            <select
              name="group"
              value={draft.group}
              disabled={readOnly || catchAll}
              onChange={(e) => set('group', (e.target as HTMLSelectElement).value)}
            >
              {GROUPS.map((g) => (
                <option key={g} value={g}>
                  {g.toLowerCase()}
                </option>
              ))}
            </select>
          </label>
          <label>
            Action
            <select
              name="action"
              value={draft.action}
              disabled={readOnly || catchAll}
              onChange={(e) => set('action', (e.target as HTMLSelectElement).value)}
            >
              {['ALLOW', 'CHALLENGE', 'DENY'].map((a) => (
                <option key={a} value={a}>
                  {a.toLowerCase()}
                </option>
              ))}
            </select>
          </label>
        </div>
        <fieldset disabled={readOnly || catchAll}>
          <legend>When (every condition given must hold)</legend>
          {text(
            'events',
            'Events',
            'Canonical names, comma-separated (e.g. $login, $login.succeeded); empty: every event',
          )}
          <div class="checks" role="group" aria-label="Risk levels">
            <span>Risk levels</span>
            {LEVELS.map((l) => (
              <label key={l} class="check">
                <input
                  type="checkbox"
                  name={`level-${l}`}
                  checked={draft.riskLevels.includes(l)}
                  onChange={() => toggle('riskLevels', l)}
                />{' '}
                {l.toLowerCase()}
              </label>
            ))}
          </div>
          <div class="row">
            {text('minRisk', 'Risk at least', '0-1')}
            {text('maxRisk', 'Risk at most', '0-1')}
          </div>
          {text('signalsAny', 'Any of these signals', 'e.g. proxy_ip, new_device')}
          {text('signalsAll', 'All of these signals', '')}
          {text('countries', 'Countries', 'ISO codes, e.g. FR, US')}
          <div class="checks" role="group" aria-label="Device review states">
            <span>Device states</span>
            {STATES.map((s) => (
              <label key={s} class="check">
                <input
                  type="checkbox"
                  name={`state-${s}`}
                  checked={draft.deviceStates.includes(s)}
                  onChange={() => toggle('deviceStates', s)}
                />{' '}
                {s.toLowerCase()}
              </label>
            ))}
          </div>
          <ListConditions
            lists={lists.data?.lists ?? null}
            inLists={draft.inLists}
            notInLists={draft.notInLists}
            toggle={toggle}
          />
        </fieldset>
        <div class="row">
          <label class="inline">
            Dry run on the last{' '}
            <select
              name="days"
              value={String(days)}
              onChange={(e) => setDays(Number((e.target as HTMLSelectElement).value))}
            >
              {[1, 7, 14, 30].map((d) => (
                <option key={d} value={String(d)}>
                  {d} {d === 1 ? 'day' : 'days'}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" disabled={run.busy || Boolean(policy?.archived)} data-testid="dry-run">
            {run.busy ? 'Deciding again…' : 'Dry run'}
          </button>
          {session.canMutate && !policy?.archived && (
            <button
              type="button"
              class="primary"
              disabled={!fresh || publish.busy}
              onClick={() => void publish.go()}
              data-testid="publish"
              title={fresh ? undefined : 'Run a dry run of this draft first'}
            >
              {publish.busy ? 'Publishing…' : 'Publish'}
            </button>
          )}
          {session.canMutate && policy && !catchAll && !policy.archived && (
            <button type="button" class="danger" onClick={() => setConfirmArchive(true)}>
              Archive…
            </button>
          )}
        </div>
        {session.canMutate && !fresh && !policy?.archived && (
          <small>
            Publishing is offered once a dry run of this very draft has shown what it would change.
          </small>
        )}
      </form>
      {run.error && <ErrorBox error={run.error} />}
      {publish.error && <ErrorBox error={publish.error} />}
      {dry && <DryRunResult result={dry.result} stale={!fresh} />}
      {confirmArchive && (
        <Confirm
          title={`Archive ${policy?.name}?`}
          confirmLabel="Archive"
          danger
          busy={archive.busy}
          onConfirm={() => void archive.go()}
          onCancel={() => setConfirmArchive(false)}
        >
          <p>
            It stops applying from the very next verdict. Its revisions stay readable, and a rollback restores
            it.
          </p>
          {archive.error && <ErrorBox error={archive.error} />}
        </Confirm>
      )}
    </Card>
  );
}

function DryRunResult({ result, stale }: { result: DryRun; stale: boolean }) {
  const rows = ['ALLOW', 'CHALLENGE', 'DENY'].map((a) => {
    const b = result.before.find((x) => x.action === a)?.count ?? 0;
    const n = result.after.find((x) => x.action === a)?.count ?? 0;
    return { a, b, n };
  });
  return (
    <section class={`dry-run${stale ? ' stale' : ''}`} aria-live="polite" data-testid="dry-run-result">
      <h3>
        Dry run: {count(result.scanned)} verdicts from {time(result.from)} to {time(result.to)}
      </h3>
      {stale && <p class="note">The draft changed since: run again before publishing.</p>}
      {result.truncated && <p class="note">Only the newest {count(result.scanned)} verdicts were read.</p>}
      {result.scanned === 0 ? (
        <Empty>No stored verdict in this range.</Empty>
      ) : (
        <>
          <table class="data compact">
            <thead>
              <tr>
                <th scope="col">Action</th>
                <th scope="col">Now</th>
                <th scope="col">With the draft</th>
                <th scope="col">Change</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.a}>
                  <th scope="row">
                    <ActionBadge action={r.a} />
                  </th>
                  <td>{count(r.b)}</td>
                  <td>{count(r.n)}</td>
                  <td class={r.n > r.b ? 'up' : r.n < r.b ? 'down' : ''}>
                    {r.n === r.b ? '—' : `${r.n > r.b ? '+' : ''}${count(r.n - r.b)}`}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <p data-testid="dry-run-changed">
            <strong>{count(result.changed)}</strong> verdicts would change
            {result.transitions.length > 0 &&
              `: ${result.transitions.map((t) => `${t.from.toLowerCase()} → ${t.to.toLowerCase()} ${count(t.count)}`).join(', ')}`}
            .
          </p>
          {result.samples.length > 0 && (
            <DataTable
              head={['Event', 'User', 'Risk', 'Now', 'With the draft']}
              compact
              caption="Sample of changed verdicts"
            >
              {result.samples.map((s) => (
                <tr key={s.event.id}>
                  <td>
                    <a href={href(['events', s.event.id])}>{time(s.event.occurredAt)}</a>{' '}
                    <code>{s.event.name}</code>
                  </td>
                  <td>
                    {s.event.userId ? <a href={href(['users', s.event.userId])}>{s.event.userId}</a> : '—'}
                  </td>
                  <td>{risk(s.event.risk)}</td>
                  <td>
                    <ActionBadge action={s.before} /> <span class="muted">{s.beforePolicy}</span>
                  </td>
                  <td>
                    <ActionBadge action={s.after} /> <span class="muted">{s.afterPolicy}</span>
                  </td>
                </tr>
              ))}
            </DataTable>
          )}
        </>
      )}
    </section>
  );
}

/** Field-by-field differences between two revisions. */
function diff(a: Revision | null, b: Revision): { field: string; from: string; to: string }[] {
  const show = (v: unknown) =>
    v === null || v === undefined ? '—' : Array.isArray(v) ? v.join(', ') : String(v);
  const fields: [string, (r: Revision) => unknown][] = [
    ['name', (r) => r.name],
    ['group', (r) => r.group.toLowerCase()],
    ['action', (r) => r.action.toLowerCase()],
    ['archived', (r) => (r.archived ? 'yes' : 'no')],
    ...(
      [
        'events',
        'riskLevels',
        'minRisk',
        'maxRisk',
        'signalsAny',
        'signalsAll',
        'countries',
        'deviceStates',
        'inLists',
        'notInLists',
      ] as const
    ).map((k): [string, (r: Revision) => unknown] => [k, (r) => r.conditions[k]]),
  ];
  const out: { field: string; from: string; to: string }[] = [];
  for (const [field, get] of fields) {
    const from = a ? show(get(a)) : '—';
    const to = show(get(b));
    if (from !== to) out.push({ field, from, to });
  }
  return out;
}

function Revisions({
  policy,
  session,
  onRolledBack,
}: {
  policy: PolicyFull;
  session: SessionInfo;
  onRolledBack: () => void;
}) {
  const revs = useMemo(() => [...policy.revisions].reverse(), [policy.revisions]);
  const [target, setTarget] = useState<Revision | null>(null);
  const [open, setOpen] = useState<string | null>(revs[0]?.id ?? null);
  useEffect(() => setOpen(revs[0]?.id ?? null), [revs]);
  const rollback = useAction(async (r: Revision) => {
    await gql(`mutation($id: ID!, $rev: ID!) { rollbackPolicy(id: $id, revision: $rev) { id revision } }`, {
      id: policy.id,
      rev: r.id,
    });
    setTarget(null);
    onRolledBack();
  });
  return (
    <Card title={`Revisions (${revs.length})`} id="revisions">
      <ol class="revisions" reversed>
        {revs.map((r, i) => {
          const prev = revs[i + 1] ?? null;
          const changes = diff(prev, r);
          const current = r.id === policy.revision;
          return (
            <li key={r.id} data-testid="revision">
              <div class="row">
                <button
                  type="button"
                  class="link"
                  aria-expanded={open === r.id}
                  onClick={() => setOpen(open === r.id ? null : r.id)}
                >
                  {time(r.createdAt)}
                </button>
                <code class="token">{r.id.slice(0, 8)}</code>
                {current && <span class="badge muted">current</span>}
                <span class="muted">
                  {prev ? `${changes.length} change${changes.length === 1 ? '' : 's'}` : 'created'}
                </span>
                {session.canMutate && !current && (
                  <button type="button" onClick={() => setTarget(r)} data-testid="rollback">
                    Roll back to this
                  </button>
                )}
              </div>
              {open === r.id && (
                <table class="data compact diff">
                  <thead>
                    <tr>
                      <th scope="col">Field</th>
                      <th scope="col">Before</th>
                      <th scope="col">After</th>
                    </tr>
                  </thead>
                  <tbody>
                    {changes.length === 0 && (
                      <tr>
                        <td colSpan={3}>No change (a re-publish).</td>
                      </tr>
                    )}
                    {changes.map((c) => (
                      <tr key={c.field}>
                        <th scope="row">{c.field}</th>
                        <td>
                          <del>{c.from}</del>
                        </td>
                        <td>
                          <ins>{c.to}</ins>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </li>
          );
        })}
      </ol>
      {target && (
        <Confirm
          title="Roll back this policy?"
          confirmLabel="Roll back"
          busy={rollback.busy}
          onConfirm={() => void rollback.go(target)}
          onCancel={() => {
            rollback.clear();
            setTarget(null);
          }}
        >
          <p>
            A new revision equal to the one of {time(target.createdAt)} ({target.action.toLowerCase()} when{' '}
            {conditionText(target.conditions)}) decides from the very next verdict.
          </p>
          {rollback.error && <ErrorBox error={rollback.error as ApiError} />}
        </Confirm>
      )}
    </Card>
  );
}

interface ListChoice {
  id: string;
  name: string;
  type: ListType;
}

/** "In list" and "not in list": the environment's lists, each a checkbox (a policy may name 20 of each). */
function ListConditions({
  lists,
  inLists,
  notInLists,
  toggle,
}: {
  lists: ListChoice[] | null;
  inLists: string[];
  notInLists: string[];
  toggle: (k: 'inLists' | 'notInLists', id: string) => void;
}) {
  if (lists === null) return null;
  // A list named by the policy but deleted since still shows, by id, so that it can be unticked.
  const known = new Set(lists.map((l) => l.id));
  const all = [
    ...lists,
    ...[...inLists, ...notInLists]
      .filter((id) => !known.has(id))
      .map((id) => ({ id, name: id, type: 'IP' as ListType })),
  ];
  if (all.length === 0) {
    return (
      <p class="muted small">
        In list / not in list: no lists yet (<a href={href(['lists'])}>create one</a>).
      </p>
    );
  }
  const group = (k: 'inLists' | 'notInLists', label: string, chosen: string[]) => (
    <div class="checks" role="group" aria-label={label}>
      <span>{label}</span>
      {all.map((l) => (
        <label key={l.id} class="check">
          <input
            type="checkbox"
            name={`${k === 'inLists' ? 'inList' : 'notInList'}-${l.id}`}
            checked={chosen.includes(l.id)}
            onChange={() => toggle(k, l.id)}
          />{' '}
          {l.name} <span class="muted small">({LIST_TYPES[l.type]?.label ?? l.type.toLowerCase()})</span>
        </label>
      ))}
    </div>
  );
  return (
    <>
      {group('inLists', 'In list (any of)', inLists)}
      {group('notInLists', 'Not in list (none of)', notInLists)}
    </>
  );
}

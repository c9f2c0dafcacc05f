/**
 * Lists: every list with its type, items and description (administrators create one), and one
 * list's page: its items (filter, add with a reason and an optional expiry, archive, unarchive),
 * the policies that name it, and its history from the audit log.
 */
import { useState } from 'preact/hooks';
import { gql, type SessionInfo } from '../api';
import { Card, Confirm, DataTable, Empty, ErrorBox, Facts, Loading, ReadOnlyNote } from '../components';
import { count, fromLocalInput, time } from '../format';
import { useAction, useQuery } from '../hooks';
import { ColorDot, ColorField, CREATABLE_TYPES, LIST_TYPES, type ListType } from '../lists';
import { LIST, LISTS } from '../queries';
import { href, navigate } from '../router';

interface ListRow {
  id: string;
  name: string;
  color: string;
  description: string | null;
  type: ListType;
  primaryField: string;
  secondaryField: string | null;
  createdAt: string;
  updatedAt: string;
  itemCount: number;
  active: number;
  usedBy: string[];
}

interface Item {
  id: string;
  value: string;
  secondaryValue: string | null;
  comment: string | null;
  author: { type: string; identifier: string };
  createdAt: string;
  updatedAt: string;
  expiresAt: string | null;
  archived: boolean;
  archivedAt: string | null;
  active: boolean;
}

interface AuditRow {
  id: string;
  at: string;
  action: string;
  targetId: string;
  actor: { type: string; identifier: string };
  detail: unknown;
}

export function Lists({ id, session }: { id: string | null; session: SessionInfo }) {
  return id ? <ListPage key={id} id={id} session={session} /> : <ListIndex session={session} />;
}

function ListIndex({ session }: { session: SessionInfo }) {
  const q = useQuery<{ lists: ListRow[] }>(LISTS);
  const lists = q.data?.lists ?? [];
  return (
    <div class="page">
      <div class="page-head">
        <h1>Lists</h1>
      </div>
      <p class="muted">
        Values to allow, block or watch: policies match events against lists (<em>in list</em>,{' '}
        <em>not in list</em>), and every verdict whose event is in a list carries the <code>in_list</code>{' '}
        signal naming it.
      </p>
      <Card title="Lists" id="lists">
        {q.loading && !q.data && <Loading what="Loading the lists" />}
        {q.error && <ErrorBox error={q.error} retry={q.reload} />}
        {q.data && lists.length === 0 && (
          <Empty>
            No lists yet.
            {session.canMutate ? ' Create one below, or add a value from an event or a user.' : ''}
          </Empty>
        )}
        {lists.length > 0 && (
          <DataTable head={['Name', 'Type', 'Items', 'Description', 'Used by']}>
            {lists.map((l) => (
              <tr key={l.id} data-testid="list-row">
                <td>
                  <ColorDot color={l.color} />{' '}
                  <a href={href(['lists', l.id])} data-testid="list-link">
                    {l.name}
                  </a>
                </td>
                <td>
                  {LIST_TYPES[l.type]?.label ?? l.type.toLowerCase()}{' '}
                  <span class="muted small">({l.primaryField})</span>
                </td>
                <td>
                  {count(l.active)} active
                  {l.itemCount > l.active && (
                    <span class="muted small"> ({count(l.itemCount - l.active)} archived)</span>
                  )}
                </td>
                <td class="wrap">{l.description ?? '—'}</td>
                <td>{l.usedBy.length ? l.usedBy.join(', ') : <span class="muted">no policy</span>}</td>
              </tr>
            ))}
          </DataTable>
        )}
      </Card>
      {session.canMutate ? <NewList onCreated={(lid) => navigate(href(['lists', lid]))} /> : <ReadOnlyNote />}
    </div>
  );
}

function NewList({ onCreated }: { onCreated: (id: string) => void }) {
  const [name, setName] = useState('');
  const [type, setType] = useState<ListType>('IP');
  const [color, setColor] = useState('$red');
  const [description, setDescription] = useState('');
  const create = useAction(async () => {
    const r = await gql<{ createList: { id: string } }>(
      `mutation($input: ListCreateInput!) { createList(input: $input) { id } }`,
      {
        input: {
          name: name.trim(),
          color,
          primaryField: LIST_TYPES[type].field,
          description: description.trim() || null,
        },
      },
    );
    onCreated(r.createList.id);
  });
  return (
    <Card title="New list" id="new-list">
      <form
        class="list-form"
        onSubmit={(e) => {
          e.preventDefault();
          void create.go();
        }}
      >
        <div class="row">
          <label>
            Name
            <input
              name="name"
              value={name}
              required
              maxLength={200}
              onInput={(e) => setName((e.target as HTMLInputElement).value)}
            />
          </label>
          <label>
            Type
            <select
              name="type"
              value={type}
              onChange={(e) => setType((e.target as HTMLSelectElement).value as ListType)}
            >
              {CREATABLE_TYPES.map((t) => (
                <option key={t} value={t}>
                  {LIST_TYPES[t].label}
                </option>
              ))}
            </select>
          </label>
          <ColorField color={color} setColor={setColor} />
        </div>
        <label>
          Description
          <input
            name="description"
            value={description}
            maxLength={1000}
            onInput={(e) => setDescription((e.target as HTMLInputElement).value)}
          />
        </label>
        {create.error && <ErrorBox error={create.error} />}
        <div class="row end">
          <button
            type="submit"
            class="primary"
            disabled={create.busy || !name.trim()}
            data-testid="create-list"
          >
            {create.busy ? 'Creating…' : 'Create list'}
          </button>
        </div>
      </form>
    </Card>
  );
}

interface ListData {
  list:
    | (ListRow & {
        items: { edges: { node: Item }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
        auditEntries: AuditRow[];
      })
    | null;
}

type Pending = { kind: 'archive' | 'unarchive'; item: Item } | { kind: 'delete' } | null;

function ListPage({ id, session }: { id: string; session: SessionInfo }) {
  const [search, setSearch] = useState('');
  const [filter, setFilter] = useState<{ value?: string; archived?: boolean }>({ archived: false });
  const [after, setAfter] = useState<string | null>(null);
  const q = useQuery<ListData>(LIST, { id, filter, after });
  const [pending, setPending] = useState<Pending>(null);
  const act = useAction(async (p: NonNullable<Pending>) => {
    if (p.kind === 'delete') {
      await gql(`mutation($id: ID!) { deleteList(id: $id) }`, { id });
      setPending(null);
      navigate(href(['lists']));
      return;
    }
    const m = p.kind === 'archive' ? 'archiveListItem' : 'unarchiveListItem';
    await gql(`mutation($l: ID!, $i: ID!) { ${m}(listId: $l, itemId: $i) { id archived } }`, {
      l: id,
      i: p.item.id,
    });
    setPending(null);
    q.reload();
  });

  if (q.loading && !q.data) return <Loading what="Loading the list" />;
  if (q.error && !q.data) return <ErrorBox error={q.error} retry={q.reload} />;
  const l = q.data?.list;
  if (!l)
    return (
      <Empty>
        No such list in this environment. <a href={href(['lists'])}>All lists</a>
      </Empty>
    );
  const items = l.items.edges.map((e) => e.node);
  const state = filter.archived === undefined ? 'all' : filter.archived ? 'archived' : 'active';
  return (
    <div class="page">
      <div class="page-head">
        <h1>
          <ColorDot color={l.color} /> {l.name}
        </h1>
        <a href={href(['lists'])}>All lists</a>
      </div>
      <div class="grid2">
        <Card title="List">
          <Facts
            items={[
              ['Type', `${LIST_TYPES[l.type]?.label ?? l.type} (${l.primaryField})`],
              ['Secondary field', l.secondaryField],
              ['Description', l.description],
              ['Items', `${count(l.active)} active, ${count(l.itemCount - l.active)} archived`],
              ['Used by', l.usedBy.length ? l.usedBy.join(', ') : 'no active policy'],
              ['Created', time(l.createdAt)],
              ['Changed', time(l.updatedAt)],
            ]}
          />
          {session.canMutate && (
            <div class="row end">
              <button
                type="button"
                class="danger"
                disabled={l.usedBy.length > 0}
                title={l.usedBy.length ? 'An active policy names this list: archive it first' : undefined}
                onClick={() => setPending({ kind: 'delete' })}
                data-testid="delete-list"
              >
                Delete list
              </button>
            </div>
          )}
        </Card>
        {session.canMutate ? (
          <AddItem
            listId={id}
            type={l.type}
            onAdded={() => {
              setAfter(null);
              q.reload();
            }}
          />
        ) : (
          <Card title="Add a value">
            <ReadOnlyNote />
          </Card>
        )}
      </div>
      <Card title="Items" id="items">
        <form
          class="filters"
          onSubmit={(e) => {
            e.preventDefault();
            setAfter(null);
            setFilter({ ...filter, value: search.trim() || undefined });
          }}
        >
          <label>
            Value
            <input
              name="value"
              value={search}
              placeholder={LIST_TYPES[l.type]?.example}
              onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
            />
          </label>
          <label>
            Items
            <select
              name="state"
              value={state}
              onChange={(e) => {
                const v = (e.target as HTMLSelectElement).value;
                setAfter(null);
                setFilter({ ...filter, archived: v === 'all' ? undefined : v === 'archived' });
              }}
            >
              <option value="active">not archived</option>
              <option value="archived">archived</option>
              <option value="all">all</option>
            </select>
          </label>
          <button type="submit">Find</button>
        </form>
        {q.error && <ErrorBox error={q.error} retry={q.reload} />}
        {act.error && <ErrorBox error={act.error} />}
        {items.length === 0 && (
          <Empty>
            {filter.value
              ? 'No item has this value.'
              : state === 'archived'
                ? 'No archived items.'
                : 'No items yet.'}
          </Empty>
        )}
        {items.length > 0 && (
          <div class="table-wrap">
            <table class="data">
              <thead>
                <tr>
                  <th scope="col">Value</th>
                  <th scope="col">Reason</th>
                  <th scope="col">Added</th>
                  <th scope="col">Expires</th>
                  <th scope="col">State</th>
                  {session.canMutate && <th scope="col">Actions</th>}
                </tr>
              </thead>
              <tbody>
                {items.map((i) => (
                  <tr key={i.id} data-testid="item-row">
                    <td>
                      <code class="token">{i.value}</code>
                      {i.secondaryValue && <span class="muted small"> with {i.secondaryValue}</span>}
                    </td>
                    <td class="wrap">{i.comment ?? '—'}</td>
                    <td>
                      {time(i.createdAt)}
                      <br />
                      <span class="muted small" title={i.author.type}>
                        by {i.author.identifier}
                      </span>
                    </td>
                    <td>{i.expiresAt ? time(i.expiresAt) : 'never'}</td>
                    <td>
                      <span class={`badge ${i.active ? 'state-active' : 'muted'}`}>
                        {i.archived ? 'archived' : i.active ? 'active' : 'expired'}
                      </span>
                      {i.archivedAt && <span class="muted small"> {time(i.archivedAt)}</span>}
                    </td>
                    {session.canMutate && (
                      <td>
                        {i.archived ? (
                          <button
                            type="button"
                            onClick={() => setPending({ kind: 'unarchive', item: i })}
                            data-testid="unarchive"
                          >
                            Unarchive
                          </button>
                        ) : (
                          <button
                            type="button"
                            class="danger"
                            onClick={() => setPending({ kind: 'archive', item: i })}
                            data-testid="archive"
                          >
                            Archive
                          </button>
                        )}
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <div class="row">
          {after && (
            <button type="button" onClick={() => setAfter(null)}>
              Newest
            </button>
          )}
          {l.items.pageInfo.hasNextPage && (
            <button type="button" onClick={() => setAfter(l.items.pageInfo.endCursor)}>
              Older
            </button>
          )}
        </div>
      </Card>
      <Card title="History" id="history">
        {l.auditEntries.length === 0 && <Empty>No changes recorded.</Empty>}
        {l.auditEntries.length > 0 && (
          <DataTable head={['When', 'Who', 'What', 'Detail']} compact>
            {l.auditEntries.map((a) => (
              <tr key={a.id} data-testid="audit-row">
                <td>{time(a.at)}</td>
                <td>
                  <span title={a.actor.type}>{actorText(a.actor)}</span>
                </td>
                <td>
                  <code>{a.action}</code>
                </td>
                <td class="wrap">{detailText(a.detail)}</td>
              </tr>
            ))}
          </DataTable>
        )}
      </Card>
      {pending && (
        <Confirm
          title={
            pending.kind === 'delete'
              ? `Delete ${l.name}?`
              : pending.kind === 'archive'
                ? 'Archive this item?'
                : 'Unarchive this item?'
          }
          confirmLabel={
            pending.kind === 'delete' ? 'Delete' : pending.kind === 'archive' ? 'Archive' : 'Unarchive'
          }
          danger={pending.kind !== 'unarchive'}
          busy={act.busy}
          onCancel={() => {
            act.clear();
            setPending(null);
          }}
          onConfirm={() => void act.go(pending)}
        >
          {pending.kind === 'delete' ? (
            <p>The list and its {count(l.itemCount)} items are deleted; this cannot be undone.</p>
          ) : pending.kind === 'archive' ? (
            <p>
              <code>{pending.item.value}</code> stops matching at once; it stays here, archived, and can be
              unarchived.
            </p>
          ) : (
            <p>
              <code>{pending.item.value}</code> matches again from the very next verdict.
            </p>
          )}
          {act.error && <ErrorBox error={act.error} />}
        </Confirm>
      )}
    </div>
  );
}

function AddItem({ listId, type, onAdded }: { listId: string; type: ListType; onAdded: () => void }) {
  const [value, setValue] = useState('');
  const [reason, setReason] = useState('');
  const [expires, setExpires] = useState('');
  const add = useAction(async () => {
    await gql(`mutation($l: ID!, $input: ListItemInput!) { addListItem(listId: $l, input: $input) { id } }`, {
      l: listId,
      input: { value: value.trim(), comment: reason.trim() || null, expiresAt: fromLocalInput(expires) },
    });
    setValue('');
    setReason('');
    setExpires('');
    onAdded();
  });
  return (
    <Card title="Add a value" id="add-item">
      <form
        class="list-form"
        onSubmit={(e) => {
          e.preventDefault();
          void add.go();
        }}
      >
        <label>
          Value
          <input
            name="itemValue"
            value={value}
            required
            maxLength={512}
            placeholder={LIST_TYPES[type]?.example}
            onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          Reason
          <input
            name="itemReason"
            value={reason}
            maxLength={1000}
            onInput={(e) => setReason((e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          Expires (UTC, optional)
          <input
            type="datetime-local"
            name="itemExpires"
            value={expires}
            onInput={(e) => setExpires((e.target as HTMLInputElement).value)}
          />
        </label>
        {add.error && <ErrorBox error={add.error} />}
        <div class="row end">
          <button type="submit" class="primary" disabled={add.busy || !value.trim()} data-testid="add-item">
            {add.busy ? 'Adding…' : 'Add'}
          </button>
        </div>
      </form>
    </Card>
  );
}

const ACTORS: Readonly<Record<string, string>> = { $api_secret: 'API secret', $analyst_key: 'analyst key' };

/** "API secret 7cf019fc462d", or Castle's author as given (`$analyst_email` ana@example.com). */
function actorText(a: { type: string; identifier: string }): string {
  return `${ACTORS[a.type] ?? a.type.replace(/^\$/, '').replace(/_/g, ' ')} ${a.identifier}`;
}

/** An audit entry's detail on one line: its set fields, `key: value`, nested author left out. */
function detailText(detail: unknown): string {
  if (!detail || typeof detail !== 'object') return '—';
  const parts = Object.entries(detail as Record<string, unknown>)
    .filter(([k, v]) => v !== null && v !== undefined && v !== '' && k !== 'author' && typeof v !== 'object')
    .map(([k, v]) => `${k.replace(/_/g, ' ')}: ${String(v)}`);
  return parts.join(' · ') || '—';
}

/**
 * Lists as the pages show them: the types and colours, and "add to list", the small form beside
 * a value (an address, a network, an e-mail, a domain, a device) that puts it in a list of its
 * type, or in a new one, with a reason and an optional expiry.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { gql } from './api';
import { ErrorBox } from './components';
import { fromLocalInput } from './format';
import { useAction, useQuery } from './hooks';
import { LIST_CHOICES } from './queries';
import { href } from './router';

export type ListType =
  'USER_ID' | 'EMAIL' | 'EMAIL_DOMAIN' | 'IP' | 'ASN' | 'COUNTRY' | 'DEVICE' | 'MACHINE' | 'REQUEST_SHAPE';

/** What each type holds, in words, and the field a new list of it is created with. */
export const LIST_TYPES: Readonly<Record<ListType, { label: string; field: string; example: string }>> = {
  IP: { label: 'IP address or network', field: 'ip', example: '203.0.113.7 or 203.0.113.0/24' },
  ASN: { label: 'network operator (ASN)', field: 'ip.asn', example: '13335 or AS13335' },
  EMAIL: { label: 'e-mail', field: 'user.email', example: 'ana@example.com' },
  EMAIL_DOMAIN: { label: 'e-mail domain', field: 'user.email.domain', example: 'example.com' },
  USER_ID: { label: 'user id', field: 'user.id', example: '42' },
  DEVICE: { label: 'device', field: 'device.token', example: 'a device token' },
  COUNTRY: { label: 'country', field: 'ip.country_code', example: 'FR' },
  MACHINE: { label: 'machine key', field: 'device.machine', example: 'a machine key' },
  REQUEST_SHAPE: { label: 'request shape', field: 'request.shape', example: 'a request-shape hash' },
};

/** The types a new list may be created with from the console (machine and request-shape lists come from the API). */
export const CREATABLE_TYPES: readonly ListType[] = [
  'IP',
  'ASN',
  'EMAIL',
  'EMAIL_DOMAIN',
  'USER_ID',
  'DEVICE',
  'COUNTRY',
];

/** Castle's list colours. */
export const COLORS = ['$red', '$orange', '$yellow', '$green', '$blue', '$purple', '$gray'];

export function ColorDot({ color }: { color: string }) {
  return <span class={`dot color-${color.replace(/^\$/, '')}`} aria-hidden="true" />;
}

/** The domain of an e-mail address, or null. */
/** The colour chooser of a new list (Castle's colour names). */
export function ColorField({ color, setColor }: { color: string; setColor: (c: string) => void }) {
  return (
    <label>
      Colour
      <select name="color" value={color} onChange={(e) => setColor((e.target as HTMLSelectElement).value)}>
        {COLORS.map((c) => (
          <option key={c} value={c}>
            {c.slice(1)}
          </option>
        ))}
      </select>
    </label>
  );
}

export function domainOf(email: string | null | undefined): string | null {
  const at = email?.lastIndexOf('@') ?? -1;
  return email && at > 0 && at < email.length - 1 ? email.slice(at + 1).toLowerCase() : null;
}

interface Choice {
  id: string;
  name: string;
  type: ListType;
}

/**
 * "Add to list" beside a value: a button (for administrators only) that opens a dialog choosing
 * a list of the value's type, or a new one, with a reason and an optional expiry.
 */
export function AddToList({ type, value, canMutate }: { type: ListType; value: string; canMutate: boolean }) {
  const [open, setOpen] = useState(false);
  const [done, setDone] = useState<{ id: string; name: string } | null>(null);
  if (!canMutate) return null;
  const what = LIST_TYPES[type].label;
  return (
    <>
      {' '}
      <button
        type="button"
        class="link small"
        onClick={() => setOpen(true)}
        data-testid={`add-to-list-${type.toLowerCase()}`}
        aria-label={`Add ${what} ${value} to a list`}
      >
        add to list
      </button>
      {done && (
        <span class="muted small" role="status" data-testid="added-to-list">
          {' '}
          added to <a href={href(['lists', done.id])}>{done.name}</a>
        </span>
      )}
      {open && (
        <AddToListDialog
          type={type}
          value={value}
          onClose={(added) => {
            setOpen(false);
            if (added) setDone(added);
          }}
        />
      )}
    </>
  );
}

function AddToListDialog({
  type,
  value,
  onClose,
}: {
  type: ListType;
  value: string;
  onClose: (added: { id: string; name: string } | null) => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const choices = useQuery<{ lists: Choice[] }>(LIST_CHOICES);
  const matching = (choices.data?.lists ?? []).filter((l) => l.type === type);
  const [listId, setListId] = useState('');
  const [newName, setNewName] = useState('');
  const [color, setColor] = useState('$red');
  const [reason, setReason] = useState('');
  const [expires, setExpires] = useState('');
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  // The first list of the type is chosen once they are known; with none, a new one.
  useEffect(() => {
    if (choices.data && !listId) setListId(matching[0]?.id ?? 'new');
  }, [choices.data]);
  const add = useAction(async () => {
    let target = matching.find((l) => l.id === listId) ?? null;
    if (listId === 'new') {
      const r = await gql<{ createList: { id: string; name: string } }>(
        `mutation($input: ListCreateInput!) { createList(input: $input) { id name } }`,
        {
          input: { name: newName.trim(), color, primaryField: LIST_TYPES[type].field },
        },
      );
      target = { ...r.createList, type };
      setListId(target.id);
      choices.reload();
    }
    if (!target) return;
    await gql(`mutation($l: ID!, $input: ListItemInput!) { addListItem(listId: $l, input: $input) { id } }`, {
      l: target.id,
      input: { value, comment: reason.trim() || null, expiresAt: fromLocalInput(expires) },
    });
    onClose({ id: target.id, name: target.name });
  });
  return (
    <dialog
      ref={ref}
      class="confirm add-to-list"
      aria-labelledby="add-to-list-title"
      onCancel={(e) => {
        e.preventDefault();
        onClose(null);
      }}
    >
      <h2 id="add-to-list-title">Add to a list</h2>
      <form
        class="list-form"
        onSubmit={(e) => {
          e.preventDefault();
          void add.go();
        }}
      >
        <p>
          {LIST_TYPES[type].label}: <code class="token">{value}</code>
        </p>
        {choices.error && <ErrorBox error={choices.error} retry={choices.reload} />}
        <label>
          List
          <select
            name="list"
            value={listId}
            onChange={(e) => setListId((e.target as HTMLSelectElement).value)}
            disabled={!choices.data}
          >
            {matching.map((l) => (
              <option key={l.id} value={l.id}>
                {l.name}
              </option>
            ))}
            <option value="new">New {LIST_TYPES[type].label} list…</option>
          </select>
        </label>
        {listId === 'new' && (
          <div class="row">
            <label>
              New list's name
              <input
                name="newListName"
                value={newName}
                required
                maxLength={200}
                onInput={(e) => setNewName((e.target as HTMLInputElement).value)}
              />
            </label>
            <ColorField color={color} setColor={setColor} />
          </div>
        )}
        <label>
          Reason
          <input
            name="reason"
            value={reason}
            maxLength={1000}
            placeholder="e.g. card testing, incident 42"
            onInput={(e) => setReason((e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          Expires (UTC, optional)
          <input
            type="datetime-local"
            name="expires"
            value={expires}
            onInput={(e) => setExpires((e.target as HTMLInputElement).value)}
          />
          <small>Empty: until archived.</small>
        </label>
        {add.error && <ErrorBox error={add.error} />}
        <div class="row end">
          <button type="button" onClick={() => onClose(null)} disabled={add.busy}>
            Cancel
          </button>
          <button
            type="submit"
            class="primary"
            disabled={add.busy || !listId || (listId === 'new' && !newName.trim())}
            data-testid="add-to-list-submit"
          >
            {add.busy ? 'Adding…' : 'Add'}
          </button>
        </div>
      </form>
    </dialog>
  );
}

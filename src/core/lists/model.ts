/**
 * Lists: named sets of values (addresses and networks, e-mails, domains, users, devices, …) that
 * policies match events against, as Castle's Lists. A list is typed by its primary field, the
 * event field its items are compared with; an item may also carry a secondary value, which then
 * must match the list's secondary field too.
 */
import type { Actor } from '../audit/model';
import type { EnvId } from '../model';

/** What a list's values are, and so which part of an event they are compared with. */
export type ListType =
  'user_id' | 'email' | 'email_domain' | 'ip' | 'asn' | 'country' | 'device' | 'machine' | 'request_shape';

export const LIST_TYPES: readonly ListType[] = [
  'user_id',
  'email',
  'email_domain',
  'ip',
  'asn',
  'country',
  'device',
  'machine',
  'request_shape',
];

/**
 * The field names a list may be created with (`primary_field`, `secondary_field`), Castle's first
 * (`ip`, `user.email`, `user.id`, `device.fingerprint`, …), then Rampart's own, and the type each
 * one means. A list answers the name it was created with.
 */
export const LIST_FIELDS: Readonly<Record<string, ListType>> = {
  'user.id': 'user_id',
  user_id: 'user_id',
  'user.email': 'email',
  email: 'email',
  'user.email.domain': 'email_domain',
  'email.domain': 'email_domain',
  email_domain: 'email_domain',
  ip: 'ip',
  'ip.value': 'ip',
  'ip.address': 'ip',
  'context.ip': 'ip',
  'ip.asn': 'asn',
  asn: 'asn',
  'ip.country_code': 'country',
  'ip.location.country_code': 'country',
  country: 'country',
  'device.fingerprint': 'device',
  'device.token': 'device',
  device: 'device',
  device_token: 'device',
  'device.machine': 'machine',
  machine_key: 'machine',
  'request.shape': 'request_shape',
  request_shape: 'request_shape',
};

/** Castle's dashboard colours; any `$name` of lower-case letters is kept as given. */
export const LIST_COLOR = /^\$[a-z]{2,20}$/;

/** Bounds (docs/lists.md). */
export const LIST_LIMITS = {
  /** Lists per environment. */
  lists: 100,
  /** Items stored per list, archived ones included. */
  itemsPerList: 100_000,
  /** Items in one batch create (Castle's batch size). */
  batch: 1000,
  /** Rows of one CSV import (a list's bound). */
  importRows: 100_000,
  name: 200,
  description: 1000,
  comment: 1000,
  /** Longest value of any type. */
  value: 512,
  /** Items one query answers at most (`results_size`). */
  pageSize: 100,
} as const;

export interface List {
  id: string;
  envId: EnvId;
  name: string;
  color: string;
  description: string | null;
  /** The field as it was given (`ip`, `user.email`, …) and the type it means. */
  primaryField: string;
  type: ListType;
  secondaryField: string | null;
  secondaryType: ListType | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The lists of one environment, read and written as one unit; `version` also counts item changes. */
export interface ListSet {
  envId: EnvId;
  version: number;
  lists: List[];
}

export interface ListItem {
  id: string;
  envId: EnvId;
  listId: string;
  /** Normalised for the list's type (a network in CIDR form, an e-mail in lower case, …). */
  primaryValue: string;
  secondaryValue: string | null;
  comment: string | null;
  author: Actor;
  createdAt: Date;
  updatedAt: Date;
  /** When it stops matching by itself (Castle's `auto_archives_at`); null: never. */
  expiresAt: Date | null;
  archived: boolean;
  archivedAt: Date | null;
}

/** A new list, or the changes to one (fields left out keep their value). */
export interface ListDraft {
  name: string;
  color: string;
  primaryField: string;
  secondaryField?: string | null;
  description?: string | null;
}
export type ListPatch = Partial<Omit<ListDraft, 'primaryField'>>;

/** A new item, before validation: values as the caller sent them. */
export interface ItemDraft {
  primaryValue: unknown;
  secondaryValue?: unknown;
  comment?: unknown;
  author?: unknown;
  expiresAt?: unknown;
}

/** A query's filters and order, Castle's `{field, op, value}` and `{field, order}`. */
export interface QueryFilter {
  field: string;
  op: string;
  value: unknown;
}
export interface QuerySort {
  field: string;
  order: string;
}
export interface ListQuery {
  filters?: readonly QueryFilter[];
  sort?: QuerySort | null;
  page?: number;
  resultsSize?: number;
}

/** A validated item filter the store can run. */
export type ItemCondition =
  | { field: ItemField; op: 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte'; value: string | boolean | Date | null }
  | { field: ItemField; op: 'in' | 'nin'; value: readonly (string | boolean | null)[] }
  | { field: ItemField; op: 'contains'; value: string };
export type ItemField =
  | 'id'
  | 'primaryValue'
  | 'secondaryValue'
  | 'comment'
  | 'archived'
  | 'authorType'
  | 'authorIdentifier'
  | 'createdAt'
  | 'updatedAt'
  | 'expiresAt'
  | 'archivedAt';
export interface ItemQuery {
  conditions: readonly ItemCondition[];
  sort: {
    field: 'createdAt' | 'updatedAt' | 'primaryValue' | 'expiresAt' | 'archivedAt';
    order: 'asc' | 'desc';
  };
  skip: number;
  limit: number;
}

/**
 * `queued`: waiting for an import of the same list before it (this instance runs one per list at
 * a time); `running`: being written, batch by batch; `succeeded`: every item written; `failed`:
 * stopped (see `error`), with `written` items written (re-running the same CSV finishes it).
 */
export type ImportState = 'queued' | 'running' | 'succeeded' | 'failed';

/** A CSV import run as a job: its progress, and in the end what it wrote. */
export interface ListImport {
  id: string;
  envId: EnvId;
  listId: string;
  state: ImportState;
  /** Data rows the CSV had. */
  rows: number;
  /** Distinct items they make (rows repeating a value are one item), all to be written. */
  items: number;
  /** Items done so far: `created` + `updated`. */
  written: number;
  /** Items the list did not hold. */
  created: number;
  /** Items the list held already, replaced by the row (or left as they were: `unchanged`). */
  updated: number;
  /** Of `updated`, items the row left exactly as stored, so not rewritten. */
  unchanged: number;
  /** Of an import that replaces the list's items: the items it did not name, archived once every row was written. */
  archived?: number;
  error: string | null;
  actor: Actor;
  createdAt: Date;
  /** Last progress (or sign of life) of the instance running it. */
  updatedAt: Date;
  finishedAt: Date | null;
}

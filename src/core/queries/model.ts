/**
 * The read side's vocabulary: filters for event and device searches, keyset pages with opaque
 * cursors, and the page-size cap every door shares.
 */
import type { Action, Device, StoredEvent } from '../model';
import type { DeviceReviewState } from '../policies/model';

/** Largest page any search returns; a larger request is refused, never silently shortened. */
export const MAX_PAGE_SIZE = 100;

export interface PageRequest {
  /** Items wanted, 1..MAX_PAGE_SIZE; absent: the list's default. */
  first?: number | null;
  /** Cursor of the last item of the previous page. */
  after?: string | null;
}

export interface Edge<T> {
  node: T;
  cursor: string;
}

/**
 * What a search read, at most the limit asked: the rows, and, when it stopped before the limit
 * because it read as many candidates as one search may, the key of the last one it read.
 */
export interface Found<T> {
  rows: T[];
  stoppedAt?: SortKey;
}

export interface Page<T> {
  edges: Edge<T>[];
  hasNextPage: boolean;
  /**
   * Where the next page starts, when a search stopped early (it read as many candidates as one
   * page may): the page may then hold fewer rows than asked, and more may follow. Else the last
   * edge's cursor.
   */
  endCursor?: string;
}

/** Every condition present must hold. Time bounds are on event time: `from` inclusive, `to` exclusive. */
export interface EventFilter {
  name?: string;
  action?: Action;
  signal?: string;
  userId?: string;
  deviceToken?: string;
  ip?: string;
  /** An IPv4 network (`a.b.c.0/24`, `/16` or `/8`) the address is in. */
  network?: string;
  /** The e-mail sent with the event (as sent, or in lower case). */
  email?: string;
  /** The policy that decided the verdict. */
  policyId?: string;
  asn?: number;
  country?: string;
  from?: Date;
  to?: Date;
}

/** Every condition present must hold. */
export interface DeviceFilter {
  userId?: string;
  reviewState?: DeviceReviewState;
  country?: string;
  /** Bounds of the device's own risk score, 0-100 (Device.riskScore; `minRisk`/`maxRisk` on the wire). */
  minRiskScore?: number;
  maxRiskScore?: number;
  lastSeenFrom?: Date;
  lastSeenTo?: Date;
  includeRemoved?: boolean;
}

export interface RejectedFilter {
  userId?: string;
  from?: Date;
  to?: Date;
}

/** Where a keyset page starts: strictly after (older than) this sort key. */
export interface SortKey {
  at: Date;
  id: string;
}

export type { Device, StoredEvent };

/**
 * What resolvers of types that are not domain objects receive (codegen `mappers`): connections
 * are the core's pages, and a few parents carry the arguments their children need.
 */
import type { Device, DeviceContext, RejectedPayload, StoredEvent } from '../core/model';
import type { Edge, EventFilter, Page } from '../core/queries/model';
import type { WebhookDelivery } from '../core/webhooks/model';
import type { PrivacyJob } from '../core/privacy/model';
import type { Dimension } from '../core/analytics/service';
import type { ListItem } from '../core/lists/model';

/** `Analytics` holds the filter every analysis of it applies. */
export interface AnalyticsParent {
  filter: EventFilter;
}

export interface TopEntryParent {
  dimension: Dimension;
  key: string;
  count: number;
}

export type PageInfoParent = Page<unknown>;

export type DevicePage = Page<Device>;
export type DeviceEdge = Edge<Device>;
export type EventPage = Page<StoredEvent>;
export type EventEdge = Edge<StoredEvent>;
export type RejectedPage = Page<RejectedPayload>;
export type RejectedEdge = Edge<RejectedPayload>;
export type DeliveryPage = Page<WebhookDelivery>;
export type DeliveryEdge = Edge<WebhookDelivery>;
export type PrivacyJobPage = Page<PrivacyJob>;
export type PrivacyJobEdge = Edge<PrivacyJob>;
export type ListItemPage = Page<ListItem>;
export type ListItemEdge = Edge<ListItem>;

/** Values of the DeviceType and DeviceIdentity enums, which the core does not name. */
export type DeviceTypeValue = DeviceContext['type'];
export type DeviceIdentityValue = Device['identity'];

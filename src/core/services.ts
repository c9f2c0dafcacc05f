/**
 * The core as the adapters see it: one object of use-case services. REST, gRPC, GraphQL and the
 * CLI receive this and nothing else from the domain.
 */
import type { EnvironmentService } from './environments';
import type { VerdictService } from './verdicts/evaluate';
import type { TrackService } from './track';
import type { DeviceService } from './devices/service';
import type { PolicyService } from './policies/service';
import type { WebhookService } from './webhooks/service';
import type { PrivacyService } from './privacy/service';
import type { UserStateStore } from './ports';
import type { AccessService } from './access';
import type { QueryService } from './queries/service';
import type { AnalyticsService } from './analytics/service';
import type { ClientService } from './client/service';
import type { ClientEventsService } from './client/events';
import type { SessionService } from './sessions/service';
import type { PolicyDryRunService } from './policies/dry-run';
import type { ListService } from './lists/service';

export interface Services {
  environments: EnvironmentService;
  verdicts: VerdictService;
  track: TrackService;
  devices: DeviceService;
  policies: PolicyService;
  /** Lists of values (addresses, e-mails, devices, …) policies match, their items and audit log. */
  lists: ListService;
  webhooks: WebhookService;
  privacy: PrivacyService;
  /** The clients' collector (browsers and native apps) and token reader. */
  client: ClientService;
  /** Native apps' events (installs, opens, screens, identifies). */
  clientEvents: ClientEventsService;
  /** Resolves and rate-limits the caller of every door. */
  access: AccessService;
  /** Dashboard searches (events, devices, users, debugger) with cursor pagination. */
  queries: QueryService;
  /** Signal analytics: counts over time buckets and top-N. */
  analytics: AnalyticsService;
  /** What a policy draft would have decided on stored verdicts. */
  dryRun: PolicyDryRunService;
  /** The web console's sign-in sessions. */
  sessions: SessionService;
  /** Read-side store for dashboards (GraphQL's device loader). */
  read: { users: UserStateStore };
}

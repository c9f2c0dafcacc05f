/**
 * Webhook delivery, as the rest of Rampart sees it: a durable outbox in the database and a
 * dispatcher sending it. `WebhookService` only puts the two together behind the one interface
 * the doors, the metrics, the worker and the use cases use; each job is its own class:
 *
 *  - outbox.ts (`WebhookOutbox`): emit with de-duplication, the test webhook, the reads (list,
 *    page, get, listForUser), the sweep, and the ledger of open deliveries for the metrics;
 *  - dispatcher.ts (`WebhookDispatcher`): claims due deliveries under a lease, keeps each user's
 *    deliveries in order, shares attempts between receivers, and shuts down within a grace;
 *  - attempt.ts (`Attempts`): one attempt: the signed POST, the retry with backoff, the record.
 *
 * All state lives in the database, so a restarted instance picks up where another stopped.
 * When to deliver is the worker's (src/workers/webhooks.ts).
 */
import type { EnvId, Environment } from '../model';
import type { DeliveryStatus, WebhookDelivery } from './model';
import type { WebhookNotice, WebhookSink } from './ports';
import type { Page } from '../queries/model';
import { OutboxLedger, WebhookOutbox, type DeliveryListOptions, type WebhookOutboxDeps } from './outbox';
import { WebhookDispatcher, type WebhookDispatcherDeps } from './dispatcher';

export { TEST_TRIGGER, type DeliveryListOptions } from './outbox';
export {
  WEBHOOK_USER_AGENT,
  backoffDelay,
  failureClass,
  type WebhookLog,
  type WebhookObserver,
} from './attempt';

export type WebhookServiceDeps = Omit<WebhookDispatcherDeps, 'ledger' | 'recording'> &
  Pick<WebhookOutboxDeps, 'dedupeWindowMs' | 'maxAttempts'>;

/** Open deliveries the outbox ledger holds by id (the others are only counted): see outbox.ts. */
const OUTBOX_TRACKED = 10_000;

export class WebhookService implements WebhookSink {
  /** The outbox: what is to be sent, and what was. */
  readonly deliveries: WebhookOutbox;
  /** The dispatcher: sends what the outbox holds. */
  readonly dispatcher: WebhookDispatcher;

  constructor(d: WebhookServiceDeps) {
    const ledger = new OutboxLedger(OUTBOX_TRACKED);
    const { dedupeWindowMs, maxAttempts, ...dispatch } = d;
    const dispatcher: WebhookDispatcher = new WebhookDispatcher({
      ...dispatch,
      ledger,
      recording: (): Promise<unknown> => outbox.recording(),
    });
    const outbox: WebhookOutbox = new WebhookOutbox({
      store: d.store,
      clock: d.clock,
      log: d.log,
      sender: dispatcher,
      ledger,
      dedupeWindowMs,
      maxAttempts,
    });
    this.deliveries = outbox;
    this.dispatcher = dispatcher;
  }

  /** See WebhookOutbox.emit. */
  emit(notice: WebhookNotice): Promise<void> {
    return this.deliveries.emit(notice);
  }

  /** See WebhookOutbox.sendTest. */
  sendTest(env: Environment): Promise<WebhookDelivery> {
    return this.deliveries.sendTest(env);
  }

  list(env: EnvId, opts: DeliveryListOptions): Promise<WebhookDelivery[]> {
    return this.deliveries.list(env, opts);
  }

  page(
    env: EnvId,
    page: {
      status?: DeliveryStatus | null;
      userId?: string | null;
      first?: number | null;
      after?: string | null;
    },
  ): Promise<Page<WebhookDelivery>> {
    return this.deliveries.page(env, page);
  }

  get(env: EnvId, id: string): Promise<WebhookDelivery | null> {
    return this.deliveries.get(env, id);
  }

  listForUser(env: EnvId, userId: string): Promise<WebhookDelivery[]> {
    return this.deliveries.listForUser(env, userId);
  }

  /**
   * Be told whenever there may be deliveries to send now: a notice was recorded, or an attempt
   * ended (its user's next delivery, or anything due when this instance was saturated).
   */
  onWork(listener: () => void): void {
    this.deliveries.onRecorded(listener);
    this.dispatcher.onWork(listener);
  }

  /** See WebhookDispatcher.deliverDue. */
  deliverDue(): Promise<{ started: number; more: boolean }> {
    return this.dispatcher.deliverDue();
  }

  /** The outbox metrics, from memory: see WebhookOutbox.open. */
  outbox(): { depth: number; oldestAgeSeconds: number } {
    return this.deliveries.open();
  }

  reconcileOutbox(): Promise<void> {
    return this.deliveries.reconcile();
  }

  sweep(): Promise<void> {
    return this.deliveries.sweep();
  }

  /** See WebhookDispatcher.shutdown. */
  shutdown(opts: { deliver: boolean; passUnderWay?: Promise<unknown> | null }): Promise<void> {
    return this.dispatcher.shutdown(opts);
  }
}

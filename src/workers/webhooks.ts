/**
 * The webhook delivery worker: when the core's WebhookService delivers. It runs a pass
 * (`deliverDue`) at once when told there is work, else every `pollMs`, never two at a time (a
 * pass asked for while one runs follows it at once); reads the open deliveries for the outbox
 * metrics at its first pass and then every `outboxEveryMs` (WebhookService.reconcileOutbox);
 * sweeps expired dedupe records and stale claims every `sweepMs` (the history is the retention
 * sweep's, workers/sweeps.ts); and on stop lets the service
 * deliver what is due within its shutdown grace.
 */
import type { Scheduler } from '../core/ports';
import type { WebhookService } from '../core/webhooks/service';

export interface WebhookWorkerOptions {
  scheduler: Scheduler;
  log: { warn(obj: object, msg: string): void };
  /** How often the worker looks for due deliveries when not woken. Default 1 s. */
  pollMs?: number;
  /** How often it sweeps expired dedupe records and stale claims. Default 10 min. */
  sweepMs?: number;
  /** How often it reads the open deliveries again for the outbox metrics. Default 10 min. */
  outboxEveryMs?: number;
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export class WebhookWorker {
  private readonly pollMs: number;
  private readonly sweepMs: number;
  private readonly outboxEveryMs: number;
  private running = false;
  private cancel: (() => void) | null = null;
  private pass: Promise<void> | null = null;
  private again = false;
  /** When the last sweep started (epoch ms, performance clock), or null before the first. */
  private lastSweep: number | null = null;
  /** When the open deliveries were last read (performance clock), or null before the first read. */
  private lastOutboxRead: number | null = null;
  private stopping: Promise<void> | null = null;

  constructor(
    private readonly webhooks: WebhookService,
    private readonly o: WebhookWorkerOptions,
  ) {
    this.pollMs = o.pollMs ?? 1000;
    this.sweepMs = o.sweepMs ?? 10 * 60_000;
    this.outboxEveryMs = o.outboxEveryMs ?? 10 * 60_000;
    webhooks.onWork(() => this.schedule(0));
  }

  /** Start delivering. Idempotent. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopping = null;
    this.schedule(0);
  }

  /** Stop: no further pass; the service delivers what is due within its grace (see WebhookService.shutdown). Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const wasRunning = this.running;
      this.running = false;
      this.cancel?.();
      this.cancel = null;
      await this.webhooks.shutdown({ deliver: wasRunning, passUnderWay: this.pass });
    })();
    return this.stopping;
  }

  private schedule(ms: number): void {
    if (!this.running) return;
    if (this.pass) {
      if (ms === 0) this.again = true;
      return;
    }
    this.cancel?.();
    this.cancel = this.o.scheduler.after(
      ms,
      () => {
        this.cancel = null;
        this.pass = this.run().finally(() => {
          this.pass = null;
          const again = this.again;
          this.again = false;
          this.schedule(again ? 0 : this.pollMs);
        });
      },
      { background: true },
    );
  }

  private async run(): Promise<void> {
    try {
      await this.webhooks.deliverDue();
      const now = performance.now();
      if (this.lastOutboxRead === null || now - this.lastOutboxRead >= this.outboxEveryMs) {
        // Only a read that answered counts: a failed one is tried again at the next pass.
        await this.webhooks.reconcileOutbox();
        this.lastOutboxRead = now;
      }
      if (this.lastSweep === null || now - this.lastSweep >= this.sweepMs) {
        this.lastSweep = now;
        await this.webhooks.sweep();
      }
    } catch (err) {
      this.o.log.warn({ err: message(err) }, 'webhooks: worker poll failed');
    }
  }
}

// Delivery attempts of the e-mail worker, counted into the metrics of the server that runs it.
import type { OutboxWorker } from '../domain/email/worker.js';
import type { DeliveryOutcome, ServerMetrics } from './metrics.js';

/** From now on, `worker`'s deliveries count in `metrics`. */
export function reportDeliveries(worker: OutboxWorker, metrics: ServerMetrics): void {
  worker.onDeliveries = (sent, failed) => {
    const add = (outcome: DeliveryOutcome, count: number) => count > 0 && metrics.outboxDeliveries.inc({ outcome }, count);
    add('sent', sent);
    add('failed', failed);
  };
}

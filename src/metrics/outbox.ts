// Delivery attempts of the e-mail worker, counted into the metrics of the server that runs it. The
// worker makes one call per batch (countDeliveries); the server ties the worker to its metrics.
import type { DeliveryOutcome, ServerMetrics } from './metrics.js';

const metricsOfWorker = new WeakMap<object, ServerMetrics>();

/** From now on, `worker`'s deliveries count in `metrics`. */
export function reportDeliveries(worker: object, metrics: ServerMetrics): void {
  metricsOfWorker.set(worker, metrics);
}

/** `sent` e-mails went out and `failed` attempts failed (to be retried, or given up); a no-op without metrics. */
export function countDeliveries(worker: object, sent: number, failed: number): void {
  const metrics = metricsOfWorker.get(worker);
  if (!metrics) return;
  const add = (outcome: DeliveryOutcome, count: number) => count > 0 && metrics.outboxDeliveries.inc({ outcome }, count);
  add('sent', sent);
  add('failed', failed);
}

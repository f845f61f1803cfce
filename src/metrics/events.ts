// The live updates' gauges, read at scrape time: subscriptions following the event log and long polls
// waiting on a queue, in this process (a closed connection leaves both at once).
import { Gauge } from 'prom-client';
import type { ServerMetrics } from './metrics.js';

interface Counted {
  readonly size: number;
}

export function observeEvents(metrics: ServerMetrics, parts: { streams: Counted; polls: Counted }): void {
  const registers = [metrics.registry];
  new Gauge({
    name: 'teamchat_event_streams',
    help: 'GraphQL subscriptions (Server-Sent Events and WebSocket) open in this process and following the event log',
    registers,
    collect() {
      this.set(parts.streams.size);
    },
  });
  new Gauge({
    name: 'teamchat_event_polls_waiting',
    help: 'GET /api/v1/events requests waiting in this process for an event of their queue',
    registers,
    collect() {
      this.set(parts.polls.size);
    },
  });
}

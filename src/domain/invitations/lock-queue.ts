// Requests that lock the same organization's row run at most two at a time per process: one holds
// the lock while the next prepares and waits for it in the database; the rest wait here, idle and
// without a pooled connection held open in a transaction, so other users' requests find both a free
// connection and an event loop that is not crowded with work queued behind the lock anyway.
const PER_ORGANIZATION = 2;

interface Queue {
  running: number;
  waiting: (() => void)[];
}

const queues = new Map<number, Queue>();

export async function queuedForOrganization<T>(organizationId: number, work: () => Promise<T>): Promise<T> {
  let queue = queues.get(organizationId);
  if (!queue) queues.set(organizationId, (queue = { running: 0, waiting: [] }));
  if (queue.running < PER_ORGANIZATION) queue.running++;
  else await new Promise<void>((resolve) => queue.waiting.push(resolve));
  try {
    return await work();
  } finally {
    const next = queue.waiting.shift();
    // The next one takes over this slot; the last one out forgets the organization.
    if (next) next();
    else if (--queue.running === 0) queues.delete(organizationId);
  }
}

// A long-lived request's credentials, checked again when the authentication cache hears of a change
// (src/domain/auth/held-credentials.ts): only the latest check's outcome applies, and what the request
// delivers waits for a check in flight. The checks are held open here so that they finish in the order
// a test needs; the cache's announcements are its own event emitter's.
import { EventEmitter } from 'node:events';
import { expect, test } from 'vitest';
import type { AppContext } from '../../src/app-context.js';
import type { Actor } from '../../src/domain/auth/actor.js';
import { CredentialWatch, type HeldCredentials } from '../../src/domain/auth/held-credentials.js';

const KEY = 'key-hash';

/** Credentials whose checks stay open until the test settles them, in any order. */
function heldOpen() {
  const checks: { resolve: (actor: Actor) => void; reject: (error: unknown) => void }[] = [];
  const credentials: HeldCredentials = {
    concernedBy: (invalidation) => invalidation === KEY,
    recheck: () => new Promise<Actor>((resolve, reject) => checks.push({ resolve, reject })),
  };
  return { credentials, checks };
}

function watching() {
  const events = new EventEmitter();
  const watch = new CredentialWatch({ authCache: { events } } as unknown as AppContext);
  const { credentials, checks } = heldOpen();
  const outcomes: string[] = [];
  const held = watch.watch(credentials, {
    renewed: (actor) => outcomes.push(`renewed as ${actor.fullName}`),
    refused: (error) => outcomes.push(`refused: ${(error as Error).message}`),
  });
  return { invalidate: () => events.emit('invalidated', KEY), checks, outcomes, held };
}

const actorNamed = (fullName: string) => ({ id: 1, organizationId: 1, fullName }) as unknown as Actor;
/** Every callback already queued has run. */
const afterQueued = () => new Promise((resolve) => setImmediate(resolve));

test('a check that finishes after a later one is dropped: the user is never set back to what they were', async () => {
  const { invalidate, checks, outcomes } = watching();
  invalidate();
  invalidate();
  checks[1]!.resolve(actorNamed('Later'));
  await afterQueued();
  checks[0]!.resolve(actorNamed('Earlier'));
  await afterQueued();
  expect(outcomes).toEqual(['renewed as Later']);

  invalidate();
  invalidate();
  checks[3]!.resolve(actorNamed('Reactivated'));
  await afterQueued();
  checks[2]!.reject(new Error('Account is deactivated'));
  await afterQueued();
  expect(outcomes).toEqual(['renewed as Later', 'renewed as Reactivated']);
});

test('what the request delivers waits for every check in flight, one started meanwhile included', async () => {
  const { invalidate, checks, outcomes, held } = watching();
  expect(held.settled()).toBeUndefined();
  invalidate();
  let delivered = false;
  const delivery = held.settled()!.then(() => {
    delivered = true;
    return [...outcomes];
  });
  invalidate();
  checks[0]!.resolve(actorNamed('First'));
  await afterQueued();
  expect(delivered).toBe(false);
  checks[1]!.reject(new Error('Account is deactivated'));
  expect(await delivery).toEqual(['refused: Account is deactivated']);
  expect(held.settled()).toBeUndefined();
});

test('a stopped watch hears of no more changes', async () => {
  const { invalidate, checks, held } = watching();
  held.stop();
  invalidate();
  await afterQueued();
  expect(checks).toHaveLength(0);
  expect(held.settled()).toBeUndefined();
});

// The memory budget's reservations against answers that settle before them: nothing is held for ever.
import { expect, test } from 'vitest';
import { MemoryBudget } from '../../src/http/memory-budget.js';

test('a reservation granted after its answer settled (GraphQL stopped waiting for its resolver) is given back at once', async () => {
  const budget = new MemoryBudget({ bytes: 100, waitMs: 60_000 });
  const taken = await budget.reserve(100);
  let late: Promise<void> | undefined;
  const answer = await budget.answering(async (reservations) => {
    late = budget.reserveWhileAnswering(reservations, 50);
    return 'answered while the reservation still waited';
  });
  expect(answer).toBe('answered while the reservation still waited');
  taken.release();
  await late;
  expect(budget.reserved).toBe(0);
});

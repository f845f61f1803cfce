// Admission of the largest answers against a memory budget, in the spirit of Fastify's
// under-pressure but by reservation: a request about to hold a large answer (a whole file list for
// GraphQL, a page of a streamed list) first reserves its expected size. While the reservations in
// flight would pass the budget it waits, first come first served, for a moment, then answers 503 with
// Retry-After. Small requests reserve nothing and never wait, so other users' work keeps flowing.
import { createGraphQLError } from 'graphql-yoga';
import { allPages, type Paged } from '../domain/paging.js';
import { jsonResponse } from '../rest/envelope.js';
import type { MemoryBudgetConfig } from '../config.js';

export const MEMORY_BUSY_MESSAGE = 'The server is busy; try again shortly.';
export const MEMORY_RETRY_AFTER_SECONDS = 2;

/** No room came within the wait: the request answers 503 with Retry-After. */
export class MemoryBusyError extends Error {
  constructor() {
    super(MEMORY_BUSY_MESSAGE);
    this.name = 'MemoryBusyError';
  }
}

/** The REST door's 503: the reference's error envelope. */
export const memoryBusyResponse = () =>
  jsonResponse({ result: 'error', msg: MEMORY_BUSY_MESSAGE, code: 'BAD_REQUEST' }, 503, {
    'Retry-After': String(MEMORY_RETRY_AFTER_SECONDS),
  });

/** The GraphQL door's 503, shaped like the database outage's. */
export const memoryBusyGraphQLError = () =>
  createGraphQLError(MEMORY_BUSY_MESSAGE, {
    extensions: { code: 'SERVICE_UNAVAILABLE', http: { status: 503, headers: { 'Retry-After': String(MEMORY_RETRY_AFTER_SECONDS) } } },
  });

/** For `.catch` on a REST door's reservation: the 503 to answer instead. */
export function refusedAsBusy(error: unknown): Response {
  if (error instanceof MemoryBusyError) return memoryBusyResponse();
  throw error;
}

/** For `.catch` on a GraphQL resolver's reservation: the 503 error to throw instead. */
export function thrownAsBusy(error: unknown): never {
  throw error instanceof MemoryBusyError ? memoryBusyGraphQLError() : error;
}

export interface Reservation {
  /** Gives the bytes back (once; later calls do nothing). */
  release(): void;
}

/** The reservations one answer holds until it settles (GraphQL's context carries it to the resolvers). */
export interface AnswerReservations {
  held: Reservation[];
  settled: boolean;
}

interface Waiter {
  bytes: number;
  admit(): void;
}

export class MemoryBudget {
  private reservedBytes = 0;
  private readonly waiting: Waiter[] = [];

  constructor(private readonly config: MemoryBudgetConfig) {}

  get reserved(): number {
    return this.reservedBytes;
  }

  /**
   * Reserves `bytes`, waiting up to the configured time; throws MemoryBusyError when no room came.
   * A reservation larger than the whole budget is cut to it: such a request runs alone rather than
   * never.
   */
  reserve(bytes: number): Promise<Reservation> {
    if (this.config.bytes === 0) return Promise.resolve(this.take(0));
    const wanted = Math.min(Math.max(0, Math.ceil(bytes)), this.config.bytes);
    if (this.waiting.length === 0 && this.fits(wanted)) return Promise.resolve(this.take(wanted));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        bytes: wanted,
        admit: () => {
          clearTimeout(timer);
          resolve(this.take(wanted));
        },
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(new MemoryBusyError());
        // The one that gave up may have held back smaller ones behind it.
        this.admitWaiting();
      }, this.config.waitMs);
      this.waiting.push(waiter);
    });
  }

  /**
   * Runs `work` (one request's answer) with its reservations: those made with
   * `reserveWhileAnswering` for it are given back when it settles.
   */
  async answering<T>(work: (answer: AnswerReservations) => Promise<T>): Promise<T> {
    const answer: AnswerReservations = { held: [], settled: false };
    try {
      return await work(answer);
    } finally {
      answer.settled = true;
      for (const reservation of answer.held) reservation.release();
    }
  }

  /**
   * Reserves `bytes` until `answer` is ready; without one (a subscription's event), nothing is held.
   * A reservation granted after its answer settled (a resolver that GraphQL stopped waiting for, when
   * a sibling failed) is given back at once, or it would be held for ever.
   */
  async reserveWhileAnswering(answer: AnswerReservations | undefined, bytes: number): Promise<void> {
    const reservation = await this.reserve(bytes);
    if (answer && !answer.settled) answer.held.push(reservation);
    else reservation.release();
  }

  private fits(bytes: number): boolean {
    return this.reservedBytes + bytes <= this.config.bytes;
  }

  private take(bytes: number): Reservation {
    this.reservedBytes += bytes;
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.reservedBytes -= bytes;
        this.admitWaiting();
      },
    };
  }

  private admitWaiting(): void {
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.bytes)) this.waiting.shift()!.admit();
  }
}

/**
 * Every item of a list that an answer holds whole (GraphQL's): past one page, its expected size is
 * reserved until the answer is built (a 503 error when no room comes).
 */
export async function wholeListWithinBudget<T>(
  context: { app: { memoryBudget: MemoryBudget }; answer?: AnswerReservations },
  list: Paged<T>,
  bytesPerItem: number,
): Promise<T[]> {
  if (list.morePages)
    await context.app.memoryBudget.reserveWhileAnswering(context.answer, list.expectedCount * bytesPerItem).catch(thrownAsBusy);
  return allPages(list);
}

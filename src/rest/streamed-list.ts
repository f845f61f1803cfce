// A success envelope whose one large list is written page by page as the client reads: the body is
// byte for byte what successResponse would write for the whole object, but only one page (its rows
// and its JSON) is held at a time. The next page is read only when the socket has taken the last.
import type { ServerContext } from '../server-context.js';
import type { Paged } from '../domain/paging.js';
import { refusedAsBusy, type Reservation } from '../http/memory-budget.js';
import type { Logger } from '../logging.js';
import { successResponse } from './envelope.js';

export interface StreamedList {
  /** Fields before the list, after `result` and `msg`. */
  before?: Record<string, unknown>;
  key: string;
  /** Each page's items, already in their JSON shape. */
  pages: AsyncIterable<unknown[]>;
  /** Fields after the list. */
  after?: Record<string, unknown>;
  /** Given back when the body is written, or the client went away. */
  reservation: Reservation;
  /** The request's logger. */
  log: Logger;
}

const NEVER_CACHE = 'max-age=0, no-cache, no-store, must-revalidate, private';

/** `{"a":1}` as the fields it adds inside another object: `,"a":1`, or nothing. */
const fieldsOf = (fields: Record<string, unknown> = {}) => JSON.stringify(fields).slice(1, -1);
const withComma = (text: string) => (text === '' ? '' : `,${text}`);

export function streamedSuccessResponse(list: StreamedList): Response {
  const head = `{"result":"success","msg":""${withComma(fieldsOf(list.before))},${JSON.stringify(list.key)}:[`;
  const tail = `]${withComma(fieldsOf(list.after))}}\n`;
  const pages = list.pages[Symbol.asyncIterator]();
  let opened = false;
  let anyItem = false;
  /** The next piece of the body, or null at its end. */
  const nextPiece = async (): Promise<string | null> => {
    const next = await pages.next();
    if (next.done) return null;
    if (next.value.length === 0) return '';
    const items = next.value.map((item) => JSON.stringify(item)).join(',');
    const separated = anyItem ? `,${items}` : items;
    anyItem = true;
    return separated;
  };
  const finish = () => list.reservation.release();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const piece = await nextPiece();
          const prefix = opened ? '' : head;
          opened = true;
          if (piece === null) {
            controller.enqueue(Buffer.from(prefix + tail));
            controller.close();
            finish();
          } else {
            controller.enqueue(Buffer.from(prefix + piece));
          }
        } catch (error) {
          // The status line is gone already: the connection is cut, so the client sees a broken body.
          list.log.error({ err: error }, 'streamed list failed');
          controller.error(error);
          finish();
        }
      },
      async cancel() {
        finish();
        await pages.return?.();
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, {
    headers: { 'Content-Type': 'application/json', Expires: new Date().toUTCString(), 'Cache-Control': NEVER_CACHE },
  });
}

/** Each page's items in another shape, page by page. */
export async function* mapPages<T, U>(pages: AsyncIterable<T[]>, shape: (item: T) => U): AsyncGenerator<U[]> {
  for await (const page of pages) yield page.map(shape);
}

export interface PagedAnswer<T> {
  key: string;
  /** An item's JSON shape; without it, items are written as they are. */
  item?: (row: T) => unknown;
  /** What one page holds while it is written (rows, answer objects, JSON): reserved for the stream. */
  pageBytes: number;
  /** Fields after the list. */
  after?: Record<string, unknown>;
  /** Parameters the endpoint ignored (ignored_parameters_unsupported, last). */
  ignored?: string[];
}

/**
 * A paged list's success answer: whole, with its length, when it is one page; otherwise streamed a
 * page at a time with one page's memory reserved first (503 with Retry-After when none comes).
 */
export async function pagedListResponse<T>(
  { app, log }: { app: ServerContext; log: Logger },
  list: Paged<T>,
  answer: PagedAnswer<T>,
): Promise<Response> {
  const ignored = answer.ignored ?? [];
  const item = answer.item;
  if (!list.morePages) return successResponse({ [answer.key]: item ? list.firstPage.map(item) : list.firstPage, ...answer.after }, ignored);
  const reservation = await app.memoryBudget.reserve(answer.pageBytes).catch(refusedAsBusy);
  if (reservation instanceof Response) return reservation;
  const after = ignored.length > 0 ? { ...answer.after, ignored_parameters_unsupported: ignored } : answer.after;
  return streamedSuccessResponse({ key: answer.key, pages: item ? mapPages(list.pages(), item) : list.pages(), after, reservation, log });
}

// A success envelope whose one large list is written page by page as the client reads: the body is
// byte for byte what successResponse would write for the whole object, but only one page (its rows
// and its JSON) is held at a time. The next page is read only when the socket has taken the last.
import { logger } from '../logging.js';
import type { Reservation } from '../http/memory-budget.js';

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
          logger.error({ err: error }, 'streamed list failed');
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

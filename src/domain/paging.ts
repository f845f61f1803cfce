// Long lists read a page (one statement) at a time, so that no answer holds a whole large list as
// database rows: the REST door streams the pages, GraphQL collects them after reserving the memory
// the count announces (src/http/memory-budget.ts).

export interface Paged<T> {
  /** The first page; when it is the whole list, `morePages` is false. */
  firstPage: T[];
  morePages: boolean;
  /** How many items the list holds as the first page was read (items may come and go since). */
  expectedCount: number;
  /** Every page, the first included, in the list's order; each further page is one statement. */
  pages(): AsyncGenerator<T[]>;
}

/**
 * A list from its first page: `readAfter(last)` reads the page after an item, `count()` the whole
 * list's length (asked only when the first page is full, so short lists stay one statement).
 */
export async function pagedList<T>(
  firstPage: T[],
  pageSize: number,
  readAfter: (last: T) => Promise<T[]>,
  count: () => Promise<number>,
): Promise<Paged<T>> {
  const morePages = firstPage.length >= pageSize;
  return {
    firstPage,
    morePages,
    expectedCount: morePages ? await count() : firstPage.length,
    async *pages() {
      let page = firstPage;
      yield page;
      while (page.length >= pageSize) {
        page = await readAfter(page[page.length - 1]!);
        if (page.length > 0) yield page;
      }
    },
  };
}

/** Every page in one array, for answers that are built whole. */
export async function allPages<T>(list: Paged<T>): Promise<T[]> {
  if (!list.morePages) return list.firstPage;
  const items: T[] = [];
  for await (const page of list.pages()) for (const item of page) items.push(item);
  return items;
}

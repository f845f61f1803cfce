// State derived from the database and held in a process's memory, safe only while the process hears
// every change (src/db/notifications.ts): off and empty while the listening connection is down, and
// every change heard bumps a generation, so that a value read from the database before a change is
// not kept after it. Subclasses say what a notification drops.
const MAX_ENTRIES = 10_000;

export class ListeningCache<Value> {
  private readonly entries = new Map<string, Value>();
  private on = false;
  private generation = 0;

  get(key: string): Value | undefined {
    return this.on ? this.entries.get(key) : undefined;
  }

  /** Take before reading from the database; hand to set() afterwards. */
  ticket(): number {
    return this.generation;
  }

  /** Kept only if nothing was heard since the ticket was taken. */
  set(key: string, value: Value, ticket: number): void {
    if (!this.on || ticket !== this.generation) return;
    // Oldest first out: Map keeps insertion order.
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, value);
  }

  /** A change was heard: `key`'s entry, or every entry, is dropped. */
  protected drop(key?: string): void {
    this.generation++;
    if (key === undefined) this.entries.clear();
    else this.entries.delete(key);
  }

  /** Called by the listener: on while notifications arrive, off (and empty) otherwise. */
  listening(on: boolean): void {
    this.drop();
    this.on = on;
  }

  get enabled(): boolean {
    return this.on;
  }

  get size(): number {
    return this.entries.size;
  }
}

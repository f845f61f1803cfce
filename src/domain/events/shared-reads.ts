// One read of an organization's state shared by the waiting polls that need it: an event wakes every
// poll of its organization, and each would otherwise read the same rows. A caller may take a read
// that began after the newest event it delivers (`since`, an event position) had committed: positions
// are given in commit order, so the read's starter, which had seen a position at least as high, began
// it after that commit. Such a read is as new as the caller needs while in flight and for `keepMs`
// after (a later change has a later event, whose deliverers read again).
export class SharedReads<V> {
  private readonly reads = new Map<number, { since: number; value: Promise<V> }>();

  constructor(
    private readonly read: (organizationId: number) => Promise<V>,
    private readonly keepMs = 1_000,
  ) {}

  get(organizationId: number, since: number): Promise<V> {
    const current = this.reads.get(organizationId);
    if (current && current.since >= since) return current.value;
    const entry = { since, value: this.read(organizationId) };
    this.reads.set(organizationId, entry);
    const forget = () => {
      if (this.reads.get(organizationId) === entry) this.reads.delete(organizationId);
    };
    entry.value.then(() => setTimeout(forget, this.keepMs).unref(), forget);
    return entry.value;
  }
}

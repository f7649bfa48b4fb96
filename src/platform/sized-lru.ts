// A map bounded by the total size of its values (the caller says what a value weighs, roughly in
// bytes), least recently used first out. The in-memory read models keep one entry per account in
// one of these, so memory stays bounded however many accounts are busy.

export class SizedLru<K, V> {
  private readonly entries = new Map<K, { value: V; size: number }>();
  private total = 0;

  constructor(readonly budget: number) {}

  /** The value, now the most recently used. */
  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    // Re-inserting keeps the map in least-recently-used order.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** The value without counting it as used. */
  peek(key: K): V | undefined {
    return this.entries.get(key)?.value;
  }

  /** Stores a value; false (and nothing stored) when it alone weighs more than the budget. */
  set(key: K, value: V, size: number): boolean {
    this.delete(key);
    if (size > this.budget) return false;
    this.entries.set(key, { value, size });
    this.total += size;
    this.evict();
    return true;
  }

  /** Changes the weight of a stored value by `delta` (the value grew or shrank in place). */
  resize(key: K, delta: number): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    entry.size += delta;
    this.total += delta;
    if (entry.size > this.budget) this.delete(key);
    else this.evict();
  }

  delete(key: K): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.total -= entry.size;
  }

  clear(): void {
    this.entries.clear();
    this.total = 0;
  }

  private evict(): void {
    for (const [key, entry] of this.entries) {
      if (this.total <= this.budget) return;
      this.entries.delete(key);
      this.total -= entry.size;
    }
  }
}

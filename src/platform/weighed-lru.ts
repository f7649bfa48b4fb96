// lru-cache measures a value (sizeCalculation) only when a different value is set under its key.
// The recent events' runs and the read model's accounts grow and shrink in place, so they are set
// anew when their weight has drifted by more than an eighth from what the cache counted, and only
// marked as used otherwise: measuring again on every commit was a measurable part of a write
// (bench/HISTORY.md, "Response bodies in reused buffers, and the write path"). A cache made with
// `weighedMaxSize(budget)` so stays within `budget` bytes however far each value drifted.
import type { LRUCache } from 'lru-cache';

/** The most a value's weight may differ from what the cache counted, as a share of it. */
const DRIFT = 1 / 8;

export interface Weighed {
  /** What the value weighs now. */
  readonly weight: number;
  /** What the cache counted when it was last set (by setWeighed). */
  countedWeight?: number;
}

/** The cache's maxSize for a budget: counted weights may lag the real ones by up to DRIFT. */
export function weighedMaxSize(budget: number): number {
  return Math.floor(budget / (1 + DRIFT));
}

/** Sets `value` under `key` (measured anew) unless it is already there weighing about what was counted; then marks it used. */
export function setWeighed<K extends {}, V extends Weighed>(cache: LRUCache<K, V>, key: K, value: V): void {
  const counted = value.countedWeight;
  if (counted !== undefined && cache.peek(key) === value) {
    if (Math.abs(value.weight - counted) <= counted * DRIFT) {
      cache.get(key);
      return;
    }
    // The same value set again would not be measured again.
    cache.delete(key);
  }
  value.countedWeight = value.weight;
  cache.set(key, value);
}

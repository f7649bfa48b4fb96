// Fixed windows aligned to the clock (one minute for API requests), per credential or per IP.
// The counter sits behind an interface: in memory for one process, shared storage for several.
import type { Clock } from './clock.js';

export const WINDOW_MS = 60_000;

/**
 * Counts hits per key and window. `increment` false reads without counting (for /health). The
 * in-process counter answers at once rather than with a promise: it runs on every request.
 * `limit` is the key's allowance: a shared counter may decide in memory while a key is far from it.
 */
export interface RateLimitCounter {
  hit(key: string, windowStart: number, increment: boolean, limit: number): number | Promise<number>;
}

export class InProcessRateLimitCounter implements RateLimitCounter {
  private window = 0;
  private counts = new Map<string, number>();

  hit(key: string, windowStart: number, increment: boolean): number {
    if (windowStart !== this.window) {
      // Every stored count belongs to a past window once the clock moves on.
      this.window = windowStart;
      this.counts = new Map();
    }
    const count = (this.counts.get(key) ?? 0) + (increment ? 1 : 0);
    if (increment) this.counts.set(key, count);
    return count;
  }
}

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Whole seconds until the window resets, at least 1. */
  resetSeconds: number;
}

export class RateLimiter {
  /** Counts in this process while the shared counter cannot be reached, so an outage is not a 500. */
  private readonly fallback = new InProcessRateLimitCounter();
  /** Told of every counted request past the limit (the operator's metrics), with its key. */
  onRefused: ((key: string) => void) | undefined;

  constructor(
    private readonly counter: RateLimitCounter,
    private readonly clock: Clock,
    private readonly windowMs = WINDOW_MS,
  ) {}

  /** The decision now when the counter answers at once (in process), else a promise of it. */
  check(key: string, limit: number, increment: boolean): RateLimitDecision | Promise<RateLimitDecision> {
    const now = this.clock.now().getTime();
    const windowStart = now - (now % this.windowMs);
    const decide = (count: number): RateLimitDecision => {
      if (count > limit && increment) this.onRefused?.(key);
      return {
        allowed: count <= limit,
        limit,
        remaining: Math.max(0, limit - count),
        resetSeconds: Math.max(1, Math.ceil((windowStart + this.windowMs - now) / 1000)),
      };
    };
    // Storage is down: readiness reports it; requests are still limited, per process.
    const fallback = () => decide(this.fallback.hit(key, windowStart, increment));
    let count: number | Promise<number>;
    try {
      count = this.counter.hit(key, windowStart, increment, limit);
    } catch {
      return fallback();
    }
    return typeof count === 'number' ? decide(count) : count.then(decide, fallback);
  }
}

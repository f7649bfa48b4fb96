/** Time source shared by services, so tests can move time forward instead of sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to; for tests of expiry and windows. */
export class ManualClock implements Clock {
  constructor(private current = new Date()) {}
  now(): Date {
    return new Date(this.current.getTime());
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

let memoMs = Number.NaN;
let memoIso = '';

/**
 * `clock.now().toISOString()`, made once per millisecond: under load many requests share one, and
 * authenticating each compares its credential's expiry with the time.
 */
export function nowIso(clock: Clock): string {
  const ms = clock.now().getTime();
  if (ms !== memoMs) {
    memoMs = ms;
    memoIso = new Date(ms).toISOString();
  }
  return memoIso;
}

export const DAY_MS = 86_400_000;

export function addDays(date: Date, days: number): Date {
  return new Date(date.getTime() + days * DAY_MS);
}

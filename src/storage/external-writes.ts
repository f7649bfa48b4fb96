// What keeps an in-memory copy of stored data honest when another process writes to the same
// SQLite file (a second server started by mistake, or by a test): such a commit is invisible to
// this process's own bookkeeping, so the copy is dropped and read again.
import { performance } from 'node:perf_hooks';

/**
 * How often storage is asked at most. The question takes two locking system calls (as much as a
 * small read: bench/HISTORY.md, "Figures the code's comments refer to"), so it is not asked on every read:
 * another process's commit is noticed within this long.
 */
export const EXTERNAL_WRITE_CHECK_MS = 1;

export class ExternalWrites {
  private seen: number;
  private checkedAt = performance.now();

  /** `dataVersion`: changes whenever another connection commits (Storage.dataVersion). */
  constructor(private readonly dataVersion: () => number) {
    this.seen = dataVersion();
  }

  /** Whether another process committed since the last call (asked at most every EXTERNAL_WRITE_CHECK_MS). */
  happened(): boolean {
    const now = performance.now();
    if (now - this.checkedAt < EXTERNAL_WRITE_CHECK_MS) return false;
    this.checkedAt = now;
    const version = this.dataVersion();
    if (version === this.seen) return false;
    this.seen = version;
    return true;
  }
}

// What keeps an in-memory copy of stored data honest when another process writes to the same
// SQLite file (a second server started by mistake, or by a test): such a commit is invisible to
// this process's own bookkeeping, so the copy is dropped and read again.

export class ExternalWrites {
  private seen: number;

  /** `dataVersion`: changes whenever another connection commits (Storage.dataVersion). */
  constructor(private readonly dataVersion: () => number) {
    this.seen = dataVersion();
  }

  /** Whether another process committed since the last call. */
  happened(): boolean {
    const version = this.dataVersion();
    if (version === this.seen) return false;
    this.seen = version;
    return true;
  }
}

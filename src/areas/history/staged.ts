// The points live writes staged (storage/history-staged.ts), moved into history_points before
// anything reads or aggregates points, and every second by the `history-staged` task, so that a
// state written is read back at once and the staging table stays about a second long.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';
import { isPostgres } from '../../storage/postgres-writes.js';
import { moveStagedPoints } from '../../storage/history-staged.js';

/** Points one move takes: a few milliseconds of SQLite, whose statements hold the event loop. */
const MOVE_BATCH = 2000;
/** How often the background task moves what was staged. */
export const STAGED_MOVE_INTERVAL_MS = 1000;

export class StagedPoints {
  /** SQLite: whether a write staged points since the last move began (true at start: a crash may have left some). */
  private mayBeStaged = true;
  /** SQLite: the move in progress (never rejects); a caller waits for it rather than moving beside it. */
  private moving: Promise<void> | undefined;

  constructor(private readonly db: Kysely<Database>) {}

  /** A write staged points (called in its transaction). */
  noteStaged(): void {
    this.mayBeStaged = true;
  }

  /** Moves every point staged before the call into history_points. */
  async settle(): Promise<void> {
    // PostgreSQL: other processes stage too; movers take turns on a lock (storage/history-staged.ts).
    if (isPostgres(this.db)) return this.moveAll();
    while (this.moving) await this.moving;
    if (!this.mayBeStaged) return;
    // Cleared as the move begins: a write staging after it sets it again, and the next caller moves.
    this.mayBeStaged = false;
    const moving = this.moveAll().catch((error: unknown) => {
      this.mayBeStaged = true;
      throw error;
    });
    // What waiters wait for: the move ended, whichever way (the caller that began it gets its error).
    const ended: Promise<void> = moving.then(
      () => this.ended(ended),
      () => this.ended(ended),
    );
    this.moving = ended;
    return moving;
  }

  private ended(move: Promise<void>): void {
    if (this.moving === move) this.moving = undefined;
  }

  private async moveAll(): Promise<void> {
    while ((await moveStagedPoints(this.db, MOVE_BATCH)) >= MOVE_BATCH) await nextTurn();
  }
}

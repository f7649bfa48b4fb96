// Where the service's log lines go: standard output, in one write per turn of the event loop.
// pino's default destination hands each line to a libuv worker thread and back: a large share of a
// GET, most of it waking threads on a virtual machine (bench/HISTORY.md, "Figures the code's
// comments refer to"). Here lines written in one turn are joined and written synchronously when the
// turn ends (setImmediate), or at 64 KiB: an idle server's line is out at once, a busy one writes
// once for many requests, and no line waits for a timer. What is pending is written on exit.
import { writeSync } from 'node:fs';

const FLUSH_AT = 64 * 1024;
const pause = new Int32Array(new SharedArrayBuffer(4));

export class BatchedLogDestination {
  private pending: string[] = [];
  private size = 0;
  private scheduled = false;
  private readonly flushAtTurnEnd = () => {
    this.scheduled = false;
    this.flush();
  };
  private readonly flushOnExit = () => this.flush();

  constructor(private readonly fd = 1) {
    process.on('exit', this.flushOnExit);
  }

  /** pino's stream interface: one serialized line. */
  write(line: string): void {
    this.pending.push(line);
    this.size += line.length;
    if (this.size >= FLUSH_AT) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushAtTurnEnd);
    }
  }

  flush(): void {
    if (this.pending.length === 0) return;
    let bytes = Buffer.from(this.pending.join(''));
    this.pending = [];
    this.size = 0;
    while (bytes.length > 0) {
      try {
        bytes = bytes.subarray(writeSync(this.fd, bytes));
      } catch (error) {
        // A full non-blocking pipe: wait a moment for the reader. Anything else (the reader is
        // gone): the lines are dropped, never the server.
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') return;
        Atomics.wait(pause, 0, 0, 1);
      }
    }
  }

  /** Writes what is pending and stops watching for the process's exit. */
  close(): void {
    this.flush();
    process.off('exit', this.flushOnExit);
  }
}

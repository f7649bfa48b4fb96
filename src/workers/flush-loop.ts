// Writes in-memory buffers (usage counters, key last-use times) to storage on an interval and
// once more when the server stops.
import type { FastifyBaseLogger } from 'fastify';

export type FlushTask = () => Promise<void>;

export class FlushLoop {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private lastFlushAt: string | null = null;
  private failures = 0;

  constructor(
    private readonly intervalMs: number,
    private readonly tasks: FlushTask[],
    private readonly log: FastifyBaseLogger,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.intervalMs);
    this.timer.unref();
  }

  /** Runs every task once; runs never overlap. */
  flush(): Promise<void> {
    this.running = this.running.then(async () => {
      for (const task of this.tasks) {
        try {
          await task();
        } catch (error) {
          this.failures++;
          this.log.error({ err: error }, 'flushing buffered counters failed; will retry');
        }
      }
      this.lastFlushAt = new Date().toISOString();
    });
    return this.running;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  report(): Record<string, unknown> {
    return { intervalMs: this.intervalMs, lastFlushAt: this.lastFlushAt, failures: this.failures };
  }
}

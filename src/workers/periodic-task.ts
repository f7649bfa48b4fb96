// A background job run on an interval (buffer flushes, event pruning): runs never overlap, a
// failure is logged and retried next time, and stop() aborts the run in progress (a task that
// works in steps checks the signal between them) and waits for it. Runs queue at most one deep:
// the ticks that come while a run takes longer than the interval all wait for the same next run,
// so a slow run is followed by one more, not by a run for every tick it outlasted.
import type { FastifyBaseLogger } from 'fastify';

export class PeriodicTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  /** The run asked for that has not started yet: a further ask joins it. */
  private queued: Promise<void> | undefined;
  private lastRunAt: string | null = null;
  private failures = 0;
  private readonly stopping = new AbortController();

  constructor(
    readonly name: string,
    private readonly intervalMs: number,
    private readonly task: (signal: AbortSignal) => Promise<void>,
    private readonly log: FastifyBaseLogger,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.runOnce(), this.intervalMs);
    this.timer.unref();
  }

  /** Runs the task once it is not running; settles when that run has ended. */
  runOnce(): Promise<void> {
    // Not yet started, the queued run comes after this ask too: it does what a run of its own would.
    if (this.queued) return this.queued;
    const run = this.running.then(async () => {
      this.queued = undefined;
      try {
        await this.task(this.stopping.signal);
        this.lastRunAt = new Date().toISOString();
      } catch (error) {
        this.failures++;
        this.log.error({ err: error, task: this.name }, 'background task failed; it runs again at the next interval');
      }
    });
    this.queued = run;
    this.running = run;
    return run;
  }

  /** Stops the interval; with `finalRun`, runs the task once more (to write what is buffered). */
  async stop(options: { finalRun: boolean }): Promise<void> {
    clearInterval(this.timer);
    if (options.finalRun) return this.runOnce();
    this.stopping.abort();
    await this.running;
  }

  report(): Record<string, unknown> {
    return { intervalMs: this.intervalMs, lastRunAt: this.lastRunAt, failures: this.failures };
  }
}

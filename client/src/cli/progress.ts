// The progress of a long command (resources import): on a terminal one line redrawn in place, a bar
// with done/total, the rate and the time left; elsewhere (a pipe, a log file) a plain line per step,
// which a log keeps and a person or a program can read.

/** Where progress is written: standard error, which a terminal shows and a pipe of the data leaves alone. */
export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

const BAR_WIDTH = 24;

/** 12,345 */
function count(value: number): string {
  return value.toLocaleString('en-US');
}

/** 0:09, 12:34, 1:02:03 */
export function duration(seconds: number): string {
  const whole = Math.max(0, Math.round(seconds));
  const [hours, minutes, rest] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60), whole % 60];
  const mmss = `${hours > 0 ? String(minutes).padStart(2, '0') : minutes}:${String(rest).padStart(2, '0')}`;
  return hours > 0 ? `${hours}:${mmss}` : mmss;
}

export class Progress {
  private readonly startedAt: number;
  private drawn = false;

  /**
   * `done` of `total` are done already (a resumed import): the rate counts what this run does.
   * `unit` names what is counted ("rows").
   */
  constructor(
    private readonly stream: ProgressStream,
    private readonly total: number,
    private readonly unit: string,
    private readonly resumedFrom = 0,
    private readonly now: () => number = Date.now,
  ) {
    this.startedAt = now();
  }

  /** On a terminal, the bar at once (a log gets its first line after the first step). */
  start(done: number): void {
    if (this.stream.isTTY) this.update(done);
  }

  /** Shows that `done` of the total are done. */
  update(done: number): void {
    const seconds = (this.now() - this.startedAt) / 1000;
    const rate = seconds > 0 ? (done - this.resumedFrom) / seconds : 0;
    const eta = rate > 0 ? duration((this.total - done) / rate) : '?';
    const percent = this.total > 0 ? Math.floor((done / this.total) * 100) : 100;
    const numbers = `${count(done)}/${count(this.total)} ${this.unit}`;
    if (!this.stream.isTTY) {
      this.stream.write(`${numbers} (${percent}%), ${count(Math.round(rate))} ${this.unit}/s, ETA ${eta}\n`);
      return;
    }
    const filled = this.total > 0 ? Math.round((done / this.total) * BAR_WIDTH) : BAR_WIDTH;
    const bar = `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}]`;
    const line = `${bar} ${String(percent).padStart(3)}%  ${numbers}  ${count(Math.round(rate))}/s  ETA ${eta}`;
    // Carriage return and erase the line: the bar is redrawn where it stands, never wider than the terminal.
    this.stream.write(`\r\u001b[2K${line.slice(0, Math.max(20, (this.stream.columns || 80) - 1))}`);
    this.drawn = true;
  }

  /** Ends the bar's line, so that what follows starts on a line of its own. */
  end(): void {
    if (this.drawn) this.stream.write('\n');
    this.drawn = false;
  }
}

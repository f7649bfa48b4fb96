import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PeriodicTask } from '../../src/workers/periodic-task.js';

const log = pino({ level: 'silent' });

/** A task whose runs are counted and whose first run lasts until `release` is called. */
function slowFirstRun(): { task: (signal: AbortSignal) => Promise<void>; started: () => number; ended: () => number; release: () => void } {
  let started = 0;
  let ended = 0;
  let release: () => void = () => {};
  const firstRunEnds = new Promise<void>((resolve) => {
    release = resolve;
  });
  return {
    task: async () => {
      started++;
      if (started === 1) await firstRunEnds;
      ended++;
    },
    started: () => started,
    ended: () => ended,
    release: () => release(),
  };
}

describe('PeriodicTask', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs once per interval while runs are quicker than it', async () => {
    let runs = 0;
    const task = new PeriodicTask('quick', 100, async () => void runs++, log);
    task.start();
    await vi.advanceTimersByTimeAsync(1_050);
    expect(runs).toBe(10);
    await task.stop({ finalRun: false });
  });

  it('follows a run that outlasted many intervals with one more run, not one for every tick it missed', async () => {
    const slow = slowFirstRun();
    const task = new PeriodicTask('slow', 100, slow.task, log);
    task.start();
    // Ten ticks: the first started the run that is still going, nine came during it.
    await vi.advanceTimersByTimeAsync(1_050);
    expect(slow.started()).toBe(1);
    slow.release();
    await vi.advanceTimersByTimeAsync(0);
    expect(slow.started()).toBe(2);
    expect(slow.ended()).toBe(2);
    // Then once per interval again.
    await vi.advanceTimersByTimeAsync(100);
    expect(slow.started()).toBe(3);
    await task.stop({ finalRun: false });
  });

  it('never overlaps runs: asks during a run wait for it and share the next run', async () => {
    const slow = slowFirstRun();
    const task = new PeriodicTask('asked', 60_000, slow.task, log);
    const first = task.runOnce();
    // Asked before it started, a run is shared.
    expect(task.runOnce()).toBe(first);
    await vi.advanceTimersByTimeAsync(0);
    expect(slow.started()).toBe(1);
    const second = task.runOnce();
    expect(second).not.toBe(first);
    expect(task.runOnce()).toBe(second);
    await vi.advanceTimersByTimeAsync(0);
    expect(slow.started()).toBe(1);
    slow.release();
    await first;
    await second;
    expect(slow.started()).toBe(2);
    expect(slow.ended()).toBe(2);
  });

  it('stops with a final run after the one in progress, when asked for it', async () => {
    const slow = slowFirstRun();
    const task = new PeriodicTask('flush', 100, slow.task, log);
    task.start();
    await vi.advanceTimersByTimeAsync(150);
    expect(slow.started()).toBe(1);
    let stopped = false;
    const stopping = task.stop({ finalRun: true }).then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(500);
    expect(stopped).toBe(false);
    slow.release();
    await stopping;
    expect(slow.started()).toBe(2);
    expect(slow.ended()).toBe(2);
    // No tick after stop.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(slow.started()).toBe(2);
  });

  it('logs a failed run and runs again at the next interval', async () => {
    let runs = 0;
    const task = new PeriodicTask(
      'failing',
      100,
      async () => {
        runs++;
        if (runs === 1) throw new Error('storage unavailable');
      },
      log,
    );
    task.start();
    await vi.advanceTimersByTimeAsync(250);
    expect(runs).toBe(2);
    expect(task.report()).toMatchObject({ failures: 1, intervalMs: 100 });
    await task.stop({ finalRun: false });
  });
});

// Child processes of the benchmark: every one is tracked, and all are killed when the run ends,
// fails, is interrupted or runs out of time. Children forked with an IPC channel also exit on
// their own when the channel closes (bench/watchdog.ts), so even a killed parent leaves none behind.
import { execFileSync, fork, type ChildProcess, type ForkOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';

const children = new Set<ChildProcess>();

export function track<T extends ChildProcess>(child: T): T {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** SIGKILL to every child still running; synchronous, so it is safe in an 'exit' handler. */
export function killAll(): void {
  for (const child of children) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  children.clear();
}

let cleanupInstalled = false;

/** Kills every child on exit, on SIGINT/SIGTERM/SIGHUP, and on an uncaught error. */
export function installCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      console.error(`bench: ${signal}, stopping every child process`);
      killAll();
      process.exit(130);
    });
  }
  const fail = (error: unknown) => {
    console.error('bench: failed:', error);
    killAll();
    process.exit(1);
  };
  process.on('uncaughtException', fail);
  process.on('unhandledRejection', fail);
}

export function forkTracked(modulePath: string, args: string[], options: ForkOptions): ChildProcess {
  return track(fork(modulePath, args, options));
}

/** Resolves when the child exits; SIGKILLs it if it has not exited `graceMs` after `signal`. */
export function stop(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

/** The first IPC message of the child that satisfies `accept`, or an error on exit or timeout. */
export function nextMessage<T>(child: ChildProcess, accept: (message: unknown) => message is T, timeoutMs: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: unknown) => {
      if (!accept(message)) return;
      done();
      resolve(message);
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      done();
      reject(new Error(`${what}: the child exited (code ${code}, signal ${signal}) before answering`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${what}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Resident set size of a process in MB, from /proc/<pid>/status (Linux); undefined elsewhere. */
export function rssMb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

let ticksPerSecond: number | undefined;

/**
 * CPU time (user + system) a process has used so far, in ms, from /proc/<pid>/stat (Linux); with
 * `mainThread`, its main thread's alone (/proc/<pid>/task/<pid>/stat), without V8's GC helpers
 * and other worker threads.
 */
export function cpuMs(pid: number | undefined, mainThread = false): number | undefined {
  if (pid === undefined) return undefined;
  try {
    if (ticksPerSecond === undefined) {
      try {
        ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
      } catch {
        ticksPerSecond = 100;
      }
    }
    const stat = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
    // Fields after "(comm)": state is the first, utime the 12th, stime the 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
  } catch {
    return undefined;
  }
}

/** Samples a process's RSS every `intervalMs` until stopped; returns the highest value seen. */
export function sampleRss(pid: number | undefined, intervalMs = 200): { stop(): number | undefined } {
  let max: number | undefined;
  const sample = () => {
    const value = rssMb(pid);
    if (value !== undefined && (max === undefined || value > max)) max = value;
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return max;
    },
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

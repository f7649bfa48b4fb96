// Child processes of the built CLI (dist/cli.js, built once by test/global-setup.ts): one-shot
// commands and `devdata serve` servers, with their output captured and always killed at the end.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { CONFIG_VARIABLES } from '../../src/config.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const CLI = join(ROOT, 'dist', 'cli.js');

export function cleanEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of CONFIG_VARIABLES) delete env[name];
  return { ...env, ...overrides };
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export const spawned = new Set<ChildProcess>();

function track(child: ChildProcess): ChildProcess {
  spawned.add(child);
  child.once('exit', () => spawned.delete(child));
  return child;
}

/** Runs a command to its end; `timeoutMs` (60 s: a CLI command starts Node.js and opens its database, slowly on a busy machine) only catches a hang. */
export function run(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = track(spawn(command, args, { cwd: options.cwd ?? ROOT, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr });
    });
  });
}

/** A `devdata serve` process: its output captured, its log lines parsed, its exit awaited. */
export class ServerProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private waiters: Array<() => void> = [];

  /** `command`: another way to start it (under `script` for a terminal); its standard input is then a pipe. */
  constructor(env: NodeJS.ProcessEnv, cwd: string, command?: { file: string; args: string[] }) {
    const [file, args] = command ? [command.file, command.args] : [process.execPath, [CLI, 'serve']];
    this.child = track(spawn(file, args, { cwd, env, stdio: [command ? 'pipe' : 'ignore', 'pipe', 'pipe'] }));
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdout += chunk;
      this.notify();
    });
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
      this.notify();
    });
    this.exited = new Promise((resolvePromise) => {
      this.child.once('exit', (code, signal) => {
        resolvePromise({ code, signal });
        this.notify();
      });
    });
  }

  private notify(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  get output(): string {
    return this.stdout + this.stderr;
  }

  /** Complete JSON log lines written to stdout so far. */
  logLines(): Array<Record<string, unknown>> {
    return this.stdout
      .split('\n')
      .filter((line) => line.trim().startsWith('{') && line.trim().endsWith('}'))
      .map((line) => {
        try {
          return JSON.parse(line) as Record<string, unknown>;
        } catch {
          return {};
        }
      });
  }

  /** Resolves with the first log line that matches, failing after `timeoutMs` (generous: servers start slowly on a loaded machine) or if the process exits first. */
  waitForLog(match: (line: Record<string, unknown>) => boolean, what: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    return this.waitFor(() => this.logLines().find(match), what, timeoutMs);
  }

  /** Resolves with the first match of `pattern` in standard output (lines for people rather than JSON), as waitForLog does. */
  waitForOutput(pattern: RegExp, what: string, timeoutMs = 30_000): Promise<RegExpExecArray> {
    return this.waitFor(() => pattern.exec(this.stdout) ?? undefined, what, timeoutMs);
  }

  private async waitFor<T>(probe: () => T | undefined, what: string, timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = probe();
      if (found !== undefined) return found;
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(`server exited before logging ${what}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`);
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`timed out waiting for ${what}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`);
      await new Promise<void>((resolvePromise) => {
        const timer = setTimeout(resolvePromise, Math.min(remaining, 200));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolvePromise();
        });
      });
    }
  }

  /** Waits for the "listening" line and returns the base URL with the port the server chose. */
  async listening(): Promise<string> {
    const line = await this.waitForLog(
      (entry) => typeof entry.port === 'number' || (typeof entry.msg === 'string' && /listening on/.test(entry.msg)),
      'the listening log line',
    );
    let port = typeof line.port === 'number' ? line.port : undefined;
    if (port === undefined) {
      const match = /:(\d+)\s*$/.exec(String(line.msg));
      port = match ? Number(match[1]) : undefined;
    }
    expect(port).toBeTypeOf('number');
    expect(port).toBeGreaterThan(0);
    return `http://127.0.0.1:${port}`;
  }

  /** Exit within `timeoutMs`, else fails (the afterAll hook kills it). Nothing in the server waits for a time when it stops: the bound only catches a hang. */
  async exitWithin(timeoutMs = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        this.exited,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`server did not exit within ${timeoutMs} ms\nstdout: ${this.stdout}\nstderr: ${this.stderr}`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Kills every child still running and waits for them to exit. */
export async function killAll(): Promise<void> {
  for (const child of spawned) child.kill('SIGKILL');
  await Promise.all(
    [...spawned].map(
      (child) => new Promise<void>((resolvePromise) => (child.exitCode !== null ? resolvePromise() : child.once('exit', () => resolvePromise()))),
    ),
  );
}

/** Whether util-linux `script` is here: it runs a command on a pseudo-terminal, so the command writes to a terminal. */
export const scriptAvailable: boolean = (() => {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

// What the client tests share: the error a call threw, Node scripts run as a user runs them, and
// restarting the server under a client (one database for two servers in turn, the second on the
// first one's port, so a client that follows the first reconnects to the second).
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'vitest';
import { listen } from '../../src/app.js';
import { TestApp } from '../support/app.js';
import { ROOT, spawned } from '../support/processes.js';
import { until } from '../support/wait.js';

/** What `call` threw, checked to be a `type` (the test fails when it resolved or threw something else). */
export async function thrown<E>(call: Promise<unknown>, type: abstract new (...args: never[]) => E): Promise<E> {
  const error = await call.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(type);
  return error as E;
}

/** `node <script> …args` from the repository root, its output collected as it comes; killed by killAll(). */
export class NodeScript {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;

  constructor(script: string, args: string[], env: NodeJS.ProcessEnv) {
    this.child = spawn(process.execPath, [join(ROOT, script), ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    spawned.add(this.child);
    this.child.once('exit', () => spawned.delete(this.child));
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (this.stdout += chunk));
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  lines(): string[] {
    return this.stdout.split('\n').filter((line) => line !== '');
  }

  json(): Array<Record<string, any>> {
    return this.lines().map((line) => JSON.parse(line) as Record<string, any>);
  }

  async waitFor(pattern: RegExp, what: string): Promise<RegExpExecArray> {
    await until(() => pattern.test(this.stdout), `${what}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`);
    return pattern.exec(this.stdout) as RegExpExecArray;
  }

  /** Ctrl-C, and the exit code. */
  async interrupt(): Promise<number | null> {
    this.child.kill('SIGINT');
    return this.exited;
  }
}

/**
 * Closes `current` (its streams end) and starts another server on the same database; `whileDown`
 * runs on it before it listens on the same port (e.g. writes events the client has not seen).
 */
export async function restart<T>(current: TestApp, databaseUrl: string, whileDown: (next: TestApp) => Promise<T>): Promise<{ next: TestApp; result: T }> {
  const port = Number(new URL(current.config.baseUrl).port);
  await current.close();
  const next = await TestApp.start({ env: { DATABASE_URL: databaseUrl } });
  try {
    const result = await whileDown(next);
    await listen(next.app, next.config, { port, host: '127.0.0.1' });
    return { next, result };
  } catch (error) {
    await next.close();
    throw error;
  }
}

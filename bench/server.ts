// The devdata server under test and the benchmark's other children that listen on a port.
import { execFile, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { allocatorEnv, checkAllocator } from './allocator.js';
import { forkTracked, nextMessage, sleep } from './children.js';
import { JsonClient } from './http-client.js';
import type { Options } from './options.js';
import { CONFIG_VARIABLES } from '../src/config.js';
import { isMessage, type Listening } from './protocol.js';
import { log } from './results.js';
import { seed, type Seeded } from './seed.js';

export const HERE = dirname(fileURLToPath(import.meta.url)); // .bench-build/bench
export const ROOT = resolve(HERE, '..', '..');
export const CLI = join(ROOT, 'dist', 'cli.js');
const WATCHDOG = pathToFileURL(join(HERE, 'watchdog.js')).href;
export const LOOPBACK = '127.0.0.1';

export interface Server {
  child: ChildProcess;
  origin: string;
  logPath: string;
}

export function serviceEnv(options: Options, databaseUrl: string, port: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // Every variable the service reads is removed from the inherited environment, so the run decides.
  for (const name of CONFIG_VARIABLES) delete env[name];
  return {
    ...env,
    PORT: String(port),
    HOST: LOOPBACK,
    DATABASE_URL: databaseUrl,
    RATE_LIMIT_PER_MINUTE: '1000000000',
    RATE_LIMIT_ANON_PER_MINUTE: '1000000000',
    STREAM_LIMIT_PER_ACCOUNT: '100000',
    // The webhook row's receiver listens on loopback; a failed attempt is retried a second later.
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '0,1,1,1,1',
    LOG_LEVEL: options.logLevel,
    // Any free port on loopback: the metrics' own listener, scraped by nobody during the run.
    ...(options.metrics ? { METRICS_PORT: '0' } : {}),
    ...allocatorEnv(options.allocator),
  };
}

export function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(process.execPath, [CLI, ...args], { env, cwd: ROOT, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`devdata ${args.join(' ')} failed: ${error.message}\n${stderr}`));
      else resolvePromise(stdout);
    });
  });
}

/** A free loopback port, for log levels that do not print the one PORT=0 chose. */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, LOOPBACK, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePromise(port));
    });
  });
}

export function tail(path: string, lines = 20): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export async function startServer(options: Options, env: NodeJS.ProcessEnv, logPath: string, profileDir: string, knownPort: number): Promise<Server> {
  const fd = openSync(logPath, 'a');
  const execArgv = ['--import', WATCHDOG];
  if (options.profile) execArgv.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`);
  const child = forkTracked(CLI, ['serve'], { cwd: ROOT, env, execArgv, stdio: ['ignore', fd, fd, 'ipc'] });
  closeSync(fd);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the server exited at start:\n${tail(logPath)}`);
    if (knownPort > 0) {
      const client = new JsonClient(`http://${LOOPBACK}:${knownPort}`);
      const up = await client.send('GET', '/api/v1/health', undefined, 1000).then(
        () => true,
        () => false,
      );
      client.close();
      if (up) return started(child, `http://${LOOPBACK}:${knownPort}`, logPath, options);
    } else {
      for (const line of readFileSync(logPath, 'utf8').split('\n')) {
        if (!line.includes('"port"')) continue;
        try {
          const entry = JSON.parse(line) as { port?: unknown };
          if (typeof entry.port === 'number' && entry.port > 0) return started(child, `http://${LOOPBACK}:${entry.port}`, logPath, options);
        } catch {
          // a partial line: read it again next time
        }
      }
    }
    await sleep(50);
  }
  throw new Error(`the server did not start listening within 30 s:\n${tail(logPath)}`);
}

/** The server listening, on the allocator asked for. */
function started(child: ChildProcess, origin: string, logPath: string, options: Options): Server {
  checkAllocator(child.pid as number, options.allocator);
  return { child, origin, logPath };
}

/** A child of ours that reports `{type:'listening', port}` over IPC. */
export async function forkListening(script: string, env: NodeJS.ProcessEnv = process.env): Promise<{ child: ChildProcess; origin: string }> {
  const child = forkTracked(join(HERE, script), [], { cwd: ROOT, env, execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { port } = await nextMessage(child, isMessage<Listening>('listening'), 20_000, script);
  return { child, origin: `http://${LOOPBACK}:${port}` };
}

export interface Launched {
  server: Server;
  auth: Record<string, string>;
  client: JsonClient;
  seeded: Seeded;
}

/** A devdata server on `databaseUrl` with an account made by the operator CLI, seeded; `settings` added to its environment (e.g. HISTORY=off). */
export async function launchDevdata(
  options: Options,
  databaseUrl: string,
  workDir: string,
  profileDir: string,
  name: string,
  settings: Record<string, string> = {},
): Promise<Launched> {
  const logsPort = ['info', 'debug', 'trace'].includes(options.logLevel);
  const port = logsPort ? 0 : await freePort();
  const env = { ...serviceEnv(options, databaseUrl, port), ...settings };
  const created = JSON.parse(await runCli(['accounts', 'create', '--name', 'Bench', '--json'], env)) as { account: { id: string }; apiKey: { key: string } };
  const auth = { authorization: `Bearer ${created.apiKey.key}` };
  const server = await startServer(options, env, join(workDir, `server-${name.toLowerCase()}.log`), profileDir, port);
  log(`devdata on ${name} listening on ${server.origin} (pid ${server.child.pid})`);
  const client = new JsonClient(server.origin, auth, 16);
  const seeded = await seed(client, options);
  log(`seeded ${seeded.resourceIds.length} resources and ${seeded.newestEventId} events on ${name}`);
  return { server, auth, client, seeded };
}

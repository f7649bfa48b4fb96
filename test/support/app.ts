// The test harness: the real app on a fresh database, requests through inject() or a real
// socket, accounts provisioned the way the operator CLI does it, and every response checked
// against the app's own OpenAPI document when the file's tests finish.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp, listen } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { ManualClock, type Clock } from '../../src/platform/clock.js';
import type { Scope } from '../../src/platform/scopes.js';
import { createAccountWithKey } from '../../src/operator.js';
import { ContractChecker, type RecordedResponse } from './contract.js';

export interface TestAppOptions {
  /** Environment overrides, as an operator would set them. */
  env?: Record<string, string>;
  clock?: Clock;
}

export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json: any;
}

export interface RequestOptions {
  method?: string;
  url: string;
  /** Sent as `Authorization: Bearer <key>`. */
  key?: string;
  headers?: Record<string, string>;
  /** A value sent as JSON (with its content type), or a raw string / Buffer sent as is. */
  body?: unknown;
  remoteAddress?: string;
}

export interface TestAccount {
  accountId: string;
  keyId: string;
  key: string;
}

/**
 * The database of one test app: in-memory SQLite, or with TEST_DATABASE_URL=postgres://… a fresh
 * schema of that database (dropped on close), so test files run side by side without sharing rows.
 */
export async function testDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base?.startsWith('postgres')) return { url: base ?? 'sqlite::memory:', drop: async () => {} };
  const schema = `test_${randomBytes(8).toString('hex')}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`create schema ${schema}`);
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { url: url.toString(), drop: () => admin(`drop schema ${schema} cascade`) };
}

/** Whether this run's tests use PostgreSQL (TEST_DATABASE_URL). */
export const ON_POSTGRES = /^postgres(ql)?:\/\//.test(process.env.TEST_DATABASE_URL ?? '');

/** One database several apps open (as several processes would): a fresh PostgreSQL schema, or a SQLite file. */
export async function sharedDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  if (ON_POSTGRES) return testDatabase();
  const directory = await mkdtemp(join(tmpdir(), 'devdata-shared-'));
  return { url: `sqlite:${join(directory, 'shared.db')}`, drop: () => rm(directory, { recursive: true, force: true }) };
}

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    DATABASE_URL: process.env.TEST_DATABASE_URL ?? 'sqlite::memory:',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_MINUTE: '100000',
    RATE_LIMIT_ANON_PER_MINUTE: '100000',
    ...env,
  });
}

let accountCounter = 0;

export class TestApp {
  readonly responses: RecordedResponse[] = [];

  private constructor(
    readonly app: FastifyInstance,
    readonly config: Config,
    private readonly dropDatabase: () => Promise<void>,
  ) {}

  static async start(options: TestAppOptions = {}): Promise<TestApp> {
    const database = options.env?.DATABASE_URL ? { url: options.env.DATABASE_URL, drop: async () => {} } : await testDatabase();
    const config = testConfig({ ...options.env, DATABASE_URL: database.url });
    const app = await buildApp(config, { clock: options.clock, logger: false });
    const testApp = new TestApp(app, config, database.drop);
    app.addHook('onSend', async (request, reply, payload) => {
      // Routes hidden from the document (the console's files) are not part of the API's contract.
      if ((request.routeOptions.schema as { hide?: boolean } | undefined)?.hide) return payload;
      testApp.responses.push({
        method: request.method,
        route: request.is404 ? undefined : request.routeOptions.url,
        status: reply.statusCode,
        contentType: reply.getHeader('content-type') as string | undefined,
        body: typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString() : '',
      });
      return payload;
    });
    await app.ready();
    return testApp;
  }

  get context() {
    return this.app.context;
  }

  /** Set by `listenForRequests`: `request` goes over a real socket to this base URL instead of inject(). */
  private socketBase: string | undefined;

  /** Listens, and sends every later `request` over a real socket (fetch) rather than inject(). */
  async listenForRequests(): Promise<string> {
    this.socketBase = await this.listen();
    return this.socketBase;
  }

  async request(options: RequestOptions): Promise<TestResponse> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
    let payload: string | Buffer | undefined;
    if (typeof options.body === 'string' || Buffer.isBuffer(options.body)) payload = options.body;
    else if (options.body !== undefined) {
      payload = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    if (this.socketBase !== undefined) return this.fetched(options, headers, payload);
    const response = await this.app.inject({
      method: (options.method ?? 'GET') as 'GET',
      url: options.url,
      headers,
      payload,
      remoteAddress: options.remoteAddress,
    });
    let json: unknown;
    try {
      json = response.body === '' ? undefined : JSON.parse(response.body);
    } catch {
      json = undefined;
    }
    return { status: response.statusCode, headers: response.headers as TestResponse['headers'], body: response.body, json };
  }

  private async fetched(options: RequestOptions, headers: Record<string, string>, payload: string | Buffer | undefined): Promise<TestResponse> {
    const response = await fetch(new URL(options.url, this.socketBase), { method: options.method ?? 'GET', headers, body: payload, redirect: 'manual' });
    const body = await response.text();
    let json: unknown;
    try {
      json = body === '' ? undefined : JSON.parse(body);
    } catch {
      json = undefined;
    }
    const responseHeaders: TestResponse['headers'] = {};
    response.headers.forEach((value, name) => {
      responseHeaders[name] = value;
    });
    return { status: response.status, headers: responseHeaders, body, json };
  }

  /** A new account and a key holding `scopes` (every scope by default). */
  async account(scopes?: Scope[], options: { expiresInDays?: number } = {}): Promise<TestAccount> {
    accountCounter++;
    const { account, apiKey } = await createAccountWithKey(this.context, {
      name: `Test account ${accountCounter}`,
      scopes,
      expiresInDays: options.expiresInDays,
    });
    return { accountId: account.id, keyId: apiKey.id, key: apiKey.key };
  }

  /** Listens on a free loopback port and returns the base URL. */
  async listen(): Promise<string> {
    await listen(this.app, this.config, { port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(this.app.server.address() as AddressInfo).port}`;
    // Clients call the address they were given; the issuer and OpenAPI servers name the same one.
    if (!this.config.baseUrlExplicit) this.config.baseUrl = base;
    return base;
  }

  /** Closes the app, then fails if any response did not match the OpenAPI document. */
  async close(): Promise<void> {
    const document = this.app.swagger() as ConstructorParameters<typeof ContractChecker>[0];
    await this.app.close();
    await this.dropDatabase();
    const checker = new ContractChecker(document);
    const problems = this.responses.flatMap((response) => checker.check(response));
    if (problems.length > 0) throw new Error(`responses that do not match /openapi.json:\n${[...new Set(problems)].join('\n')}`);
  }
}

/** One app for the whole test file: `const app = useTestApp(); … app().request(…)`. */
export function useTestApp(options: TestAppOptions = {}): () => TestApp {
  let testApp: TestApp | undefined;
  beforeAll(async () => {
    testApp = await TestApp.start(options);
  });
  afterAll(async () => {
    await testApp?.close();
  });
  return () => {
    if (!testApp) throw new Error('the test app is not started yet');
    return testApp;
  };
}

export { ManualClock };

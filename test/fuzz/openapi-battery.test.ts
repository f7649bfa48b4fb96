// A property-based battery generated from the service's own /openapi.json: for every operation,
// requests built from its schemas and the same requests broken (wrong types, missing and extra
// fields, huge and deeply nested values, broken encodings, hostile headers and query strings),
// sent over a plain socket to the real server. Whatever is sent:
//   - an answer arrives (never a reset connection) and it is never a 5xx;
//   - every 4xx has the decided error body (RFC 6749's on the OAuth endpoints) under 16 KB;
//   - a refused request changes nothing stored;
//   - every answer matches the document (checked for all of them when the app closes).
// npm test runs a fixed seed and a bounded count; `npm run fuzz` a random seed and many more runs,
// and prints the seed (FUZZ_SEED=… repeats a run).
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, TestApp, type TestAccount } from '../support/app.js';
import { storageFingerprint } from '../support/fingerprint.js';
import { rawRequest } from '../support/raw-http.js';
import {
  mutatedRequest,
  mutations,
  operationsOf,
  resolverOf,
  servedDocument,
  toRawRequest,
  validRequest,
  type Operation,
  type RequestParts,
} from './requests.js';
import type { SchemaContext } from './schema-arbitrary.js';
import { ERROR_CODES as DOMAIN_ERROR_CODES } from '../../src/domain-errors.js';
import { STATUS_BY_CODE } from '../../src/platform/errors.js';

const LONG_RUN = process.env.FUZZ === '1';
const SEED = Number(process.env.FUZZ_SEED ?? (LONG_RUN ? Date.now() % 2 ** 31 : 20261124));
// Each kind of breakage is tried on every operation (`perMutation` times), then any mix of them.
const RUNS = { valid: LONG_RUN ? 60 : 4, perMutation: LONG_RUN ? 10 : 3, mixed: LONG_RUN ? 200 : 4 };
const ERROR_BODY_LIMIT = 16 * 1024;
/** Statuses api-decisions §11 does not store under an Idempotency-Key. */
const UNSTORED_STATUSES = new Set([400, 401, 403, 413, 415, 429]);
/** The codes a client's mistake may get: every code of the closed set whose status is a 4xx. */
const ERROR_CODES = new Set(DOMAIN_ERROR_CODES.filter((code) => STATUS_BY_CODE[code] < 500));
/** Endpoints whose errors follow RFC 6749 §5.2 / the approval page rather than the API's error body. */
const OAUTH_ERROR_PATHS = new Set(['/oauth/token', '/oauth/revoke']);
const HTML_PATHS = new Set(['/oauth/authorize']);

// The operations are read from the document before the tests are declared, so each is a test of its own.
const DOCUMENT = await servedDocument();
const OPERATIONS: Operation[] = operationsOf(DOCUMENT);

if (LONG_RUN) console.log(`fuzz: seed ${SEED} (repeat with FUZZ_SEED=${SEED} npm run fuzz)`);

describe('every operation of /openapi.json, valid and broken requests', () => {
  let app: TestApp;
  let port: number;
  let account: TestAccount;
  let context: SchemaContext;
  let ids: Record<string, string[]>;
  let fingerprint: string;
  let storedAnswerCount = 0;
  const storedAnswers = async () =>
    Number((await sql<{ n: number }>`select count(*) as n from idempotent_requests`.execute(app.context.storage.db)).rows[0]!.n);

  beforeAll(async () => {
    // A clock that stands still and a retry schedule a day out: nothing runs in the background
    // between two requests, so what storage holds changes only through them.
    app = await TestApp.start({
      clock: new ManualClock(new Date('2026-11-24T12:00:00.000Z')),
      env: {
        WEBHOOK_RETRY_SCHEDULE: '86400,86400,86400,86400,86400',
        RETENTION_INTERVAL_MS: '86400000',
        PRUNE_INTERVAL_MS: '86400000',
        USAGE_FLUSH_INTERVAL_MS: '86400000',
      },
    });
    port = Number(new URL(await app.listen()).port);
    account = await app.account();
    const post = async (url: string, body: unknown) => {
      const response = await app.request({ method: 'POST', url, key: account.key, body });
      expect(response.status, response.body).toBe(201);
      return response.json;
    };
    const resources = [
      await post('/api/v1/resources', { name: 'Temperature', type: 'sensor', state: 21.5, tags: ['kitchen'] }),
      await post('/api/v1/resources', { name: 'Door', type: 'binary_sensor', state: false }),
      await post('/api/v1/resources', { name: 'Lamp', type: 'switch', state: true }),
      await post('/api/v1/resources', { name: 'Note', type: 'text', state: 'hello' }),
    ];
    const webhook = await post('/api/v1/webhooks', { name: 'Hook', url: 'https://8.8.8.8/hook', events: ['resource.created', 'custom.*'] });
    const publicApp = await post('/api/v1/apps', {
      name: 'Public',
      type: 'public',
      redirectUris: ['https://client.example.com/cb'],
      scopes: ['resources:read'],
    });
    const confidentialApp = await post('/api/v1/apps', {
      name: 'Server',
      type: 'confidential',
      redirectUris: ['http://127.0.0.1:9/cb'],
      scopes: ['events:read'],
    });
    const schedule = await post('/api/v1/schedules', {
      name: 'Nightly',
      cron: '0 3 * * *',
      action: { type: 'publish_event', eventType: 'custom.nightly', data: {} },
    });
    const spareKey = await post('/api/v1/keys', { name: 'Spare', scopes: ['resources:read'] });
    const installations = (await app.request({ url: '/api/v1/installations', key: account.key })).json.data as Array<{ id: string }>;
    ids = {
      resources: resources.map((resource: { id: string }) => resource.id),
      webhooks: [webhook.id],
      apps: [publicApp.id, confidentialApp.id],
      schedules: [schedule.id],
      // Never the key these requests are made with: revoking it would end the battery.
      keys: [spareKey.id],
      installations: installations.map((installation) => installation.id),
    };

    const document = (await app.request({ url: '/openapi.json' })).json;
    expect(operationsOf(document)).toEqual(OPERATIONS);
    const text = (...values: string[]) => fc.constantFrom(...values);
    context = {
      resolve: resolverOf(document),
      hints: {
        resourceId: text(...ids.resources!, 'res_missing'),
        eventType: text('custom.fuzz', 'custom.a.b:c', 'resource.created', 'custom.'),
        cron: text('*/5 * * * *', '0 3 * * 1-5', '61 * * * *', 'not a cron', '* * * * * *'),
        timezone: text('UTC', 'Europe/Berlin', 'Mars/Olympus'),
        type: text('custom.*', 'resource.created', 'sensor', 'switch', 'nope.*'),
        url: text('https://8.8.8.8/hook', 'https://10.0.0.1/hook', 'http://8.8.8.8/hook', 'https://8.8.8.8:8443/x', 'https://user:pw@8.8.8.8/'),
        client_id: text(publicApp.clientId, confidentialApp.clientId, 'unknown_client'),
        redirect_uri: text('https://client.example.com/cb', 'http://127.0.0.1:9/cb', 'https://evil.example/cb'),
        grant_type: text('authorization_code', 'refresh_token', 'client_credentials', 'password'),
        response_type: text('code', 'token'),
        code_challenge_method: text('S256', 'plain'),
        code_challenge: text('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', 'short'),
        state: text('state-12345678', 'x'),
        api_key: text(account.key, 'ddk_wrong'),
        token: text('ddr_unknown', 'dda_unknown', account.key),
        'if-match': text('"1"', 'W/"1"', '1', '"99"', '*'),
        'if-none-match': text('"1"', '*', 'W/"2"'),
        'last-event-id': text('0', '1', '999999', 'abc'),
        after: fc.integer({ min: -1, max: 50 }),
        // A few keys shared by every operation: some requests repeat one (a replay or 422
        // idempotency_key_reused), most use a fresh one.
        'idempotency-key': fc.oneof({ arbitrary: text('fuzz-key-1', 'fuzz-key-2'), weight: 1 }, { arbitrary: fc.uuid(), weight: 4 }),
      },
    };
    fingerprint = await storageFingerprint(app.context);
    storedAnswerCount = await storedAnswers();
  }, 60_000);

  afterAll(async () => {
    // Closing checks every recorded answer against the document.
    await app?.close();
  });

  const pathValues = (operation: Operation) => (name: string) => {
    if (name !== 'id') return fc.constantFrom('dlv_missing', 'x');
    const collection = operation.path.split('/')[3] ?? '';
    return fc.oneof(
      { arbitrary: fc.constantFrom(...(ids[collection] ?? ['x'])), weight: 4 },
      { arbitrary: fc.constantFrom('missing', `${collection.slice(0, 3)}_missing`), weight: 1 },
    );
  };

  async function expectProperties(operation: Operation, parts: RequestParts): Promise<void> {
    const label = `${operation.method} ${operation.path} [${parts.mutations.join(', ') || 'valid'}]`;
    const outcome = await rawRequest(port, toRawRequest(operation, parts));
    if (outcome.kind === 'reset') throw new Error(`${label}: ${outcome.error}`);
    const { status, headers, body } = outcome.response;
    expect(status, `${label}: ${body.toString().slice(0, 300)}`).toBeLessThan(500);
    // A HEAD answer has no body to check.
    const json = headers['content-type']?.startsWith('application/json') && parts.method !== 'HEAD' ? body.toString() : undefined;
    if (status >= 400 && json !== undefined) {
      expect(body.length, label).toBeLessThan(ERROR_BODY_LIMIT);
      const parsed = JSON.parse(json);
      if (OAUTH_ERROR_PATHS.has(operation.path) && typeof parsed.error === 'string') {
        expect(parsed, label).toEqual({ error: expect.any(String), error_description: expect.any(String) });
      } else {
        expect(Object.keys(parsed), label).toEqual(['error']);
        expect(ERROR_CODES, `${label}: ${json}`).toContain(parsed.error.code);
        expect(parsed.error, label).toMatchObject({ message: expect.any(String), requestId: headers['x-request-id'] });
      }
    } else if (status >= 400 && !HTML_PATHS.has(operation.path) && parts.method !== 'HEAD') {
      throw new Error(`${label}: ${status} without a JSON error body (${headers['content-type']})`);
    }
    const after = await storageFingerprint(app.context);
    if (status >= 400) expect(after, `${label}: a refused request changed what is stored`).toBe(fingerprint);
    fingerprint = after;
    // A refusal a corrected retry may fix (§11: 400, 401, 403, 413, 415, 429) keeps no answer either.
    const answers = await storedAnswers();
    if (UNSTORED_STATUSES.has(status)) expect(answers, `${label}: a ${status} was stored for replay`).toBe(storedAnswerCount);
    storedAnswerCount = answers;
  }

  /** Runs the property; a failure names the seed, the request's changes and what went wrong, briefly. */
  async function check(operation: Operation, requests: fc.Arbitrary<RequestParts>, seed: number, numRuns: number): Promise<void> {
    const details = await fc.check(
      fc.asyncProperty(requests, (parts) => expectProperties(operation, parts)),
      { seed, numRuns, endOnFailure: true },
    );
    if (!details.failed) return;
    const [parts] = details.counterexample ?? [];
    const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    throw new Error(
      `${operation.method} ${operation.path} failed (seed ${details.seed}, path ${details.counterexamplePath}; ` +
        `repeat with FUZZ_SEED=${SEED}): changes [${parts?.mutations.join(', ') || 'none'}]\n${error.slice(0, 2_000)}`,
    );
  }

  for (const [index, operation] of OPERATIONS.entries()) {
    it(`${operation.method} ${operation.path}`, async () => {
      const valid = validRequest(operation, context, pathValues(operation), account.key);
      await check(operation, valid, SEED + index, RUNS.valid);
      for (let kind = 0; kind < mutations(context).length; kind++) {
        await check(operation, mutatedRequest(valid, operation, context, kind), SEED + index * 100 + kind, RUNS.perMutation);
      }
      await check(operation, mutatedRequest(valid, operation, context), SEED + index + 1000, RUNS.mixed);
    });
  }
});

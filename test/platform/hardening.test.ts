// Classes of hostile input, each answered by a small 4xx that writes nothing, through the real
// server on a socket: JSON nested past the limit, broken HTTP Basic encodings on the OAuth
// endpoints, bodies built to multiply their validation errors, and what credentialed responses
// and OPTIONS requests carry (docs/decisions.md, "HTTP contract").
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ERROR_DETAILS, MAX_JSON_DEPTH } from '../../src/platform/request-limits.js';
import { TestApp, type TestAccount } from '../support/app.js';
import { storageFingerprint } from '../support/fingerprint.js';
import { rawRequest, type RawRequest } from '../support/raw-http.js';
import { registerApp } from '../oauth/support.js';

const ERROR_BODY_LIMIT = 16 * 1024;

let app: TestApp;
let base: string;
let account: TestAccount;
let resourceId: string;
let scheduleId: string;

beforeAll(async () => {
  app = await TestApp.start({ env: { USAGE_FLUSH_INTERVAL_MS: '86400000' } });
  base = await app.listen();
  account = await app.account();
  resourceId = (await app.request({ method: 'POST', url: '/api/v1/resources', key: account.key, body: { name: 'Probe', type: 'sensor', state: 1 } })).json.id;
  scheduleId = (
    await app.request({
      method: 'POST',
      url: '/api/v1/schedules',
      key: account.key,
      body: { name: 'Nightly', cron: '0 3 * * *', action: { type: 'publish_event', eventType: 'custom.nightly', data: {} } },
    })
  ).json.id;
});

afterAll(async () => {
  await app?.close();
});

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

async function send(method: string, path: string, body: string | undefined, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${account.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body,
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

const ERROR_CODES: Record<number, string> = { 400: 'invalid_request', 413: 'payload_too_large' };

/** A 400 invalid_request (or one of `statuses`) in the decided shape, small, and nothing stored changed. */
async function expectRefusedUnwritten(request: () => Promise<Answer>, statuses = [400]): Promise<Answer> {
  const before = await storageFingerprint(app.context);
  const answer = await request();
  expect(statuses, answer.text.slice(0, 300)).toContain(answer.status);
  expect(answer.json.error).toMatchObject({ code: ERROR_CODES[answer.status], message: expect.any(String), requestId: answer.headers.get('x-request-id') });
  expect(Buffer.byteLength(answer.text)).toBeLessThan(ERROR_BODY_LIMIT);
  expect(await storageFingerprint(app.context)).toBe(before);
  return answer;
}

/** `{"k":{"k":…{"k":leaf}…}}`: the given depth counted from the outermost object as 1. */
function nestedObject(depth: number, leaf = '1'): string {
  return `${'{"k":'.repeat(depth - 1)}{"k":${leaf}}${'}'.repeat(depth - 1)}`;
}

/** Alternating arrays and objects: `[{"k":[{"k":…}]}]`. */
function nestedMixed(depth: number): string {
  let text = '1';
  for (let level = depth; level >= 1; level--) text = level % 2 === 0 ? `{"k":${text}}` : `[${text}]`;
  return text;
}

/** Each JSON body of the API with `inner` placed where any JSON value is allowed, at depth 2 or 3. */
function bodiesWith(inner: string): Array<{ method: string; path: string; body: string; depthOfInner: number }> {
  return [
    { method: 'POST', path: '/api/v1/resources', body: `{"name":"n","type":"sensor","state":1,"attributes":{"x":${inner}}}`, depthOfInner: 3 },
    { method: 'PATCH', path: `/api/v1/resources/${resourceId}`, body: `{"attributes":{"x":${inner}}}`, depthOfInner: 3 },
    { method: 'POST', path: '/api/v1/events', body: `{"type":"custom.deep","data":{"x":${inner}}}`, depthOfInner: 3 },
    {
      method: 'POST',
      path: '/api/v1/schedules',
      body: `{"name":"s","cron":"0 3 * * *","action":{"type":"publish_event","eventType":"custom.x","data":{"x":${inner}}}}`,
      depthOfInner: 4,
    },
    {
      method: 'PATCH',
      path: `/api/v1/schedules/${scheduleId}`,
      body: `{"action":{"type":"publish_event","eventType":"custom.x","data":${inner}}}`,
      depthOfInner: 3,
    },
    { method: 'POST', path: '/api/v1/echo', body: `{"message":${inner}}`, depthOfInner: 2 },
    { method: 'POST', path: '/api/v1/keys', body: `{"name":${inner}}`, depthOfInner: 2 },
  ];
}

describe('JSON nesting', () => {
  it(`refuses every JSON body nested past ${MAX_JSON_DEPTH} levels, up to 100,000 deep, with a 400 that writes nothing`, async () => {
    for (const depth of [MAX_JSON_DEPTH, MAX_JSON_DEPTH + 10, 1_000, 10_000, 100_000]) {
      for (const shape of [nestedObject, nestedMixed]) {
        for (const { method, path, body } of bodiesWith(shape(depth))) {
          // Past a route's own body limit (16 KiB for echo, 64 KiB for events) 413 comes first.
          const statuses = Buffer.byteLength(body) <= 16 * 1024 ? [400] : [400, 413];
          const answer = await expectRefusedUnwritten(() => send(method, path, body), statuses);
          if (answer.status === 400) expect(answer.json.error.message).toContain(`${MAX_JSON_DEPTH} levels`);
        }
      }
    }
  });

  it(`accepts JSON exactly ${MAX_JSON_DEPTH} levels deep, and brackets inside strings are text`, async () => {
    const atLimit = nestedObject(MAX_JSON_DEPTH - 2);
    const created = await send('POST', '/api/v1/resources', `{"name":"n","type":"sensor","state":1,"attributes":${atLimit}}`);
    expect(created.status, created.text).toBe(201);
    const bracketsInText = `"${'[{'.repeat(5_000)}\\"${'}]'.repeat(5_000)}"`;
    const published = await send('POST', '/api/v1/events', `{"type":"custom.text","data":{"x":${bracketsInText}}}`);
    expect(published.status, published.text.slice(0, 200)).toBe(201);
  });

  it('decides by depth alone, whatever the shape: generated bodies just under and just over the limit', async () => {
    // A value of `depth` levels from random arrays, objects and scalars.
    const nested = (depth: number) =>
      fc.array(fc.boolean(), { minLength: depth, maxLength: depth }).chain((arrayAt) =>
        fc.tuple(fc.constant(arrayAt), fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constant(null))).map(([levels, leaf]) => {
          let text = JSON.stringify(leaf);
          for (const isArray of levels.reverse()) text = isArray ? `[${text},"]"]` : `{"a":"{","b":${text}}`;
          return text;
        }),
      );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 0, max: 6 }), async (over, seedDepth) => {
        const { method, path, body, depthOfInner } = bodiesWith('null')[0]!;
        const room = MAX_JSON_DEPTH - depthOfInner + 1;
        const under = fc.sample(nested(room - seedDepth), { numRuns: 1, seed: seedDepth })[0]!;
        const tooDeep = fc.sample(nested(room + over), { numRuns: 1, seed: over })[0]!;
        const accepted = await send(method, path, body.replace('null', under));
        expect(accepted.status, accepted.text).toBe(201);
        await expectRefusedUnwritten(() => send(method, path, body.replace('null', tooDeep)));
      }),
      { seed: 42, numRuns: 12 },
    );
  });
});

describe('validation errors stay small', () => {
  const wrongItems = (count: number) => `[${new Array(count).fill('1').join(',')}]`;

  it('answers 200,000 wrong tags, scopes or redirect URIs with a small error, writing nothing', async () => {
    const cases = [
      { method: 'POST', path: '/api/v1/resources', body: `{"name":"n","type":"sensor","state":1,"tags":${wrongItems(200_000)}}` },
      { method: 'PATCH', path: `/api/v1/resources/${resourceId}`, body: `{"tags":${wrongItems(200_000)}}` },
      { method: 'POST', path: '/api/v1/keys', body: `{"name":"k","scopes":${wrongItems(200_000)}}` },
      { method: 'POST', path: '/api/v1/apps', body: `{"name":"a","type":"public","redirectUris":${wrongItems(200_000)},"scopes":[]}` },
      { method: 'POST', path: '/api/v1/webhooks', body: `{"name":"w","url":"https://example.com/h","events":${wrongItems(200_000)}}` },
    ];
    for (const { method, path, body } of cases) {
      const answer = await expectRefusedUnwritten(() => send(method, path, body));
      expect(answer.json.error.details.length).toBeGreaterThan(0);
      expect(answer.json.error.details.length).toBeLessThanOrEqual(MAX_ERROR_DETAILS);
    }
  });

  it('lists at most the first few failures of a small body full of them, each failing field of an ordinary one', async () => {
    const many = await expectRefusedUnwritten(() => send('POST', '/api/v1/resources', `{"name":"n","type":"sensor","state":1,"tags":${wrongItems(4_000)}}`));
    expect(many.json.error.details).toHaveLength(MAX_ERROR_DETAILS);
    const several = await expectRefusedUnwritten(() => send('POST', '/api/v1/resources', '{"name":5,"type":"lamp","state":1,"tags":"x"}'));
    expect([...new Set(several.json.error.details.map((detail: { path: string }) => detail.path))].sort()).toEqual(['/name', '/tags', '/type']);
  });

  it('cuts what an error quotes from the request: huge field names, paths and query strings', async () => {
    const longName = 'f'.repeat(500_000);
    await expectRefusedUnwritten(() => send('POST', '/api/v1/resources', `{"name":"n","type":"sensor","state":1,"${longName}":1}`));
    await expectRefusedUnwritten(() => send('POST', '/api/v1/events', `{"type":"custom.${'x'.repeat(60_000)}","data":{}}`));
    const notFound = await send('GET', `/api/v1/${'p'.repeat(12_000)}`, undefined);
    expect(notFound.status).toBe(404);
    expect(Buffer.byteLength(notFound.text)).toBeLessThan(ERROR_BODY_LIMIT);
    const badQuery = await send('GET', `/api/v1/resources?type=${'t'.repeat(12_000)}`, undefined);
    expect(badQuery.status).toBe(400);
    expect(Buffer.byteLength(badQuery.text)).toBeLessThan(ERROR_BODY_LIMIT);
  });
});

describe('HTTP Basic client authentication with broken encodings', () => {
  it('answers 401 invalid_client on the token and revocation endpoints, whatever the encoding', async () => {
    const registered = await registerApp(app, account.key, { type: 'confidential' });
    const broken = ['%zz', '%E0%A4%A', '%', 'abc%', '%%', '%C0%AF', '%u0041', '%FF%FE'];
    const headers = (clientId: string, secret: string) => ({
      authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    });
    for (const encoding of broken) {
      for (const [clientId, secret] of [
        [encoding, 'secret'],
        [registered.clientId, encoding],
        [encoding, encoding],
      ] as const) {
        for (const [path, body] of [
          ['/oauth/token', 'grant_type=client_credentials'],
          ['/oauth/revoke', 'token=ddr_x'],
        ] as const) {
          const before = await storageFingerprint(app.context);
          const response = await fetch(`${base}${path}`, { method: 'POST', headers: headers(clientId, secret), body });
          expect({ path, clientId, status: response.status, body: await response.json() }).toEqual({
            path,
            clientId,
            status: 401,
            body: { error: 'invalid_client', error_description: expect.any(String) },
          });
          expect(response.headers.get('www-authenticate')).toMatch(/^Basic /);
          expect(response.headers.get('cache-control')).toBe('no-store');
          expect(await storageFingerprint(app.context)).toBe(before);
        }
      }
    }
  });
});

describe('caching', () => {
  it('marks every response to a credentialed request no-store, success or error', async () => {
    const created = await send('POST', '/api/v1/keys', '{"name":"once","scopes":["resources:read"]}');
    expect(created.status).toBe(201);
    expect(created.json.key).toMatch(/^ddk_/);
    const credentialed: Array<[string, string, Record<string, string>]> = [
      ['GET', '/api/v1/resources', {}],
      ['GET', `/api/v1/resources/${resourceId}`, {}],
      ['GET', '/api/v1/resources/res_missing', {}],
      ['GET', '/api/v1/auth/me', { authorization: 'Bearer ddk_not_a_key' }],
      ['GET', '/api/v1/auth/me', { authorization: '', 'x-api-key': account.key }],
      ['GET', '/api/v1/installations', {}],
      ['GET', '/api/v1/developer/session', { authorization: '', cookie: '__Host-service_developer_session=dds_x' }],
      ['GET', '/health', {}],
    ];
    expect(created.headers.get('cache-control')).toBe('no-store');
    for (const [method, path, headers] of credentialed) {
      const answer = await send(method, path, undefined, headers);
      expect(`${method} ${path} → ${answer.status}: ${answer.headers.get('cache-control')}`).toBe(`${method} ${path} → ${answer.status}: no-store`);
    }
    const installations = await send('GET', '/api/v1/installations', undefined);
    const download = await send('GET', new URL(installations.json.data[0].downloadUrl, base).pathname, undefined);
    expect(download.status).toBe(200);
    expect(download.headers.get('cache-control')).toBe('no-store');
  });

  it('leaves public documents without a credential cacheable', async () => {
    for (const path of ['/openapi.json', '/health', '/.well-known/oauth-authorization-server']) {
      const response = await fetch(`${base}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).not.toBe('no-store');
    }
  });
});

describe('OPTIONS outside CORS', () => {
  it('answers 405 method_not_allowed on a path it has (404 on one it has not), without asking for a credential, where CORS does not apply', async () => {
    const answers: Array<[path: string, status: number, code: string]> = [
      ['/health', 405, 'method_not_allowed'],
      ['/oauth/authorize', 405, 'method_not_allowed'],
      ['/api/v1/developer/session', 405, 'method_not_allowed'],
      ['/nowhere', 404, 'not_found'],
      ['/api/v1/developer/signup', 405, 'method_not_allowed'],
    ];
    for (const [path, status, code] of answers) {
      for (const headers of [{}, { origin: 'https://docs.example', 'access-control-request-method': 'GET' }] as Array<Record<string, string>>) {
        const response = await fetch(`${base}${path}`, { method: 'OPTIONS', headers });
        const body = (await response.json()) as { error: { code: string } };
        expect({ path, status: response.status, code: body.error.code }).toEqual({ path, status, code });
        expect(response.headers.get('allow')?.includes('OPTIONS') ?? false).toBe(false);
        expect(response.headers.get('www-authenticate')).toBeNull();
        expect(response.headers.get('access-control-allow-origin')).toBeNull();
      }
    }
  });

  it('lets documentation tools on other origins load /openapi.json', async () => {
    const origin = 'https://docs.example';
    const preflight = await fetch(`${base}/openapi.json`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'GET' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    const document = await fetch(`${base}/openapi.json`, { headers: { origin } });
    expect(document.status).toBe(200);
    expect(document.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('requests the HTTP parser refuses', () => {
  it('answers each with the decided error body, a request id, and a closed connection', async () => {
    const port = Number(new URL(base).port);
    const cases: Array<{ label: string; request: RawRequest; status: number }> = [
      { label: 'headers over 16 KiB', request: { method: 'GET', target: '/api/v1', headers: [['x-padding', 'p'.repeat(20_000)]] }, status: 431 },
      { label: 'a control character in a header value', request: { method: 'GET', target: '/api/v1', headers: [['x-bad', 'a\u0001b']] }, status: 400 },
      { label: 'a space in a header name', request: { method: 'GET', target: '/api/v1', headers: [['x bad', 'v']] }, status: 400 },
      {
        label: 'Content-Length beside Transfer-Encoding',
        request: {
          method: 'POST',
          target: '/api/v1/echo',
          headers: [
            ['transfer-encoding', 'chunked'],
            ['content-length', '4'],
          ],
          body: Buffer.from('0\r\n\r\n'),
        },
        status: 400,
      },
      { label: 'a request line with a bare LF', request: { method: 'GET', target: '/api/v1 HTTP/1.1\nX:', headers: [] }, status: 400 },
    ];
    for (const { label, request, status } of cases) {
      const outcome = await rawRequest(port, request);
      expect(outcome.kind, label).toBe('response');
      if (outcome.kind !== 'response') continue;
      const { response } = outcome;
      expect({ label, status: response.status }).toEqual({ label, status });
      const body = JSON.parse(response.body.toString());
      expect(body).toEqual({ error: { code: 'invalid_request', message: expect.any(String), requestId: response.headers['x-request-id'] } });
    }
  });
});

describe('the NUL character', () => {
  it('is refused with 400 wherever text arrives, on either backend, writing nothing', async () => {
    const json = [
      { method: 'POST', path: '/api/v1/resources', body: '{"name":"a\\u0000b","type":"sensor","state":1}' },
      { method: 'POST', path: '/api/v1/resources', body: '{"name":"n","type":"text","state":"\\u0000"}' },
      { method: 'POST', path: '/api/v1/resources', body: '{"name":"n","type":"sensor","state":1,"tags":["a\\u0000"]}' },
      { method: 'POST', path: '/api/v1/resources', body: '{"name":"n","type":"sensor","state":1,"attributes":{"k\\u0000":1}}' },
      { method: 'POST', path: '/api/v1/events', body: '{"type":"custom.x","data":{"v":"\\u0000"}}' },
      { method: 'PATCH', path: `/api/v1/schedules/${scheduleId}`, body: '{"action":{"type":"set_state","resourceId":"res_\\u0000","state":1}}' },
    ];
    for (const { method, path, body } of json) {
      const answer = await expectRefusedUnwritten(() => send(method, path, body));
      expect(answer.json.error.message).toContain('NUL');
      expect(answer.json.error.details?.[0]?.message ?? '').toContain('NUL');
    }
    for (const path of [
      `/api/v1/resources/${resourceId}%00`,
      '/api/v1/resources?tag=%00',
      '/api/v1/webhooks/wh_%00/deliveries',
      '/api/v1/events?type=custom.%00',
    ]) {
      await expectRefusedUnwritten(() => send('GET', path, undefined));
    }
    // An escaped backslash before "u0000" is text, not a NUL.
    const literal = await send('POST', '/api/v1/events', '{"type":"custom.x","data":{"v":"\\\\u0000"}}');
    expect(literal.status, literal.text).toBe(201);
  });

  it('is refused on the OAuth endpoints in their own error shapes', async () => {
    const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };
    const token = await fetch(`${base}/oauth/token`, { method: 'POST', headers: formHeaders, body: 'grant_type=client_credentials&client_id=%00' });
    expect({ status: token.status, body: await token.json() }).toEqual({
      status: 400,
      body: { error: 'invalid_request', error_description: expect.any(String) },
    });
    const basic = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { ...formHeaders, authorization: `Basic ${Buffer.from('app%00:secret').toString('base64')}` },
      body: 'grant_type=client_credentials',
    });
    expect({ status: basic.status, body: await basic.json() }).toEqual({
      status: 401,
      body: { error: 'invalid_client', error_description: expect.any(String) },
    });
  });
});

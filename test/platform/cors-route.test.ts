// CORS is decided on the route a request reaches, not on how its path is spelt (docs/decisions.md:
// "HTTP contract"): the router decodes `%64` to `d`, so `/api/v1/%64eveloper/session` is the
// developer (cookie) route and must get no Access-Control-Allow-Origin, as the plain path does.
// Through a socket, so that the request target arrives exactly as written.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestApp } from '../support/app.js';
import { rawRequest, type RawResponse } from '../support/raw-http.js';

const ORIGIN = 'https://example.com';
/** The developer (cookie) routes, each with its method (src/areas/developer/routes.ts). */
const DEVELOPER_ROUTES = [
  ['POST', '/api/v1/developer/signup'],
  ['GET', '/api/v1/developer/session'],
  ['POST', '/api/v1/developer/logout'],
] as const;

let app: TestApp;
let port: number;

beforeAll(async () => {
  app = await TestApp.start();
  port = Number(new URL(await app.listen()).port);
});

afterAll(async () => {
  await app?.close();
});

async function send(method: string, target: string, preflightFor?: string): Promise<RawResponse> {
  const headers: Array<[string, string]> = [['Origin', ORIGIN]];
  if (preflightFor) headers.push(['Access-Control-Request-Method', preflightFor], ['Access-Control-Request-Headers', 'content-type']);
  // An empty JSON body, so that a POST reaches its route's validation rather than a 415.
  const body = method === 'POST' ? Buffer.from('{}') : undefined;
  if (body) headers.push(['Content-Type', 'application/json']);
  const outcome = await rawRequest(port, { method, target, headers, body });
  if (outcome.kind !== 'response') throw new Error(`${method} ${target}: ${outcome.error}`);
  return outcome.response;
}

const preflight = (target: string, method: string) => send('OPTIONS', target, method);

/** `path` with the characters at the chosen positions percent-encoded, hex digits in either case. */
function encodeAt(path: string, positions: boolean[], upper: boolean[]): string {
  return [...path]
    .map((char, index) => {
      if (index === 0 || !positions[index]) return char;
      const hex = char.charCodeAt(0).toString(16).padStart(2, '0');
      return `%${upper[index] ? hex.toUpperCase() : hex}`;
    })
    .join('');
}

describe('CORS on the matched route', () => {
  it('gives no allow-origin to a percent-encoded developer path, which reaches the developer route', async () => {
    const plain = await send('GET', '/api/v1/developer/session');
    const encoded = await send('GET', '/api/v1/%64eveloper/session');
    // The same route answers both: no session cookie, 401.
    expect(encoded.status).toBe(plain.status);
    expect(encoded.status).toBe(401);
    expect(plain.headers['access-control-allow-origin']).toBeUndefined();
    expect(encoded.headers['access-control-allow-origin']).toBeUndefined();
    // The developer route takes no OPTIONS (405); with its `/` encoded the path is no route at all (404).
    for (const [target, status] of [
      ['/api/v1/developer/session', 405],
      ['/api/v1/%64eveloper/session', 405],
      ['/api/v1/%64%65veloper%2Fsession', 404],
    ] as const) {
      const response = await preflight(target, 'GET');
      expect(response.status, target).toBe(status);
      expect(response.headers['access-control-allow-origin'], target).toBeUndefined();
    }
  });

  it('still allows any origin on the API (however spelt), the OAuth token endpoint and unknown API paths', async () => {
    for (const target of ['/api/v1/resources', '/api/v1/%72esources', '/api/v1/nowhere']) {
      const response = await send('GET', target);
      expect(response.status, target).toBe(target === '/api/v1/nowhere' ? 404 : 401);
      expect(response.headers['access-control-allow-origin'], target).toBe('*');
      const answered = await preflight(target, 'POST');
      expect(answered.status, target).toBe(204);
      expect(answered.headers['access-control-allow-origin'], target).toBe('*');
    }
    const token = await send('POST', '/oauth/token');
    expect(token.status).toBe(400);
    expect(token.headers['access-control-allow-origin']).toBe('*');
    expect((await preflight('/oauth/token', 'POST')).headers['access-control-allow-origin']).toBe('*');
  });

  it('answers a preflight whose path is not valid percent-encoding with 400, without allow-origin', async () => {
    const response = await preflight('/api/v1/%E0%A4%A/x', 'GET');
    expect(response.status).toBe(400);
    expect(response.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('gives no allow-origin to any generated spelling of a developer route, its preflight included', async () => {
    const flags = (length: number) => fc.array(fc.boolean(), { minLength: length, maxLength: length });
    const spelling = fc
      .constantFrom(...DEVELOPER_ROUTES)
      .chain(([method, path]) =>
        fc.tuple(flags(path.length), flags(path.length)).map(([positions, upper]) => ({ method, target: encodeAt(path, positions, upper) })),
      );
    await fc.assert(
      fc.asyncProperty(spelling, async ({ method, target }) => {
        const response = await send(method, target);
        expect(response.headers['access-control-allow-origin'], `${method} ${target}`).toBeUndefined();
        const answered = await preflight(target, method);
        expect(answered.headers['access-control-allow-origin'], `OPTIONS ${target}`).toBeUndefined();
      }),
      { numRuns: 150 },
    );
  });
});

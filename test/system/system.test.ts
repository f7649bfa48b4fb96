import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TestApp, useTestApp } from '../support/app.js';

const ALL_SCOPES = [
  'resources:read',
  'resources:write',
  'events:read',
  'events:write',
  'integrations:read',
  'webhooks:manage',
  'schedules:manage',
  'usage:read',
  'keys:manage',
  'apps:manage',
];

/**
 * The routes of a Fastify instance, from its `printRoutes({ commonPrefix: false })` tree, with
 * parameters written the OpenAPI way (`/keys/{id}`); the catch-all preflight route is left out.
 */
function appRoutes(tree: string): Array<{ path: string; methods: string[] }> {
  const routes: Array<{ path: string; methods: string[] }> = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const match = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    const path = (stack[depth - 1] ?? '') + match[2]!;
    stack[depth] = path;
    if (match[3] === undefined || path.includes('*')) continue;
    routes.push({ path: path.replace(/:([A-Za-z0-9_]+)/g, '{$1}'), methods: match[3].split(',').map((method) => method.trim()) });
  }
  return routes;
}

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('public system endpoints', () => {
  const app = useTestApp();

  it('GET /health answers ok with the contract headers, uncounted', async () => {
    const first = await app().request({ url: '/health' });
    const second = await app().request({ url: '/health' });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ status: 'ok' });
    expect(first.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
    expect(second.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
    expect(second.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
    expect(first.headers['ratelimit-limit']).toBeDefined();
    expect(second.headers['ratelimit-remaining']).toBe(first.headers['ratelimit-remaining']);
  });

  it('GET /api/v1 names the API', async () => {
    const response = await app().request({ url: '/api/v1' });
    expect(response.json).toEqual({ name: 'Developer Data Service API', version: '1.3.0' });
  });

  it('POST /api/v1/echo echoes', async () => {
    const response = await app().request({ method: 'POST', url: '/api/v1/echo', body: { message: 'hi' } });
    expect(response.status).toBe(200);
    expect(response.json.message).toBe('hi');
  });

  it('GET /api/v1/health is ready with exactly the readiness body', async () => {
    const response = await app().request({ url: '/api/v1/health' });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json).toStrictEqual({ status: 'ready', checks: { storage: { status: 'ok' } } });
    expect(response.headers['x-request-id']).toBeDefined();
  });

  it('GET /api/v1/status reports version, uptime, storage latency and workers', async () => {
    const before = Date.now();
    const response = await app().request({ url: '/api/v1/status' });
    expect(response.status).toBe(200);
    const body = response.json;
    expect(Object.keys(body).sort()).toEqual(['checks', 'ready', 'startedAt', 'status', 'uptimeSeconds', 'version', 'workers']);
    expect(body.status).toBe('ok');
    expect(body.ready).toBe(true);
    expect(body.version).toBe('1.3.0');
    expect(Number.isInteger(body.uptimeSeconds)).toBe(true);
    expect(body.uptimeSeconds).toBeGreaterThanOrEqual(0);
    expect(body.startedAt).toMatch(ISO_MS);
    expect(Date.parse(body.startedAt)).toBeLessThanOrEqual(before);
    expect(Object.keys(body.checks)).toEqual(['storage']);
    expect(Object.keys(body.checks.storage).sort()).toEqual(['latencyMs', 'status']);
    expect(body.checks.storage.status).toBe('ok');
    expect(typeof body.checks.storage.latencyMs).toBe('number');
    expect(Number.isFinite(body.checks.storage.latencyMs)).toBe(true);
    expect(body.checks.storage.latencyMs).toBeGreaterThanOrEqual(0);
    expect(body.workers).toBeTypeOf('object');
    expect(body.workers).not.toBeNull();
    expect(Array.isArray(body.workers)).toBe(false);
    for (const report of Object.values(body.workers)) {
      expect(report).toBeTypeOf('object');
      expect(report).not.toBeNull();
    }
  });

  it('GET /api/v1/status keeps startedAt fixed between calls', async () => {
    const first = await app().request({ url: '/api/v1/status' });
    const second = await app().request({ url: '/api/v1/status' });
    expect(second.json.startedAt).toBe(first.json.startedAt);
    expect(second.json.uptimeSeconds).toBeGreaterThanOrEqual(first.json.uptimeSeconds);
  });

  it('GET /api/v1/capabilities lists features, every scope, event types and limits', async () => {
    const response = await app().request({ url: '/api/v1/capabilities' });
    expect(response.status).toBe(200);
    const body = response.json;
    expect(Object.keys(body).sort()).toEqual(['eventTypes', 'features', 'limits', 'scopes']);
    expect(body.features).toBeTypeOf('object');
    expect(Array.isArray(body.features)).toBe(false);
    expect(Object.keys(body.features).length).toBeGreaterThan(0);
    for (const feature of Object.values(body.features)) expect(feature).toBeTypeOf('object');
    expect([...body.scopes].sort()).toEqual([...ALL_SCOPES].sort());
    expect(body.scopes).toHaveLength(ALL_SCOPES.length);
    expect(Array.isArray(body.eventTypes)).toBe(true);
    for (const type of body.eventTypes) expect(type).toBeTypeOf('string');
    expect(body.limits).toMatchObject({
      rateLimitPerMinute: app().config.rateLimitPerMinute,
      rateLimitAccountPerMinute: app().config.rateLimitAccountPerMinute,
      eventRetention: 10000,
      accessTokenTtlSeconds: 900,
    });
    expect(Number.isInteger(body.limits.rateLimitPerMinute)).toBe(true);
    // The per-account caps of api-decisions §10 (beyond them: 409 conflict).
    expect(body.limits).toMatchObject({ activeApiKeysPerAccount: 100, appsPerAccount: 50, schedulesPerAccount: 200, webhooksPerAccount: 20 });
  });

  it('GET /api/v1/capabilities reflects the configured limits', async () => {
    const custom = await TestApp.start({
      env: { RATE_LIMIT_PER_MINUTE: '1234', EVENT_RETENTION: '77', ACCESS_TOKEN_TTL_SECONDS: '3600' },
    });
    try {
      const response = await custom.request({ url: '/api/v1/capabilities' });
      expect(response.status).toBe(200);
      expect(response.json.limits).toMatchObject({ rateLimitPerMinute: 1234, eventRetention: 77, accessTokenTtlSeconds: 900 });
      // The account's allowance follows the credential's unless set: ten times it.
      expect(response.json.limits.rateLimitAccountPerMinute).toBe(12340);
    } finally {
      await custom.close();
    }
  });

  it('GET /api/v1/capabilities gives the account allowance as configured', async () => {
    const custom = await TestApp.start({ env: { RATE_LIMIT_PER_MINUTE: '100', RATE_LIMIT_ACCOUNT_PER_MINUTE: '250' } });
    try {
      const response = await custom.request({ url: '/api/v1/capabilities' });
      expect(response.json.limits).toMatchObject({ rateLimitPerMinute: 100, rateLimitAccountPerMinute: 250 });
    } finally {
      await custom.close();
    }
  });

  it('GET /openapi.json is an OpenAPI 3.1 document of every route, schema and security scheme', async () => {
    const response = await app().request({ url: '/openapi.json' });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const document = response.json;
    expect(typeof document.openapi).toBe('string');
    expect(document.openapi.startsWith('3.1')).toBe(true);
    expect(document.info.version).toBe('1.3.0');
    expect(document.info.title).toBe('Developer Data Service API');

    const operations: Record<string, string[]> = {
      '/health': ['get'],
      '/api/v1/health': ['get'],
      '/api/v1/status': ['get'],
      '/api/v1': ['get'],
      '/api/v1/capabilities': ['get'],
      '/openapi.json': ['get'],
      '/api/v1/echo': ['post'],
      '/api/v1/auth/me': ['get'],
      '/api/v1/keys': ['get', 'post'],
      '/api/v1/keys/{id}': ['delete'],
      '/api/v1/audit': ['get'],
      '/api/v1/usage': ['get'],
    };
    for (const [path, methods] of Object.entries(operations)) {
      expect(document.paths, `path ${path}`).toHaveProperty([path]);
      for (const method of methods) expect(document.paths[path], `${method.toUpperCase()} ${path}`).toHaveProperty([method]);
    }
    // Not only the routes above: every route the app really has (HEAD and the CORS preflight aside).
    const routes = appRoutes(app().app.printRoutes({ commonPrefix: false }));
    expect(routes.map((route) => route.path)).toEqual(expect.arrayContaining(Object.keys(operations)));
    for (const { path, methods } of routes) {
      for (const method of methods) {
        if (method === 'HEAD' || method === 'OPTIONS') continue;
        // The console's files are a web page served beside the API, not operations of it.
        if (path === '/console' || path.startsWith('/console/')) continue;
        expect(document.paths[path]?.[method.toLowerCase()], `${method} ${path} in /openapi.json`).toBeDefined();
      }
    }
    // Fastify's own parameter syntax never leaks into the document.
    for (const path of Object.keys(document.paths)) expect(path).not.toContain(':');

    expect(document.components.schemas).toHaveProperty(['Error']);

    const schemes = document.components.securitySchemes;
    expect(schemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(schemes.apiKeyHeader).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
    expect(schemes.oauth2.type).toBe('oauth2');
    const { authorizationCode, clientCredentials } = schemes.oauth2.flows;
    expect(authorizationCode).toBeDefined();
    expect(clientCredentials).toBeDefined();
    expect(authorizationCode.authorizationUrl).toMatch(/\/oauth\/authorize$/);
    expect(authorizationCode.tokenUrl).toMatch(/\/oauth\/token$/);
    expect(clientCredentials.tokenUrl).toMatch(/\/oauth\/token$/);
    // Every scope an OAuth token may hold; keys:manage and apps:manage never are (docs/decisions.md: "Applications and OAuth").
    const grantable = ALL_SCOPES.filter((scope) => scope !== 'keys:manage' && scope !== 'apps:manage');
    expect(Object.keys(authorizationCode.scopes).sort()).toEqual([...grantable].sort());
    expect(Object.keys(clientCredentials.scopes).sort()).toEqual([...grantable].sort());

    // Public routes need no credential; the others name the three ways to present one.
    expect(document.paths['/api/v1/health'].get.security).toEqual([]);
    expect(document.paths['/api/v1/echo'].post.security).toEqual([]);
    const meSecurity = document.paths['/api/v1/auth/me'].get.security.flatMap((entry: object) => Object.keys(entry));
    expect(meSecurity.sort()).toEqual(['apiKeyHeader', 'bearerAuth', 'oauth2']);
  });
});

describe('readiness when storage fails', () => {
  const dir = mkdtempSync(join(tmpdir(), 'devdata-readiness-'));
  const databaseUrl = process.env.TEST_DATABASE_URL ?? `sqlite:${join(dir, 'ready.db')}`;

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 on /api/v1/health and /api/v1/status without leaking infrastructure details', async () => {
    const failing = await TestApp.start({ env: { DATABASE_URL: databaseUrl } });
    let closed = false;
    try {
      const healthy = await failing.request({ url: '/api/v1/health' });
      expect(healthy.status).toBe(200);

      // Storage really goes away: the connection (pool) is destroyed under the running app.
      await failing.context.storage.db.destroy();

      const health = await failing.request({ url: '/api/v1/health' });
      expect(health.status).toBe(503);
      expect(health.json).toStrictEqual({ status: 'unavailable', checks: { storage: { status: 'error' } } });

      const status = await failing.request({ url: '/api/v1/status' });
      expect(status.status).toBe(503);
      expect(status.json.status).toBe('degraded');
      expect(status.json.ready).toBe(false);
      expect(status.json.version).toBe('1.3.0');
      expect(status.json.checks.storage.status).toBe('error');
      expect(typeof status.json.checks.storage.latencyMs).toBe('number');
      expect(Object.keys(status.json.checks.storage).sort()).toEqual(['latencyMs', 'status']);

      // The liveness route does not depend on storage.
      const live = await failing.request({ url: '/health' });
      expect(live.status).toBe(200);

      for (const response of [health, status]) {
        expect(response.body).not.toContain(dir);
        expect(response.body).not.toContain(databaseUrl);
        expect(response.body).not.toMatch(/sqlite|postgres|destroy|driver|connection|stack|message|error":/i);
        expect(response.body).not.toMatch(/(^|[\s"'])\/[\w.-]+\//); // no absolute file paths
      }

      // Closing an app whose storage is already gone must still work and still run the contract check
      // over every response above (including the 503s).
      closed = true;
      await failing.close();
    } finally {
      if (!closed) await failing.close().catch(() => undefined);
    }
  });
});

// What client generators need from /openapi.json (issue 16): an operationId per operation, optional
// query parameters where the server has a default, the response headers, a schema per event type;
// and every status an operation can answer (issue 37), with the headers that come with it.
import { describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '../../src/areas/developer/routes.js';
import { STATE_LENGTH } from '../../src/areas/oauth/authorization.js';
import { useTestApp } from '../support/app.js';

type Response = { $ref?: string; description?: string; headers?: Record<string, { $ref?: string }>; content?: Record<string, unknown> };
type Operation = {
  operationId?: string;
  summary?: string;
  parameters?: Array<{ in: string; name: string; required?: boolean; schema: { default?: unknown; minLength?: number; maxLength?: number } }>;
  security?: Array<Record<string, string[]>>;
  responses: Record<string, Response>;
};

describe('the OpenAPI document for generators', () => {
  const app = useTestApp();

  async function document() {
    const response = await app().request({ url: '/openapi.json' });
    expect(response.status).toBe(200);
    return response.json as { paths: Record<string, Record<string, Operation>>; components: Record<string, Record<string, any>> };
  }

  /** An operation's responses with the shared ones (components.responses) read in place. */
  function resolved(components: Record<string, Record<string, any>>, operation: Operation | undefined): Record<string, Response> {
    if (!operation) throw new Error('operation not documented');
    return Object.fromEntries(
      Object.entries(operation.responses).map(([status, response]) => [
        status,
        response.$ref ? components.responses?.[response.$ref.replace('#/components/responses/', '')] : response,
      ]),
    );
  }

  function operations(paths: Record<string, Record<string, Operation>>): Array<[string, Operation]> {
    return Object.entries(paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => [`${method.toUpperCase()} ${path}`, operation] as [string, Operation]),
    );
  }

  it('names every operation once', async () => {
    const all = operations((await document()).paths);
    const ids = all.map(([label, operation]) => {
      expect(operation.operationId, label).toMatch(/^[a-z][A-Za-z]+$/);
      return operation.operationId;
    });
    expect(new Set(ids).size).toBe(ids.length);
    expect(Object.fromEntries(all.map(([label, operation]) => [label, operation.operationId]))).toMatchObject({
      'GET /api/v1/resources': 'listResources',
      'PATCH /api/v1/resources/{id}': 'updateResource',
      'GET /api/v1/events': 'listEvents',
      'GET /api/v1/events/stream': 'streamEvents',
    });
  });

  it('makes query parameters with a default optional', async () => {
    const { paths } = await document();
    const list = paths['/api/v1/events']?.get?.parameters ?? [];
    expect(list.find((parameter) => parameter.name === 'after')).toMatchObject({ in: 'query', schema: { default: 0 } });
    for (const [label, operation] of operations(paths)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'query' && parameter.schema.default !== undefined) expect(parameter.required, `${label} ${parameter.name}`).not.toBe(true);
      }
    }
  });

  it('documents the response headers: request id and rate limit everywhere, no-store where a credential is sent, Retry-After on 429, ETag on resources', async () => {
    const { paths, components } = await document();
    expect(Object.keys(components.headers ?? {}).sort()).toEqual([
      'Accept-Ranges',
      'Cache-Control',
      'Content-Disposition',
      'Content-Range',
      'ETag',
      'Idempotent-Replayed',
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
      'Retry-After',
      'WWW-Authenticate',
      'X-Request-Id',
    ]);
    for (const [label, operation] of operations(paths)) {
      const responses = resolved(components, operation);
      const credentialed = (operation.security ?? []).some((requirement: object) => Object.keys(requirement).length > 0);
      for (const [status, response] of Object.entries(responses)) {
        // Fastify's answer while the server shuts down is sent before any hook: none of the API's headers.
        if (status === '503' && !response.headers) continue;
        for (const name of ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', ...(credentialed ? ['Cache-Control'] : [])]) {
          expect(response.headers?.[name], `${label} ${status} ${name}`).toEqual({ $ref: `#/components/headers/${name}` });
        }
      }
      if (!label.endsWith(' /health')) expect(responses['429']?.headers?.['Retry-After'], label).toEqual({ $ref: '#/components/headers/Retry-After' });
    }
    const resource = paths['/api/v1/resources/{id}'];
    expect(resource?.get?.responses['200']?.headers?.ETag).toEqual({ $ref: '#/components/headers/ETag' });
    expect(resource?.get?.responses['304']?.headers?.ETag).toBeDefined();
    expect(resource?.patch?.responses['200']?.headers?.ETag).toBeDefined();
    expect(paths['/api/v1/resources']?.post?.responses['201']?.headers?.ETag).toBeDefined();
    expect(paths['/oauth/authorize']?.post?.responses['303']?.headers?.Location).toMatchObject({ schema: { type: 'string' } });
  });

  it('gives each event type its own data schema', async () => {
    const { components } = await document();
    const { schemas } = components as { schemas: Record<string, any> };
    expect(schemas.Event.anyOf.map((variant: { $ref: string }) => variant.$ref)).toEqual(
      ['ResourceCreatedEvent', 'ResourceUpdatedEvent', 'ResourceDeletedEvent', 'ScheduleExecutedEvent', 'CustomEvent'].map(
        (name) => `#/components/schemas/${name}`,
      ),
    );
    expect(schemas.ResourceUpdatedEvent.properties.type).toMatchObject({ enum: ['resource.updated'] });
    expect(schemas.ResourceUpdatedEvent.properties.data.required).toEqual(['resource', 'changed']);
    expect(schemas.ScheduleExecutedEvent.properties.data.properties.action).toEqual({ $ref: '#/components/schemas/ScheduleAction' });
    expect(schemas.CustomEvent.properties.type.pattern).toBe('^custom\\.[A-Za-z0-9_.:-]{1,100}$');
  });

  it('states the resource name limit once, in words, where the schema cannot', async () => {
    const { paths } = await document();
    const body = (paths['/api/v1/resources']!.post as any).requestBody.content['application/json'].schema;
    expect(body.properties.name.maxLength).toBeUndefined();
    expect(body.properties.name.description).toMatch(/^1-200 characters after trimming/);
  });

  it('declares exactly the statuses an operation can answer, never a 4XX or 5XX range', async () => {
    const { paths } = await document();
    for (const [label, operation] of operations(paths)) {
      expect(
        Object.keys(operation.responses).filter((status) => !/^\d{3}$/.test(status)),
        label,
      ).toEqual([]);
    }
    const statuses = (method: string, path: string) => Object.keys(paths[path]?.[method]?.responses ?? {});
    // Every route: 400, 500, and 503 while shutting down; 429 unless never limited. A credential:
    // 401, and 403 when the route needs a scope. A path parameter: 404. If-Match: 412. A method
    // with a body: 413, 415. A write under /api/v1: 409 and 422 of its Idempotency-Key. Beyond
    // those, what the route declares itself (409, 410, 416...).
    expect(statuses('patch', '/api/v1/resources/{id}')).toEqual(['200', '400', '401', '403', '404', '409', '412', '413', '415', '422', '429', '500', '503']);
    expect(statuses('get', '/api/v1/resources/{id}')).toEqual(['200', '304', '400', '401', '403', '404', '429', '500', '503']);
    expect(statuses('get', '/api/v1/events')).toEqual(['200', '400', '401', '403', '410', '429', '500', '503']);
    expect(statuses('post', '/api/v1/keys')).toEqual(['201', '400', '401', '403', '409', '413', '415', '422', '429', '500', '503']);
    expect(statuses('get', '/api/v1/auth/me')).toEqual(['200', '400', '401', '429', '500', '503']);
    expect(statuses('get', '/api/v1/installations/{id}/download')).toEqual(['200', '206', '304', '400', '401', '403', '404', '416', '429', '500', '503']);
    expect(statuses('post', '/api/v1/developer/signup')).toEqual(['201', '400', '403', '409', '413', '415', '422', '429', '500', '503']);
    expect(statuses('get', '/health')).toEqual(['200', '400', '500', '503']);
    // The OAuth endpoints answer errors their own way (RFC 6749 JSON, pages): 413 and 415 become 400.
    expect(statuses('post', '/oauth/token')).toEqual(['200', '400', '401', '429', '500', '503']);
    expect(statuses('post', '/oauth/authorize')).toEqual(['303', '400', '401', '403', '429', '500', '503']);
  });

  it('answers each status PATCH /api/v1/resources/{id} declares (checked against the document when the app closes)', async () => {
    const account = await app().account();
    const reader = await app().account(['resources:read']);
    const created = await app().request({ method: 'POST', url: '/api/v1/resources', key: account.key, body: { name: 'Lamp', type: 'switch', state: true } });
    const url = `/api/v1/resources/${created.json.id}`;
    const patch = (options: { key?: string; body?: unknown; headers?: Record<string, string>; path?: string }) =>
      app().request({ method: 'PATCH', url: options.path ?? url, key: options.key, body: options.body, headers: options.headers });
    const answered = [
      await patch({ key: account.key, body: { state: false } }),
      await patch({ key: account.key, body: { state: 'on', nope: 1 } }),
      await patch({ body: { state: false } }),
      await patch({ key: reader.key, body: { state: false } }),
      await patch({ key: account.key, body: { state: false }, path: '/api/v1/resources/res_missing' }),
      await patch({ key: account.key, body: { state: true }, headers: { 'if-match': '"1"' } }),
      await patch({
        key: account.key,
        body: JSON.stringify({ attributes: { text: 'x'.repeat(1024 * 1024) } }),
        headers: { 'content-type': 'application/json' },
      }),
      await patch({ key: account.key, body: 'state=false', headers: { 'content-type': 'text/plain' } }),
    ];
    expect(answered.map((response) => response.status)).toEqual([200, 400, 401, 403, 404, 412, 413, 415]);
    expect(answered[2]?.headers['www-authenticate']).toBe('Bearer realm="devdata"');
    expect(answered[3]?.headers['www-authenticate']).toBe('Bearer realm="devdata", error="insufficient_scope", scope="resources:write"');
  });

  it('documents WWW-Authenticate on 401 and 403, the session cookie, and a download’s range headers', async () => {
    const { paths, components } = await document();
    for (const [label, operation] of operations(paths)) {
      if (!(operation.security ?? []).some((requirement) => 'bearerAuth' in requirement)) continue;
      const responses = resolved(components, operation);
      expect(responses['401']?.headers?.['WWW-Authenticate'], label).toEqual({ $ref: '#/components/headers/WWW-Authenticate' });
      if (responses['403']) expect(responses['403'].headers?.['WWW-Authenticate'], label).toEqual({ $ref: '#/components/headers/WWW-Authenticate' });
    }
    expect(components.securitySchemes?.developerSession).toMatchObject({ type: 'apiKey', in: 'cookie', name: SESSION_COOKIE });
    const developer = (path: string, method: string) => paths[`/api/v1/developer/${path}`]?.[method];
    expect(developer('session', 'get')?.security).toEqual([{ developerSession: [] }]);
    expect(developer('logout', 'post')?.security).toEqual([{ developerSession: [] }, {}]);
    expect(developer('signup', 'post')?.security).toEqual([]);
    expect(developer('signup', 'post')?.responses['201']?.headers?.['Set-Cookie']).toMatchObject({
      description: expect.stringContaining(`${SESSION_COOKIE}=<token>`),
    });
    expect(developer('logout', 'post')?.responses['204']?.headers?.['Set-Cookie']).toMatchObject({ description: expect.stringContaining('Max-Age=0') });
    expect(resolved(components, developer('session', 'get'))['401']?.headers?.['WWW-Authenticate']).toBeDefined();

    const download = resolved(components, paths['/api/v1/installations/{id}/download']?.get);
    const headerNames = (status: string) => Object.keys(download[status]?.headers ?? {}).filter((name) => /^(ETag|Accept-Ranges|Content-)/.test(name));
    expect(headerNames('200')).toEqual(['ETag', 'Accept-Ranges', 'Content-Disposition']);
    expect(headerNames('206')).toEqual(['ETag', 'Accept-Ranges', 'Content-Disposition', 'Content-Range']);
    expect(headerNames('304')).toEqual(['ETag', 'Accept-Ranges', 'Content-Disposition']);
    expect(headerNames('416')).toEqual(['ETag', 'Accept-Ranges', 'Content-Disposition', 'Content-Range']);
  });

  it('documents HEAD on every GET route as Fastify answers it (the event stream has none): the same statuses and headers, no body', async () => {
    const { paths } = await document();
    // A HEAD of the stream would open one that sends nothing: that route has no HEAD.
    expect(paths['/api/v1/events/stream']?.head).toBeUndefined();
    const account = await app().account();
    const streamHead = await app().request({ method: 'HEAD', url: '/api/v1/events/stream', key: account.key });
    expect([streamHead.status, streamHead.headers.allow]).toEqual([405, 'GET, OPTIONS']);
    for (const [path, methods] of Object.entries(paths)) {
      if (!methods.get || path === '/api/v1/events/stream') continue;
      const head = methods.head;
      expect(head?.operationId, path).toBe(`${methods.get.operationId}Head`);
      expect(Object.keys(head?.responses ?? {}), path).toEqual(Object.keys(methods.get.responses));
      for (const [status, response] of Object.entries(head?.responses ?? {})) expect(response.content, `${path} ${status}`).toBeUndefined();
    }
    const answers = await Promise.all(
      ['/api/v1', '/api/v1/resources', '/api/v1/resources/res_missing', '/api/v1/installations/openapi-document/download'].map((url) =>
        app().request({ method: 'HEAD', url, key: account.key }),
      ),
    );
    expect(answers.map((response) => [response.status, response.body])).toEqual([
      [200, ''],
      [200, ''],
      [404, ''],
      [200, ''],
    ]);
    expect(answers[3]?.headers).toMatchObject({ 'accept-ranges': 'bytes', 'content-disposition': expect.stringMatching(/^attachment; filename="/) });
  });

  it('states the length rule of state on /oauth/authorize, and that its redirect is never cached', async () => {
    const { paths } = await document();
    const state = paths['/oauth/authorize']?.get?.parameters?.find((parameter) => parameter.name === 'state');
    expect(state).toMatchObject({ in: 'query', required: true, schema: { minLength: STATE_LENGTH.min, maxLength: STATE_LENGTH.max } });
    for (const method of ['get', 'post']) {
      expect(paths['/oauth/authorize']?.[method]?.responses['303']?.headers?.['Cache-Control'], method).toMatchObject({ schema: { enum: ['no-store'] } });
    }
  });
});

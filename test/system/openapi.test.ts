// What client generators need from /openapi.json (issue 16): an operationId per operation, optional
// query parameters where the server has a default, the response headers, a schema per event type.
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';

type Operation = {
  operationId?: string;
  parameters?: Array<{ in: string; name: string; required?: boolean; schema: { default?: unknown } }>;
  security?: Array<Record<string, string[]>>;
  responses: Record<string, { headers?: Record<string, { $ref?: string }> }>;
};

describe('the OpenAPI document for generators', () => {
  const app = useTestApp();

  async function document() {
    const response = await app().request({ url: '/openapi.json' });
    expect(response.status).toBe(200);
    return response.json as { paths: Record<string, Record<string, Operation>>; components: Record<string, Record<string, any>> };
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
      'Cache-Control',
      'ETag',
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
      'Retry-After',
      'X-Request-Id',
    ]);
    for (const [label, operation] of operations(paths)) {
      const credentialed = (operation.security ?? []).some((requirement: object) => Object.keys(requirement).length > 0);
      for (const [status, response] of Object.entries(operation.responses)) {
        for (const name of ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', ...(credentialed ? ['Cache-Control'] : [])]) {
          expect(response.headers?.[name], `${label} ${status} ${name}`).toEqual({ $ref: `#/components/headers/${name}` });
        }
      }
      if (label !== 'GET /health') expect(operation.responses['429']?.headers?.['Retry-After'], label).toEqual({ $ref: '#/components/headers/Retry-After' });
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
});

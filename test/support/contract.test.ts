// The contract check is only worth something if it can fail: these prove that ContractChecker
// reports drift between recorded responses and an OpenAPI document.
import { describe, expect, it } from 'vitest';
import { ContractChecker, toOpenApiPath, type RecordedResponse } from './contract.js';
import { TestApp } from './app.js';

type Document = ConstructorParameters<typeof ContractChecker>[0];

const errorSchema = {
  type: 'object',
  required: ['error'],
  additionalProperties: false,
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'requestId'],
      properties: { code: { type: 'string' }, message: { type: 'string' }, requestId: { type: 'string' } },
    },
  },
};

function minimalDocument(): Document {
  const document = {
    openapi: '3.1.0',
    info: { title: 'test', version: '1.0.0' },
    paths: {
      '/things/{id}': {
        get: {
          responses: {
            '200': {
              description: 'A thing',
              content: {
                'application/json': {
                  schema: {
                    type: 'object',
                    required: ['id', 'count', 'createdAt'],
                    additionalProperties: false,
                    properties: {
                      id: { type: 'string' },
                      count: { type: 'integer' },
                      createdAt: { type: 'string', format: 'date-time' },
                    },
                  },
                },
              },
            },
            '204': { description: 'Nothing' },
            '4XX': { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
          },
        },
      },
    },
    components: { schemas: { Error: errorSchema } },
  };
  return document as unknown as Document;
}

function recorded(overrides: Partial<RecordedResponse> = {}): RecordedResponse {
  return {
    method: 'GET',
    route: '/things/:id',
    status: 200,
    contentType: 'application/json; charset=utf-8',
    body: JSON.stringify({ id: 'thing_1', count: 3, createdAt: '2026-01-01T00:00:00.000Z' }),
    ...overrides,
  };
}

describe('ContractChecker', () => {
  const checker = new ContractChecker(minimalDocument());

  it('maps Fastify route parameters to OpenAPI templates', () => {
    expect(toOpenApiPath('/things/:id')).toBe('/things/{id}');
    expect(toOpenApiPath('/a/:accountId/b/:id_2')).toBe('/a/{accountId}/b/{id_2}');
    expect(toOpenApiPath('/plain')).toBe('/plain');
  });

  it('passes a response that matches the document', () => {
    expect(checker.check(recorded())).toEqual([]);
  });

  it('passes an error response through a status range and a $ref', () => {
    const body = JSON.stringify({ error: { code: 'not_found', message: 'Thing not found', requestId: 'req_1' } });
    expect(checker.check(recorded({ status: 404, body }))).toEqual([]);
  });

  it('reads a response shared through components.responses', () => {
    const document = minimalDocument() as unknown as { paths: Record<string, any>; components: Record<string, any> };
    document.paths['/things/{id}'].get.responses['404'] = { $ref: '#/components/responses/NotFound' };
    document.components.responses = {
      NotFound: { description: 'Not found', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
    };
    const shared = new ContractChecker(document as unknown as Document);
    const body = (error: object) => JSON.stringify({ error });
    expect(shared.check(recorded({ status: 404, body: body({ code: 'not_found', message: 'x', requestId: 'r' }) }))).toEqual([]);
    expect(shared.check(recorded({ status: 404, body: body({ code: 'not_found' }) }))[0]).toContain('body does not match the schema');
  });

  it('fails a body with a field of the wrong type', () => {
    const problems = checker.check(recorded({ body: JSON.stringify({ id: 'thing_1', count: '3', createdAt: '2026-01-01T00:00:00.000Z' }) }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('GET /things/:id → 200');
    expect(problems[0]).toContain('body does not match the schema');
    expect(problems[0]).toContain('count');
  });

  it('fails a body with a missing field, an undocumented field or a bad format', () => {
    expect(checker.check(recorded({ body: JSON.stringify({ id: 'thing_1', count: 3 }) }))).toHaveLength(1);
    expect(checker.check(recorded({ body: JSON.stringify({ id: 'thing_1', count: 3, createdAt: '2026-01-01T00:00:00.000Z', secret: 'x' }) }))).toHaveLength(1);
    expect(checker.check(recorded({ body: JSON.stringify({ id: 'thing_1', count: 3, createdAt: 'yesterday' }) }))).toHaveLength(1);
  });

  it('fails an error body that does not follow the referenced schema', () => {
    const problems = checker.check(recorded({ status: 400, body: JSON.stringify({ message: 'bad' }) }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('body does not match the schema');
  });

  it('fails an undocumented status', () => {
    const problems = checker.check(recorded({ status: 500, body: JSON.stringify({ error: { code: 'internal_error', message: 'x', requestId: 'r' } }) }));
    expect(problems).toEqual(['GET /things/:id → 500: status not documented']);
    expect(checker.check(recorded({ status: 201 }))).toEqual(['GET /things/:id → 201: status not documented']);
  });

  it('fails an unknown operation: an unknown path or an undocumented method', () => {
    expect(checker.check(recorded({ route: '/other' }))).toEqual(['GET /other → 200: operation missing from /openapi.json']);
    expect(checker.check(recorded({ method: 'DELETE', status: 204, body: '' }))).toEqual(['DELETE /things/:id → 204: operation missing from /openapi.json']);
  });

  it('fails a JSON body where the document describes none', () => {
    const problems = checker.check(recorded({ status: 204, contentType: 'application/json', body: '{}' }));
    // 204 carries no body by definition, so the checker does not look at it...
    expect(problems).toEqual([]);
    const noContent = new ContractChecker({
      paths: { '/x': { get: { responses: { '200': { description: 'no content described' } } } } },
    } as unknown as Document);
    // ...but a 200 whose JSON body is not described is drift.
    expect(noContent.check(recorded({ route: '/x' }))).toEqual(['GET /x → 200: JSON body not documented']);
  });

  it('checks only the status of a HEAD answer, which has no body', () => {
    const withHead = new ContractChecker({
      paths: { '/things/{id}': { head: { responses: { '200': { description: 'headers only' } } } } },
    } as unknown as Document);
    expect(withHead.check(recorded({ method: 'HEAD', body: '{"not":"checked"}' }))).toEqual([]);
    expect(withHead.check(recorded({ method: 'HEAD', status: 404 }))).toEqual(['HEAD /things/:id → 404: status not documented']);
    expect(checker.check(recorded({ method: 'HEAD' }))).toEqual(['HEAD /things/:id → 200: operation missing from /openapi.json']);
  });

  it('ignores what it cannot check: 404s of no route, OPTIONS, non-JSON bodies', () => {
    expect(checker.check(recorded({ route: undefined, status: 404 }))).toEqual([]);
    expect(checker.check(recorded({ method: 'OPTIONS', route: '*' }))).toEqual([]);
    expect(checker.check(recorded({ contentType: 'text/plain', body: 'hello' }))).toEqual([]);
  });
});

describe('ContractChecker against the app’s own document', () => {
  it('accepts the real responses and catches a tampered one', async () => {
    const t = await TestApp.start();
    try {
      const info = await t.request({ url: '/api/v1' });
      expect(info.status).toBe(200);
      const missing = await t.request({ url: '/api/v1/auth/me' });
      expect(missing.status).toBe(401);

      const checker = new ContractChecker(t.app.swagger() as unknown as Document);
      expect(t.responses).toHaveLength(2);
      for (const response of t.responses) expect(checker.check(response)).toEqual([]);

      const [infoResponse, errorResponse] = t.responses as [RecordedResponse, RecordedResponse];
      expect(checker.check({ ...infoResponse, body: JSON.stringify({ name: 5, version: '1.3.0' }) })).toHaveLength(1);
      expect(checker.check({ ...errorResponse, body: JSON.stringify({ error: { code: 'unauthorized', message: 'x' } }) })).toHaveLength(1);
      expect(checker.check({ ...errorResponse, body: JSON.stringify({ code: 'unauthorized', message: 'x', requestId: 'r' }) })).toHaveLength(1);
      expect(checker.check({ ...infoResponse, method: 'DELETE' })).toEqual(['DELETE /api/v1 → 200: operation missing from /openapi.json']);
    } finally {
      await t.close();
    }
  });

  it('makes TestApp.close fail when a recorded response drifts from the document', async () => {
    const t = await TestApp.start();
    await t.request({ url: '/api/v1' });
    t.responses.push({ method: 'GET', route: '/api/v1', status: 200, contentType: 'application/json', body: '{"name":1}' });
    await expect(t.close()).rejects.toThrow(/responses that do not match \/openapi\.json/);
  });
});

// Requests for every operation of the OpenAPI document: built from its parameter and body schemas,
// then, for most of them, broken in one or two ways a careless or hostile client would.
import fc from 'fast-check';
import type { RawRequest } from '../support/raw-http.js';
import { TestApp } from '../support/app.js';
import { anyJson, hostileValue, validValue, wrongTypeValue, type Schema, type SchemaContext } from './schema-arbitrary.js';

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema: Schema;
}

export interface Operation {
  method: string;
  /** The document's path template, `/api/v1/keys/{id}`. */
  path: string;
  parameters: Parameter[];
  body?: { mediaType: string; schema: Schema };
}

interface OpenApiDocument {
  paths: Record<string, Record<string, { parameters?: Parameter[]; requestBody?: { content: Record<string, { schema: Schema }> } }>>;
  components?: { schemas?: Record<string, Schema> };
}

/** The OpenAPI document a freshly started app serves (read once by a test file, before its tests are declared). */
export async function servedDocument(): Promise<OpenApiDocument> {
  const reader = await TestApp.start();
  try {
    return (await reader.request({ url: '/openapi.json' })).json;
  } finally {
    await reader.close();
  }
}

export function operationsOf(document: OpenApiDocument): Operation[] {
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const content = operation.requestBody?.content ?? {};
      const mediaType = Object.keys(content)[0];
      operations.push({
        method: method.toUpperCase(),
        path,
        parameters: operation.parameters ?? [],
        body: mediaType ? { mediaType, schema: content[mediaType]!.schema } : undefined,
      });
    }
  }
  return operations;
}

export function resolverOf(document: OpenApiDocument): (ref: string) => Schema {
  return (ref) => {
    const name = ref.split('/').pop() ?? '';
    const schema = document.components?.schemas?.[name];
    if (!schema) throw new Error(`unresolved ${ref}`);
    return schema;
  };
}

/** A request before it is put on the wire: its parts stay apart so mutations can reach each one. */
export interface RequestParts {
  method: string;
  pathValues: Record<string, string>;
  query: Array<[string, string]>;
  headers: Array<[string, string]>;
  /** A value sent as JSON or as a form; `raw` is sent as is instead. */
  body?: unknown;
  raw?: Buffer;
  mediaType?: string;
  /** Set by mutations: sent in place of the media type the operation wants (null: none). */
  contentType?: string | null;
  /** Set by mutations that put something else on the request line. */
  target?: string;
  mutations: string[];
}

const encode = (text: string) => encodeURIComponent(text);

export function toRawRequest(operation: Operation, parts: RequestParts): RawRequest {
  const path = operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => parts.pathValues[name] ?? 'x');
  const query = parts.query.map(([name, value]) => `${encode(name)}=${value}`).join('&');
  const target = parts.target ?? (query ? `${path}?${query}` : path);
  const headers = [...parts.headers];
  let body: Buffer | undefined = parts.raw;
  if (body === undefined && parts.body !== undefined) {
    body =
      parts.mediaType === 'application/x-www-form-urlencoded'
        ? Buffer.from(
            new URLSearchParams(
              Object.entries(parts.body as Record<string, unknown>).map(([key, value]): [string, string] => [
                key,
                typeof value === 'string' ? value : JSON.stringify(value),
              ]),
            ).toString(),
          )
        : Buffer.from(JSON.stringify(parts.body));
  }
  const contentType = parts.contentType === undefined ? (body === undefined ? undefined : parts.mediaType) : parts.contentType;
  if (contentType !== undefined && contentType !== null) headers.push(['content-type', contentType]);
  return { method: parts.method, target, headers, body };
}

/** A query value as a client puts it in a URL: encoded text, one entry per array item. */
function queryEntries(name: string, value: unknown): Array<[string, string]> {
  if (Array.isArray(value)) return value.map((item) => [name, encode(String(item))]);
  return [[name, encode(typeof value === 'string' ? value : JSON.stringify(value))]];
}

/** A request as the document describes it, with the caller's credential. */
export function validRequest(
  operation: Operation,
  context: SchemaContext,
  pathValues: (name: string) => fc.Arbitrary<string>,
  credential: string,
): fc.Arbitrary<RequestParts> {
  const pathParameters = operation.parameters.filter((parameter) => parameter.in === 'path');
  const optional = (parameter: Parameter, value: fc.Arbitrary<unknown>) => (parameter.required ? value : fc.option(value, { nil: undefined, freq: 2 }));
  const query = operation.parameters
    .filter((parameter) => parameter.in === 'query')
    .map((parameter) =>
      optional(parameter, context.hints[parameter.name] ?? validValue(parameter.schema, context)).map((value) =>
        value === undefined ? [] : queryEntries(parameter.name, value),
      ),
    );
  const headers = operation.parameters
    .filter((parameter) => parameter.in === 'header')
    .map((parameter) =>
      optional(parameter, context.hints[parameter.name] ?? validValue(parameter.schema, context)).map(
        (value): Array<[string, string]> => (value === undefined ? [] : [[parameter.name, String(value)]]),
      ),
    );
  return fc
    .record({
      path: fc.tuple(...pathParameters.map((parameter) => pathValues(parameter.name).map((value) => [parameter.name, value] as const))),
      query: fc.tuple(...query),
      headers: fc.tuple(...headers),
      body: operation.body ? validValue(operation.body.schema, context) : fc.constant(undefined),
    })
    .map(({ path, query: queryParts, headers: headerParts, body }) => ({
      method: operation.method,
      pathValues: Object.fromEntries(path),
      query: queryParts.flat(),
      headers: [['authorization', `Bearer ${credential}`] as [string, string], ...headerParts.flat()],
      body,
      mediaType: operation.body?.mediaType,
      mutations: [],
    }));
}

type Mutation = (parts: RequestParts, operation: Operation) => fc.Arbitrary<RequestParts>;

const withMutation = (parts: RequestParts, name: string, change: Partial<RequestParts>): RequestParts => ({
  ...parts,
  ...change,
  mutations: [...parts.mutations, name],
});

const objectBody = (parts: RequestParts) =>
  parts.body !== null && typeof parts.body === 'object' && !Array.isArray(parts.body) ? (parts.body as Record<string, unknown>) : undefined;

/** A body schema's property names, for changes aimed at a real field. */
function fieldNames(operation: Operation, context: SchemaContext): string[] {
  let schema = operation.body?.schema;
  if (schema?.$ref) schema = context.resolve(schema.$ref);
  return Object.keys(schema?.properties ?? {});
}

/** JSON text `depth` levels deep; kept as text, since a value that deep would overflow whatever walks it. */
/** Body fields whose schema is an object of free JSON (attributes, data). */
function freeJsonFields(operation: Operation, context: SchemaContext): string[] {
  let schema = operation.body?.schema;
  if (schema?.$ref) schema = context.resolve(schema.$ref);
  const properties = (schema?.properties ?? {}) as Record<string, Schema>;
  return Object.keys(properties).filter((name) => properties[name]!.type === 'object' && properties[name]!.properties === undefined);
}

function deepText(depth: number): string {
  let text = '"bottom"';
  // Outermost an object, which is what most fields that take free JSON ask for.
  for (let level = depth - 1; level >= 0; level--) text = level % 2 === 0 ? `{"d":${text}}` : `[${text}]`;
  return text;
}

/** The body as JSON text with `name` set to the JSON text `value`. */
function bodyTextWith(parts: RequestParts, name: string, value: string): Buffer {
  const { [name]: _replaced, ...rest } = objectBody(parts) ?? {};
  const head = JSON.stringify(rest).slice(0, -1);
  return Buffer.from(`${head}${head.length > 1 ? ',' : ''}${JSON.stringify(name)}:${value}}`);
}

export function mutations(context: SchemaContext): Mutation[] {
  return [
    // Body fields: missing, unknown, of the wrong type, hostile, nested too deep.
    (parts, operation) => {
      const body = objectBody(parts);
      const required = ((operation.body?.schema.$ref ? context.resolve(operation.body.schema.$ref) : operation.body?.schema)?.required ?? []) as string[];
      if (!body || required.length === 0) return fc.constant(withMutation(parts, 'no body', { body: undefined }));
      return fc.constantFrom(...required).map((name) => {
        const { [name]: _removed, ...rest } = body;
        return withMutation(parts, `without ${name}`, { body: rest });
      });
    },
    (parts) =>
      fc.tuple(fc.string({ minLength: 1, maxLength: 20 }), anyJson).map(([name, value]) =>
        withMutation(parts, `extra field ${JSON.stringify(name)}`, {
          body: { ...(objectBody(parts) ?? {}), [name === '__proto__' ? 'proto' : name]: value },
        }),
      ),
    (parts, operation) => {
      const names = fieldNames(operation, context);
      if (names.length === 0) return fc.constant(withMutation(parts, 'body of another type', { body: [1, 2] }));
      return fc.constantFrom(...names).chain((name) => {
        let schema = operation.body!.schema;
        if (schema.$ref) schema = context.resolve(schema.$ref);
        return wrongTypeValue(schema.properties[name]).map((value) =>
          withMutation(parts, `${name} of the wrong type`, { body: { ...(objectBody(parts) ?? {}), [name]: value } }),
        );
      });
    },
    (parts, operation) => {
      const names = fieldNames(operation, context);
      return fc
        .tuple(names.length > 0 ? fc.constantFrom(...names) : fc.constant('field'), hostileValue)
        .map(([name, value]) => withMutation(parts, `${name} hostile`, { body: { ...(objectBody(parts) ?? {}), [name]: value } }));
    },
    (parts, operation) => {
      // Fields that take free JSON first: they are where depth can reach the service's own code.
      const free = freeJsonFields(operation, context);
      const names = free.length > 0 ? free : fieldNames(operation, context);
      return fc.tuple(names.length > 0 ? fc.constantFrom(...names) : fc.constant('field'), fc.constantFrom(33, 20_000)).map(([name, depth]) =>
        withMutation(parts, `${name} nested ${depth} deep`, {
          raw: bodyTextWith(parts, name, deepText(depth)),
          mediaType: parts.mediaType ?? 'application/json',
        }),
      );
    },
    // Bodies that are not what they claim to be.
    (parts) =>
      fc
        .constantFrom(
          '{',
          '{"a":1,}',
          '[1,2',
          'null',
          '"text"',
          '42',
          'true',
          '{"a":1}{"b":2}',
          '\ufeff{}',
          '{"a":"\\ud800"}',
          '{"__proto__":{"x":1}}',
          '{"a":1e999}',
          ' ',
        )
        .map((text) => withMutation(parts, `raw body ${JSON.stringify(text)}`, { raw: Buffer.from(text), mediaType: parts.mediaType ?? 'application/json' })),
    (parts) =>
      fc
        .constantFrom(
          Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0xaf, 0x22, 0x7d]),
          Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
          Buffer.alloc(300, 0),
          Buffer.from('{"name":"\u0000"}'),
        )
        .map((raw) => withMutation(parts, `bytes ${raw.subarray(0, 12).toString('hex')}`, { raw, mediaType: parts.mediaType ?? 'application/json' })),
    (parts) =>
      fc
        .constantFrom(
          null,
          'text/plain',
          'application/json; charset=latin1',
          'application/JSON',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/json, text/html',
          ';;;',
          'application/json; charset="utf-8"',
        )
        .map((contentType) => withMutation(parts, `content-type ${contentType}`, { contentType, body: parts.body ?? {} })),
    // Query strings and paths with broken encodings, wrong types and huge values.
    (parts, operation) => {
      const names = operation.parameters.filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name);
      return fc
        .tuple(
          fc.constantFrom(...(names.length > 0 ? names : ['unknown'])),
          fc.constantFrom(
            '%zz',
            '%E0%A4%A',
            '%',
            'abc',
            '-1',
            '1e400',
            '99999999999999999999',
            '0x10',
            '1.5',
            '',
            '%00',
            'a'.repeat(8_000),
            '%F0%9F%99%82',
            '+',
            'true',
          ),
        )
        .map(([name, value]) => withMutation(parts, `query ${name}=${value.slice(0, 20)}`, { query: [...parts.query, [name, value], [name, value]] }));
    },
    (parts, operation) => {
      const names = operation.parameters.filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name);
      if (names.length === 0) {
        return fc
          .constantFrom('%zz', '/%2e%2e/', '//', '/\u00e9')
          .map((suffix) => withMutation(parts, `path suffix ${suffix}`, { target: `${operation.path}${suffix}` }));
      }
      return fc
        .tuple(fc.constantFrom(...names), fc.constantFrom('%zz', '%E0%A4%A', '%', '..%2F..%2F', 'x'.repeat(6_000), '%F0%9F%99%82', '%00', 'res_%ff', '\u00e9'))
        .map(([name, value]) => withMutation(parts, `path ${name}=${value.slice(0, 20)}`, { pathValues: { ...parts.pathValues, [name]: value } }));
    },
    // Headers: credentials in odd shapes, and every header a route reads given garbage.
    (parts) =>
      fc
        .constantFrom<Array<[string, string]>>(
          [],
          [['authorization', 'Bearer']],
          [['authorization', `Bearer ddk_${'a'.repeat(64)}`]],
          [['authorization', 'Basic Zm9vOmJhcg==']],
          [['authorization', `Basic ${Buffer.from('%zz:%E0%A4%A').toString('base64')}`]],
          [['authorization', 'Basic !!!']],
          [['authorization', `Bearer ${'k'.repeat(8_000)}`]],
          [['x-api-key', '']],
          [['x-api-key', 'dda_forged']],
          [['authorization', 'bearer  ' + 'x']],
        )
        .map((credential) =>
          withMutation(parts, `credential ${credential[0]?.[1]?.slice(0, 20) ?? 'none'}`, {
            headers: [...credential, ...parts.headers.filter(([name]) => name !== 'authorization')],
          }),
        ),
    (parts) =>
      fc
        .tuple(
          fc.constantFrom(
            'if-match',
            'if-none-match',
            'last-event-id',
            'x-request-id',
            'range',
            'origin',
            'cookie',
            'accept',
            'accept-encoding',
            'x-forwarded-for',
          ),
          fc.constantFrom(
            '"',
            'W/',
            '*',
            '-1',
            'bytes=9-1',
            'bytes=0-0,1-1,2-2',
            '" ',
            'x'.repeat(4_000),
            '%zz',
            '\u00ff\u00fe',
            'null',
            '__Host-service_developer_session=dds_x; a=b',
          ),
        )
        .map(([name, value]) => withMutation(parts, `header ${name}: ${value.slice(0, 20)}`, { headers: [...parts.headers, [name, value]] })),
    // A body where none is expected, and a method with no route.
    (parts) => fc.constant(withMutation(parts, 'unexpected body', { body: { unexpected: true }, mediaType: 'application/json' })),
    (parts) => fc.constantFrom('PUT', 'TRACE', 'PROPFIND', 'OPTIONS', 'HEAD').map((method) => withMutation(parts, `method ${method}`, { method })),
  ];
}

/** A valid request broken by mutation `first` (or any), and sometimes one more way. */
export function mutatedRequest(valid: fc.Arbitrary<RequestParts>, operation: Operation, context: SchemaContext, first?: number): fc.Arbitrary<RequestParts> {
  const all = mutations(context);
  const any = (parts: RequestParts) => fc.integer({ min: 0, max: all.length - 1 }).chain((index) => all[index]!(parts, operation));
  const start = first === undefined ? any : (parts: RequestParts) => all[first]!(parts, operation);
  return valid.chain(start).chain((parts) => fc.oneof({ arbitrary: fc.constant(parts), weight: 3 }, { arbitrary: any(parts), weight: 1 }));
}

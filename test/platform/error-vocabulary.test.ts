// One error vocabulary (docs/decisions.md, "HTTP contract"), generated from the served
// /openapi.json: for every operation with a JSON body or query, path or header parameters, each
// field is sent broken in each way its schema allows (wrong type, unknown field, missing when
// required, a number out of its range, a string too long or too short, a value outside its list, a
// string its pattern refuses), and the answer must be a 400 whose `details` point at that field (a
// JSON pointer: `/name` in the body, `/limit` in the query string, `/id` in the path, `/if-match`
// in the headers), whose message names its rule (the bound, the values, the allowed fields, the
// pattern's description), and in which no validator jargon appears.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useTestApp, type TestAccount, type TestResponse } from '../support/app.js';
import { expectError } from '../support/expect.js';
import { operationsOf, resolverOf, servedDocument, type Operation, type Parameter } from '../fuzz/requests.js';
import type { Schema } from '../fuzz/schema-arbitrary.js';

/** What Ajv and Fastify say in their own words, which must never reach a client (compared case-sensitively). */
const JARGON = [
  'must be equal to constant',
  'anyOf',
  'oneOf',
  'must match pattern',
  'NOT have',
  'should',
  'instancePath',
  'schemaPath',
  'querystring/',
  'body/',
  'Body is not valid JSON',
  'must match a schema',
  'allowed values',
];

/** Errors in RFC 6749's shape or HTML pages, not the API's error body. */
const OWN_ERROR_BODIES = (path: string) => path.startsWith('/oauth/') || path.startsWith('/.well-known/');

const DOCUMENT = await servedDocument();
const resolve = resolverOf(DOCUMENT);
const deref = (schema: Schema): Schema => (schema.$ref ? deref(resolve(schema.$ref)) : schema);
const SEED = 20261127;

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'a boolean',
  array: 'an array',
  object: 'an object',
  null: 'null',
};

/** The literal values a schema allows when it is a list of them (enum, const, or a union of those). */
function literals(schema: Schema): unknown[] | undefined {
  const resolved = deref(schema);
  if ('const' in resolved) return [resolved.const];
  if (Array.isArray(resolved.enum)) return resolved.enum;
  const branches = resolved.anyOf ?? resolved.oneOf;
  if (!Array.isArray(branches)) return undefined;
  const values = branches.map((branch: Schema) => literals(branch));
  return values.every((value: unknown[] | undefined) => value !== undefined) ? values.flat() : undefined;
}

/** A value the schema accepts: the simplest there is, so that only the field under test fails. */
function validValue(schema: Schema): unknown {
  const resolved = deref(schema);
  const values = literals(resolved);
  if (values) return values[0];
  const branches = resolved.anyOf ?? resolved.oneOf;
  if (branches) return validValue(branches[0]);
  switch (Array.isArray(resolved.type) ? resolved.type[0] : resolved.type) {
    case 'string': {
      if (resolved.format === 'date-time') return '2099-01-01T00:00:00.000Z';
      if (resolved.format === 'email') return 'ada@example.com';
      if (resolved.format === 'uri') return 'https://example.com/x';
      if (resolved.pattern)
        return fc.sample(
          fc.stringMatching(new RegExp(resolved.pattern)).filter((text) => fits(resolved, text)),
          { seed: SEED, numRuns: 1 },
        )[0];
      return 'a'.repeat(Math.max(resolved.minLength ?? 1, 1));
    }
    case 'integer':
    case 'number':
      return resolved.minimum ?? 1;
    case 'boolean':
      return true;
    case 'array':
      return Array.from({ length: resolved.minItems ?? 0 }, (_, index) => {
        const item = validValue(resolved.items ?? {});
        // Strings made distinct, for arrays whose items must be unique.
        return typeof item === 'string' ? `${item}${index}` : item;
      });
    case 'object':
      return Object.fromEntries(((resolved.required ?? []) as string[]).map((name) => [name, validValue(resolved.properties[name])]));
    default:
      return 'a';
  }
}

const fits = (schema: Schema, text: string) => text.length >= (schema.minLength ?? 0) && text.length <= (schema.maxLength ?? Number.POSITIVE_INFINITY);

/** A broken value and what its error must say. */
interface Breakage {
  kind: string;
  value: unknown;
  /** The JSON pointer the error must name, when it is not the field itself (an array's first item, a discriminator). */
  at?: string;
  /** Fragments the field's message must contain: its rule in words. */
  says: string[];
}

const sample = <T>(arbitrary: fc.Arbitrary<T>, runs = 2): T[] => fc.sample(arbitrary, { seed: SEED, numRuns: runs });

/** Ways to break a value of this schema, each with what the error must say. `text`: it travels as text (query, path, header). */
function breakages(raw: Schema, text: boolean): Breakage[] {
  const schema = deref(raw);
  const found: Breakage[] = [];
  const values = literals(schema);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (values) {
    found.push({ kind: 'value outside its list', value: 'not-a-listed-value', says: ['one of', ...values.map(String)] });
    if (!text) found.push({ kind: 'wrong type', value: 12345, says: values.map(String) });
    return found;
  }
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (branches) {
    const resolved = branches.map(deref);
    const key =
      resolved[0]?.properties &&
      Object.keys(resolved[0].properties).find((name) => resolved.every((branch) => branch.properties?.[name]?.enum || branch.properties?.[name]?.const));
    if (key) {
      const tags = resolved.map((branch) => String(literals(branch.properties[key])?.[0]));
      found.push({ kind: `no ${key}`, value: {}, at: `/${key}`, says: ['is required', ...tags] });
      found.push({ kind: `unknown ${key}`, value: { [key]: 'not-a-kind' }, at: `/${key}`, says: tags });
    }
    const words = [...new Set(resolved.map((branch) => TYPE_WORDS[String(branch.type)] ?? ''))].filter(Boolean);
    if (!text && !key && !words.includes('an array')) found.push({ kind: 'wrong type', value: [], says: words });
    return found;
  }
  if (!text && type !== undefined) {
    const wrong: Record<string, unknown> = { string: 12345, integer: 'text', number: 'text', boolean: 'yes', array: 'text', object: 'text' };
    found.push({ kind: 'wrong type', value: wrong[type], says: [TYPE_WORDS[type]!] });
  }
  if (text && (type === 'integer' || type === 'number')) found.push({ kind: 'wrong type', value: 'abc', says: [TYPE_WORDS[type]!] });
  if (type === 'integer' || type === 'number') {
    const bounds = [schema.minimum, schema.maximum].filter((bound) => bound !== undefined).map(String);
    if (schema.minimum !== undefined) {
      for (const value of sample(fc.integer({ min: schema.minimum - 1_000_000, max: schema.minimum - 1 })))
        found.push({ kind: 'below its range', value, says: bounds });
    }
    if (schema.maximum !== undefined) {
      for (const value of sample(fc.integer({ min: schema.maximum + 1, max: schema.maximum + 1_000_000 })))
        found.push({ kind: 'above its range', value, says: bounds });
    }
  }
  if (type === 'string') {
    const letters = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz');
    if (schema.maxLength !== undefined) {
      for (const value of sample(fc.string({ unit: letters, minLength: schema.maxLength + 1, maxLength: schema.maxLength + 40 }))) {
        found.push({ kind: 'too long', value, says: [String(schema.maxLength)] });
      }
    }
    if ((schema.minLength ?? 0) > 0) {
      found.push({ kind: 'too short', value: '', says: schema.minLength === 1 && schema.maxLength === undefined ? ['empty'] : [String(schema.minLength)] });
    }
    const formats: Record<string, [string, string]> = { 'date-time': ['tomorrow', 'ISO 8601'], email: ['not-an-address', 'e-mail'], uri: ['not a uri', 'URI'] };
    const format = formats[String(schema.format)];
    if (format) found.push({ kind: 'not in its format', value: format[0], says: [format[1]] });
    if (schema.pattern) {
      const pattern = new RegExp(schema.pattern, 'u');
      const refused = ['abc', '*', ' ', 'x y', '\u0001x', '%', 'custom*'].find((candidate) => !pattern.test(candidate) && fits(schema, candidate));
      // Every pattern of the API is described, and the description is what a client is told.
      expect(schema.description, `a pattern without a description: ${schema.pattern}`).toEqual(expect.any(String));
      if (refused !== undefined) found.push({ kind: 'refused by its pattern', value: refused, says: [String(schema.description).slice(1)] });
    }
  }
  if (type === 'array') {
    const item = deref(schema.items ?? {});
    if (schema.maxItems !== undefined) {
      const value = Array.from({ length: schema.maxItems + 1 }, (_, index) => `${validValue(item)}${index}`);
      found.push({ kind: 'too many items', value, says: [String(schema.maxItems)] });
    }
    for (const broken of breakages(item, text).filter((breakage) => breakage.kind !== 'wrong type' || !text)) {
      found.push({ ...broken, kind: `item ${broken.kind}`, value: [broken.value], at: `/0${broken.at ?? ''}` });
    }
  }
  return found;
}

interface Case {
  label: string;
  operation: Operation;
  query: Array<[string, string]>;
  headers: Record<string, string>;
  pathValues: Record<string, string>;
  body?: unknown;
  /** The pointer the error must name. */
  path: string;
  says: string[];
}

const asText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

function casesOf(operation: Operation): Case[] {
  const pathValues = Object.fromEntries(operation.parameters.filter((parameter) => parameter.in === 'path').map((parameter) => [parameter.name, 'x']));
  const body = operation.body?.mediaType === 'application/json' ? deref(operation.body.schema) : undefined;
  const baseBody = body ? validValue(body) : undefined;
  // Required query parameters are sent valid, so that only the one under test fails.
  const requiredQuery = (operation.parameters as Parameter[]).filter((parameter) => parameter.in === 'query' && parameter.required);
  const validQuery = (except?: string): Array<[string, string]> =>
    requiredQuery
      .filter((parameter) => parameter.name !== except)
      .flatMap((parameter) => {
        const value = validValue(parameter.schema);
        return (Array.isArray(value) ? value : [value]).map((item): [string, string] => [parameter.name, asText(item)]);
      });
  const base = { operation, query: validQuery(), headers: {}, pathValues, body: baseBody };
  const cases: Case[] = [];
  for (const parameter of operation.parameters as Parameter[]) {
    if (parameter.in === 'cookie') continue;
    // The document carries a parameter's description beside its schema.
    const described = (parameter as Parameter & { description?: string }).description;
    for (const breakage of breakages({ ...parameter.schema, ...(described && { description: described }) }, true)) {
      const label = `${parameter.in} ${parameter.name}: ${breakage.kind} (${asText(breakage.value).slice(0, 30)})`;
      const at = `/${parameter.name}${breakage.at ?? ''}`;
      const items = Array.isArray(breakage.value) ? breakage.value.map(asText) : [asText(breakage.value)];
      if (parameter.in === 'query')
        cases.push({
          ...base,
          label,
          query: [...validQuery(parameter.name), ...items.map((item): [string, string] => [parameter.name, item])],
          path: at,
          says: breakage.says,
        });
      else if (parameter.in === 'header') cases.push({ ...base, label, headers: { [parameter.name]: items.join(', ') }, path: at, says: breakage.says });
      // A path segment cannot be empty or hold a `/`; its bound is what can be broken.
      else if (parameter.in === 'path' && breakage.kind === 'too long')
        cases.push({ ...base, label, pathValues: { ...pathValues, [parameter.name]: items[0]! }, path: at, says: breakage.says });
    }
  }
  if (body && typeof baseBody === 'object' && baseBody !== null) {
    const properties = (body.properties ?? {}) as Record<string, Schema>;
    const allowed = Object.keys(properties);
    if (body.additionalProperties === false) {
      cases.push({
        ...base,
        label: 'body: unknown field',
        body: { ...baseBody, unknownField: 1 },
        path: '/unknownField',
        says: ['is not a field', ...allowed],
      });
    }
    for (const name of (body.required ?? []) as string[]) {
      const { [name]: _removed, ...rest } = baseBody as Record<string, unknown>;
      cases.push({ ...base, label: `body ${name}: missing`, body: rest, path: `/${name}`, says: ['is required'] });
    }
    for (const [name, schema] of Object.entries(properties)) {
      for (const breakage of breakages(schema, false)) {
        cases.push({
          ...base,
          label: `body ${name}: ${breakage.kind} (${asText(breakage.value).slice(0, 30)})`,
          body: { ...baseBody, [name]: breakage.value },
          path: `/${name}${breakage.at ?? ''}`,
          says: breakage.says,
        });
      }
    }
  }
  return cases;
}

const OPERATIONS = operationsOf(DOCUMENT).filter(
  (operation) => !OWN_ERROR_BODIES(operation.path) && (operation.parameters.length > 0 || operation.body?.mediaType === 'application/json'),
);

function expectPlainWords(response: TestResponse): void {
  for (const jargon of JARGON) expect(response.body, `"${jargon}" in ${response.body}`).not.toContain(jargon);
}

describe('every 400 of every operation, in words (generated from /openapi.json)', () => {
  const app = useTestApp();
  let caller: TestAccount;

  // Signup allows a few attempts an hour from one address, whatever they hold: each request comes from its own.
  let requests = 0;
  const remoteAddress = () => `10.${(++requests >> 16) & 255}.${(requests >> 8) & 255}.${requests & 255}`;

  const send = async (test: Case): Promise<TestResponse> => {
    caller ??= await app().account();
    const target = test.operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(test.pathValues[name] ?? 'x'));
    const query = test.query.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&');
    return app().request({
      method: test.operation.method,
      url: query ? `${target}?${query}` : target,
      key: caller.key,
      headers: test.headers,
      body: test.body,
      remoteAddress: remoteAddress(),
    });
  };

  it('covers the operations and the kinds of breakage it is about', () => {
    const labels = OPERATIONS.flatMap(casesOf).map((test) => `${test.operation.method} ${test.operation.path} ${test.label}`);
    for (const expected of [
      /^POST \/api\/v1\/resources body type: value outside its list/,
      /^POST \/api\/v1\/resources body: unknown field/,
      /^POST \/api\/v1\/resources body name: missing/,
      /^GET \/api\/v1\/resources query limit: above its range/,
      /^GET \/api\/v1\/events query type: refused by its pattern/,
      /^PATCH \/api\/v1\/resources\/\{id\} header if-match: refused by its pattern/,
      /^POST \/api\/v1\/keys body expiresInDays: wrong type/,
      /^POST \/api\/v1\/schedules body action: unknown type/,
      /^DELETE \/api\/v1\/keys\/\{id\} path id: too long/,
      /^POST \/api\/v1\/apps body redirectUris: too many items/,
    ]) {
      expect(
        labels.some((label) => expected.test(label)),
        String(expected),
      ).toBe(true);
    }
  });

  for (const operation of OPERATIONS) {
    const cases = casesOf(operation);
    it(`${operation.method} ${operation.path}: ${cases.length} broken requests, each a 400 naming its field and rule`, async () => {
      for (const test of cases) {
        const response = await send(test);
        const label = `${operation.method} ${operation.path} ${test.label}: ${response.body}`;
        expect(response.status, label).toBe(400);
        expectError(response, 400, 'invalid_request');
        expectPlainWords(response);
        const details: Array<{ path: string; message: string }> = response.json.error.details ?? [];
        // Only the broken field fails: the rest of the request is valid.
        for (const detail of details) expect(detail.path === test.path || detail.path.startsWith(`${test.path}/`), label).toBe(true);
        const named = details.filter((detail) => detail.path === test.path);
        expect(named.length, label).toBeGreaterThan(0);
        const said = named.map((detail) => detail.message).join(' | ');
        for (const fragment of test.says) expect(said, label).toContain(fragment);
        // The message says each detail as a sentence: the pointer, then what is wrong.
        for (const detail of details) expect(response.json.error.message, label).toContain(`${detail.path} ${detail.message}`);
      }
    });
  }

  const withJsonBody = OPERATIONS.filter((operation) => operation.body?.mediaType === 'application/json');
  it(`refuses a body that is not JSON, on each of ${withJsonBody.length} operations, saying where`, async () => {
    caller ??= await app().account();
    for (const operation of withJsonBody) {
      const url = operation.path.replace(/\{[^}]+\}/g, 'x');
      for (const [text, where] of [
        ['{"name": "x",}', 'position 13 (line 1, column 14)'],
        ['{\n  "name": tru\n}', ''],
        ['{"a":1}{}', 'position 7'],
      ] as const) {
        const response = await app().request({
          method: operation.method,
          url,
          key: caller.key,
          headers: { 'content-type': 'application/json' },
          body: text,
          remoteAddress: remoteAddress(),
        });
        expectError(response, 400, 'invalid_request');
        expectPlainWords(response);
        expect(response.json.error.message, `${operation.method} ${operation.path}`).toMatch(/^The body is not valid JSON: /);
        expect(response.json.error.message).toContain(where);
      }
      const array = await app().request({ method: operation.method, url, key: caller.key, body: [1], remoteAddress: remoteAddress() });
      expectError(array, 400, 'invalid_request');
      expect(array.json.error.details).toEqual([{ path: '/', message: 'must be an object' }]);
      const poisoned = await app().request({
        method: operation.method,
        url,
        key: caller.key,
        headers: { 'content-type': 'application/json' },
        body: '{"__proto__":{"a":1}}',
        remoteAddress: remoteAddress(),
      });
      expectError(poisoned, 400, 'invalid_request');
      expect(poisoned.json.error.message).toContain('__proto__');
    }
  });
});

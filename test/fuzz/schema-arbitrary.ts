// fast-check arbitraries from the JSON Schemas of the service's own OpenAPI document: values a
// schema accepts (as far as its keywords say; rules only the service knows may still refuse them),
// and values built to break it.
import fc from 'fast-check';

export type Schema = Record<string, any>;

export interface SchemaContext {
  /** Resolves `#/components/schemas/Name`. */
  resolve(ref: string): Schema;
  /** Values to prefer for a property of this name (real ids, a cron expression), mixed with generated ones. */
  hints: Record<string, fc.Arbitrary<unknown>>;
}

const FORMATS: Record<string, fc.Arbitrary<string>> = {
  'date-time': fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((date) => date.toISOString()),
  email: fc.emailAddress(),
  // Address literals only: a host name would make the webhook checks wait on DNS, which this machine lacks.
  uri: fc.constantFrom('https://8.8.8.8/hook', 'https://192.0.2.10/hook', 'http://127.0.0.1:9/callback', 'https://[2001:4860::8888]/x', 'ftp://1.1.1.1/'),
};

function stringArbitrary(schema: Schema): fc.Arbitrary<string> {
  const minLength: number = schema.minLength ?? 0;
  const maxLength: number = Math.min(schema.maxLength ?? 40, minLength + 60);
  if (schema.format && FORMATS[schema.format]) return FORMATS[schema.format]!;
  const sized = (text: string) => text.length >= minLength && text.length <= maxLength;
  if (schema.pattern) {
    try {
      return fc.stringMatching(new RegExp(schema.pattern)).filter(sized);
    } catch {
      // A pattern fast-check cannot generate from: plain strings, which the server may refuse.
    }
  }
  return fc.oneof(fc.string({ minLength, maxLength, unit: 'grapheme' }), fc.string({ minLength, maxLength, unit: 'binary' }));
}

function numberArbitrary(schema: Schema): fc.Arbitrary<number> {
  const integer = schema.type === 'integer';
  const min = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : integer ? -1_000_000 : -1e9);
  const max = schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - 1 : integer ? 1_000_000 : 1e9);
  return integer ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
}

/** Any JSON value, for schemas that allow one (`{}`, free `additionalProperties`). */
export const anyJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3 });

/** Values the schema describes. */
export function validValue(schema: Schema, context: SchemaContext, depth = 0): fc.Arbitrary<unknown> {
  if (schema.$ref) return validValue(context.resolve(schema.$ref), context, depth);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]));
  const alternatives = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (alternatives) return fc.oneof(...alternatives.map((alternative) => validValue(alternative, context, depth + 1)));
  if (schema.allOf) return validValue(Object.assign({}, ...(schema.allOf as Schema[])), context, depth);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      return stringArbitrary(schema);
    case 'integer':
    case 'number':
      return numberArbitrary(schema);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = schema.items ? validValue(schema.items, context, depth + 1) : anyJson;
      const constraints = { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 5, (schema.minItems ?? 0) + 5) };
      return schema.uniqueItems ? fc.uniqueArray(items, { ...constraints, selector: (value) => JSON.stringify(value) }) : fc.array(items, constraints);
    }
    case 'object':
      return objectArbitrary(schema, context, depth);
    default:
      return anyJson;
  }
}

function objectArbitrary(schema: Schema, context: SchemaContext, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = new Set<string>(schema.required ?? []);
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, property] of Object.entries(properties)) {
    const generated = validValue(property, context, depth + 1);
    const hint = context.hints[name];
    model[name] = hint ? fc.oneof({ arbitrary: hint, weight: 3 }, { arbitrary: generated, weight: 1 }) : generated;
  }
  const known = fc.record(model, { requiredKeys: [...required].filter((name) => name in model) });
  const free = schema.additionalProperties;
  if (Object.keys(properties).length === 0 && free !== false) {
    return fc.dictionary(
      fc.string({ minLength: 1, maxLength: 12 }),
      free && typeof free === 'object' && Object.keys(free).length > 0 ? validValue(free, context, depth + 1) : anyJson,
      { maxKeys: 4 },
    );
  }
  return known;
}

/** A value of another JSON type than the schema's, for a field that must refuse it. */
export function wrongTypeValue(schema: Schema): fc.Arbitrary<unknown> {
  const candidates: Array<[string, fc.Arbitrary<unknown>]> = [
    ['string', fc.string({ maxLength: 10 })],
    ['number', fc.double({ noNaN: true })],
    ['integer', fc.integer()],
    ['boolean', fc.boolean()],
    ['null', fc.constant(null)],
    ['array', fc.array(fc.integer(), { maxLength: 3 })],
    ['object', fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 })],
  ];
  const types = new Set<string>([schema.type].flat().filter(Boolean));
  if (types.has('number')) types.add('integer');
  const others = candidates.filter(([type]) => !types.has(type)).map(([, arbitrary]) => arbitrary);
  return fc.oneof(...others);
}

/** Values meant to hurt: huge, deep, odd text, numbers at the edges. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant('x'.repeat(200_000)),
  fc.constant('\u0000\u0001\u001b[31m\u2028\u2029\ufeff'),
  fc.constant('\ud800'),
  fc.constant('🙂'.repeat(5_000)),
  fc.constant('../../etc/passwd'),
  fc.constant("' OR 1=1 --"),
  fc.constant('%00%zz%E0%A4%A'),
  fc.constant('<script>alert(1)</script>'),
  fc.constant(Number.MAX_SAFE_INTEGER + 2),
  fc.constant(-0),
  fc.constant(1e308),
  fc.constant(5e-324),
  fc.constant(new Array(10_000).fill(0)),
  fc.constant(Object.fromEntries(Array.from({ length: 2_000 }, (_, index) => [`k${index}`, index]))),
  fc.constant(JSON.parse('{"__proto__":{"polluted":true}}')),
  fc.constant({ constructor: { prototype: { polluted: true } } }),
  fc.integer({ min: 20, max: 31 }).map((depth) => {
    let value: unknown = 1;
    for (let level = 0; level < depth; level++) value = level % 2 ? [value] : { k: value };
    return value;
  }),
);

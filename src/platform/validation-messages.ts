// What the validator found, said in words a client can act on (docs/decisions.md, "HTTP contract"):
// each Ajv keyword becomes a sentence made from the schema that failed (its bounds, its values, the
// fields it allows, its description), so no validator jargon ("must be equal to constant", "anyOf",
// a raw pattern) reaches a client. The validator is verbose (validation.ts): each error carries its
// schema, the schema around it and the value.
import type { ErrorObject } from 'ajv';
import type { ErrorDetail } from '../domain-errors.js';

type Schema = Record<string, unknown>;
type Failure = Pick<ErrorObject, 'keyword' | 'instancePath' | 'schemaPath' | 'params'> & {
  schema?: unknown;
  parentSchema?: Schema;
  data?: unknown;
};

/** The parts of a request the validator checks, as a client calls them. */
export const PART_NAMES: Readonly<Record<string, string>> = { body: 'body', querystring: 'query string', params: 'path', headers: 'headers' };

const TYPE_WORDS: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

const FORMAT_WORDS: Readonly<Record<string, string>> = {
  'date-time': 'a date and time in ISO 8601 with a time zone, such as 2026-11-20T10:00:00.000Z',
  date: 'a date such as 2026-11-20',
  time: 'a time such as 10:00:00Z',
  email: 'an e-mail address',
  uri: 'an absolute URI',
  uuid: 'a UUID',
};

/** "a, b or c" */
function either(words: readonly string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

/** A value as a list shows it: strings bare (`sensor`), anything else as JSON. */
const shown = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

const typeWords = (type: unknown) => either((Array.isArray(type) ? type : [type]).map((name) => TYPE_WORDS[String(name)] ?? String(name)));

/** A description written as a noun phrase ("An exact type, …"), to follow "must be". */
const asComplement = (description: string) => (/^[A-Z][a-z]/.test(description) ? description[0]!.toLowerCase() + description.slice(1) : description);

/** The literal values a schema allows, when it allows only a list of them (`const`, `enum`, or a union of those). */
function literals(schema: Schema): unknown[] | undefined {
  if ('const' in schema) return [schema.const];
  if (Array.isArray(schema.enum)) return schema.enum;
  const branches = schema.anyOf ?? schema.oneOf;
  if (!Array.isArray(branches)) return undefined;
  const values: unknown[] = [];
  for (const branch of branches as Schema[]) {
    const listed = literals(branch);
    if (listed === undefined) return undefined;
    values.push(...listed);
  }
  return values;
}

/** One alternative of a union, in a few words. */
function alternative(schema: Schema): string {
  const values = literals(schema);
  if (values !== undefined) return values.map(shown).join(', ');
  if (typeof schema.$ref === 'string') return `a ${schema.$ref.replace(/#.*$/, '')}`;
  if (typeof schema.format === 'string' && FORMAT_WORDS[schema.format]) return FORMAT_WORDS[schema.format]!;
  if (schema.type !== undefined) return typeWords(schema.type);
  return 'another form';
}

const constantOf = (schema: unknown): { value: unknown } | undefined =>
  typeof schema === 'object' && schema !== null && 'const' in schema ? { value: (schema as Schema).const } : undefined;

/** A union's object branches as the value of their constant `key`, when every branch has one (`type` of a schedule's action). */
function discriminated(branches: Schema[]): { key: string; values: unknown[] } | undefined {
  const properties = branches.map((branch) => (branch.properties ?? {}) as Record<string, unknown>);
  const key = Object.keys(properties[0] ?? {}).find((name) => properties.every((each) => constantOf(each[name]) !== undefined));
  return key === undefined ? undefined : { key, values: properties.map((each) => constantOf(each[key])!.value) };
}

/** `must be …` for a union: the values when it is a list of them, else each alternative's kind; its description after it. */
function unionMessage(union: Schema): string {
  const branches = (union.anyOf ?? union.oneOf ?? []) as Schema[];
  const values = literals(union);
  const said = values !== undefined ? `one of ${values.map(shown).join(', ')}` : either([...new Set(branches.map(alternative))]);
  return typeof union.description === 'string' ? `must be ${said} (${union.description})` : `must be ${said}`;
}

const characters = (count: number) => (count === 1 ? 'character' : 'characters');
const items = (count: number) => (count === 1 ? 'item' : 'items');
const fields = (count: number) => (count === 1 ? 'field' : 'fields');

/** A bound's words from the schema's pair of keywords: "1-100 characters", "at least 1 item", "at most 20 fields". */
function bounds(schema: Schema, min: string, max: string, unit: (count: number) => string): string {
  const low = typeof schema[min] === 'number' ? (schema[min] as number) : undefined;
  const high = typeof schema[max] === 'number' ? (schema[max] as number) : undefined;
  if (low !== undefined && high !== undefined) return `${low}-${high} ${unit(high)}`;
  if (low !== undefined) return `at least ${low} ${unit(low)}`;
  return `at most ${high} ${unit(high ?? 0)}`;
}

function lengthMessage(schema: Schema): string {
  if (schema.minLength === 1 && schema.maxLength === undefined) return 'must not be empty';
  return `must be ${bounds(schema, 'minLength', 'maxLength', characters)} long`;
}

function numberMessage(schema: Schema): string {
  const integer = schema.type === 'integer' ? 'an integer' : 'a number';
  const low = schema.minimum as number | undefined;
  const high = schema.maximum as number | undefined;
  if (low !== undefined && high !== undefined) return `must be ${integer} from ${low} to ${high}`;
  if (low !== undefined) return `must be ${integer} of ${low} or more`;
  if (high !== undefined) return `must be ${integer} of ${high} or less`;
  if (schema.exclusiveMinimum !== undefined) return `must be ${integer} greater than ${schema.exclusiveMinimum}`;
  return `must be ${integer} less than ${schema.exclusiveMaximum}`;
}

/** The key of a discriminator object that lists its tag's values (an OpenAPI extension; Ajv refuses a `mapping`). */
export const DISCRIMINATOR_VALUES = 'x-values';

const pointer = (base: string, key: unknown) => `${base}/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`;

/** The detail one failure makes, or undefined for one another failure already says (an `if`). */
function detailOf(failure: Failure): ErrorDetail | undefined {
  const { keyword, instancePath, params } = failure;
  const parent = failure.parentSchema ?? {};
  const at = instancePath || '/';
  switch (keyword) {
    case 'required':
      return { path: pointer(instancePath, params.missingProperty), message: 'is required' };
    case 'dependentRequired':
    case 'dependencies':
      return { path: pointer(instancePath, params.missingProperty), message: `is required when ${String(params.property)} is sent` };
    case 'additionalProperties': {
      const allowed = Object.keys((parent.properties ?? {}) as Schema);
      const where = instancePath === '' ? 'this request' : instancePath;
      return {
        path: pointer(instancePath, params.additionalProperty),
        message: allowed.length === 0 ? `is not a field of ${where}` : `is not a field of ${where}; allowed: ${allowed.join(', ')}`,
      };
    }
    case 'type':
      return { path: at, message: `must be ${typeWords(params.type)}` };
    case 'enum':
    case 'const': {
      const values = (literals(parent) ?? []).map(shown);
      return { path: at, message: values.length === 1 ? `must be ${values[0]}` : `must be one of ${values.join(', ')}` };
    }
    case 'anyOf':
    case 'oneOf':
      return { path: at, message: unionMessage(parent) };
    case 'discriminator': {
      // A union tagged by a property (Ajv's discriminator): its members are references, so the tag's
      // values travel in the discriminator object itself (DISCRIMINATOR_VALUES).
      const values = (failure.schema as Record<string, unknown> | undefined)?.[DISCRIMINATOR_VALUES];
      const listed = Array.isArray(values) ? `one of ${values.map(shown).join(', ')}` : 'a value this field allows';
      return { path: pointer(instancePath, params.tag), message: params.tagValue === undefined ? `is required: ${listed}` : `must be ${listed}` };
    }
    case 'pattern':
      return {
        path: at,
        message: typeof parent.description === 'string' ? `must be ${asComplement(parent.description)}` : 'has a character or a form this field does not allow',
      };
    case 'format':
      return { path: at, message: `must be ${FORMAT_WORDS[String(params.format)] ?? `in the ${String(params.format)} format`}` };
    case 'minLength':
    case 'maxLength':
      return { path: at, message: lengthMessage(parent) };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { path: at, message: numberMessage(parent) };
    case 'multipleOf':
      return { path: at, message: `must be a multiple of ${String(params.multipleOf)}` };
    case 'minItems':
    case 'maxItems':
      return { path: at, message: `must list ${bounds(parent, 'minItems', 'maxItems', items)}` };
    case 'uniqueItems':
      return { path: at, message: `must not list the same value twice (items ${String(params.j)} and ${String(params.i)} are the same)` };
    case 'minProperties':
    case 'maxProperties':
      return { path: at, message: `must have ${bounds(parent, 'minProperties', 'maxProperties', fields)}` };
    case 'propertyNames':
      return { path: pointer(instancePath, params.propertyName), message: 'is not an allowed field name' };
    case 'false schema':
    case 'not':
      return { path: at, message: 'is not allowed here' };
    case 'if':
      return undefined;
    default:
      return { path: at, message: 'is not valid here' };
  }
}

/**
 * The failures that say something of their own. A union reports every branch's failures and then
 * its own; a client needs one: the branch its discriminator names (a schedule action's `type`), or,
 * without one, the union itself said as its alternatives.
 */
function saying(failures: Failure[]): Array<{ failure: Failure; detail?: ErrorDetail }> {
  const dropped = new Set<Failure>();
  const replaced = new Map<Failure, ErrorDetail>();
  for (const union of failures) {
    if (union.keyword !== 'anyOf' && union.keyword !== 'oneOf') continue;
    const prefix = `${union.schemaPath}/`;
    const inner = failures.filter((failure) => failure !== union && failure.schemaPath.startsWith(prefix));
    const branches = (Array.isArray(union.schema) ? union.schema : []) as Schema[];
    const tags = discriminated(branches);
    const object = typeof union.data === 'object' && union.data !== null && !Array.isArray(union.data) ? (union.data as Record<string, unknown>) : undefined;
    const value = tags && object ? object[tags.key] : undefined;
    const chosen = tags && object ? tags.values.indexOf(value) : -1;
    if (chosen >= 0) {
      // The value names its branch: that branch's own failures say what is wrong.
      for (const failure of inner) if (!failure.schemaPath.startsWith(`${prefix}${chosen}/`)) dropped.add(failure);
      dropped.add(union);
      continue;
    }
    for (const failure of inner) dropped.add(failure);
    if (tags && object) {
      const listed = `one of ${tags.values.map(shown).join(', ')}`;
      replaced.set(union, { path: pointer(union.instancePath, tags.key), message: value === undefined ? `is required: ${listed}` : `must be ${listed}` });
    }
  }
  return failures.filter((failure) => !dropped.has(failure)).map((failure) => ({ failure, detail: replaced.get(failure) }));
}

/** Ajv errors as the error body's `details`: a JSON pointer to the field and what is wrong with it, in words. */
export function validationDetails(errors: readonly object[]): ErrorDetail[] {
  const details = saying(errors as Failure[]).flatMap(({ failure, detail }) => {
    const said = detail ?? detailOf(failure);
    return said ? [said] : [];
  });
  // Two rules can fail alike on one field (an empty name breaks its length and its pattern): list each once.
  const seen = new Set<string>();
  return details.filter((detail) => {
    const key = `${detail.path}\u0000${detail.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

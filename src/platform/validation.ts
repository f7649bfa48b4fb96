// Request validation: two Ajv instances, because bodies must be taken literally (no type
// coercion, unknown fields rejected) while query strings and path parameters arrive as text.
import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { FULL_VALIDATION_MAX_BYTES } from './request-limits.js';

// ajv-formats is CommonJS; its default export arrives wrapped under ES module interop.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

function createAjv(options: Options): Ajv {
  // unicode: false counts string lengths in UTF-16 code units, as the specification does. Ajv
  // still honours it but prints a deprecation notice through its logger, hence logger: false.
  // verbose: each error carries its schema, so that validation-messages.ts can say it in words
  // (only failing requests build error objects; a valid one runs the same code). discriminator: a
  // union tagged by a property (a batch's `op`) is checked against the member the tag names only.
  const ajv = new Ajv({
    strict: false,
    removeAdditional: false,
    useDefaults: true,
    unicode: false,
    logger: false,
    verbose: true,
    discriminator: true,
    ...options,
  });
  addFormats(ajv);
  return ajv;
}

/** The raw length of each parsed JSON body (objects and arrays), for the validator to size its work. */
const bodyLengths = new WeakMap<object, number>();

export function noteBodyLength(body: unknown, length: number): void {
  if (typeof body === 'object' && body !== null) bodyLengths.set(body, length);
}

type Validate = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

/**
 * A validator that stops at the first failure, and only for a request small enough to make it
 * cheap lists every failure: with every error collected, a 600 KB body of 200,000 wrong items
 * made 200,000 error objects. The listing validator is compiled when a request first fails.
 */
function boundedValidator(compile: (allErrors: boolean) => Validate, part: string): Validate {
  const firstFailure = compile(false);
  let everyFailure: Validate | undefined;
  const validate: Validate = (data) => {
    if (firstFailure(data)) return true;
    const listable = part !== 'body' || typeof data !== 'object' || data === null || (bodyLengths.get(data) ?? 0) <= FULL_VALIDATION_MAX_BYTES;
    if (listable) {
      everyFailure ??= compile(true);
      everyFailure(data);
      validate.errors = everyFailure.errors;
    } else {
      validate.errors = firstFailure.errors;
    }
    return false;
  };
  return validate;
}

export function installValidation(app: FastifyInstance): void {
  const ajv = {
    body: { first: createAjv({ coerceTypes: false }), every: createAjv({ coerceTypes: false, allErrors: true }) },
    text: { first: createAjv({ coerceTypes: 'array' }), every: createAjv({ coerceTypes: 'array', allErrors: true }) },
  };
  const instances = [ajv.body.first, ajv.body.every, ajv.text.first, ajv.text.every];
  app.setValidatorCompiler(({ schema, httpPart }) => {
    // The shared schemas (app.addSchema, before any route) that a request schema may refer to: a
    // compiler of one's own is not given them as Fastify's is.
    for (const shared of Object.values(app.getSchemas()) as Array<{ $id: string }>) {
      for (const instance of instances) if (!instance.getSchema(shared.$id)) instance.addSchema(shared);
    }
    const family = httpPart === 'body' ? ajv.body : ajv.text;
    return boundedValidator((allErrors) => (allErrors ? family.every : family.first).compile(schema), httpPart ?? 'body');
  });
}

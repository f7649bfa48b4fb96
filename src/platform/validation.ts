// Request validation: two Ajv instances, because bodies must be taken literally (no type
// coercion, unknown fields rejected) while query strings and path parameters arrive as text.
import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, FastifySchemaValidationError } from 'fastify';
import type { ErrorDetail } from './errors.js';

// ajv-formats is CommonJS; its default export arrives wrapped under ES module interop.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

function createAjv(options: Options): Ajv {
  // unicode: false counts string lengths in UTF-16 code units, as the specification does. Ajv
  // still honours it but prints a deprecation notice through its logger, hence logger: false.
  const ajv = new Ajv({ allErrors: true, strict: false, removeAdditional: false, useDefaults: true, unicode: false, logger: false, ...options });
  addFormats(ajv);
  return ajv;
}

export function installValidation(app: FastifyInstance): void {
  const bodyAjv = createAjv({ coerceTypes: false });
  const textAjv = createAjv({ coerceTypes: 'array' });
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : textAjv).compile(schema));
}

/** Ajv errors as the error body's `details`: a JSON pointer to the field and what is wrong with it. */
export function validationDetails(errors: FastifySchemaValidationError[]): ErrorDetail[] {
  const details = errors.map((error): ErrorDetail => {
    const { instancePath, params, message } = error as ErrorObject;
    if (error.keyword === 'required') return { path: `${instancePath}/${String(params.missingProperty)}`, message: 'is required' };
    if (error.keyword === 'additionalProperties') {
      return { path: `${instancePath}/${String(params.additionalProperty)}`, message: 'is not an allowed field' };
    }
    return { path: instancePath || '/', message: message ?? 'is invalid' };
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

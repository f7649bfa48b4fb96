// Schemas shared by every area; registered once as OpenAPI components and referenced by `$id`.
import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';
import { CUT_OFF_REASONS, type CutOffReason } from './credential.js';
import { ERROR_CODES } from '../domain-errors.js';

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC timestamp with milliseconds' });

/**
 * Why the service stopped a webhook or schedule: the credential it acted on ended. Typed by hand:
 * Static cannot read the literals' union out of a mapped array.
 */
export const DisabledReason = Type.Unsafe<CutOffReason | null>(
  Type.Union([...CUT_OFF_REASONS.map((reason) => Type.Literal(reason)), Type.Null()], {
    description: 'Why the service disabled it: the credential that authorized it was revoked or expired (enable it again to resume); null otherwise',
  }),
);

export const ErrorSchema = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String({ description: `Stable machine-readable code, one of the closed set: ${ERROR_CODES.join(', ')}` }),
        message: Type.String(),
        requestId: Type.String(),
        details: Type.Optional(
          Type.Array(
            Type.Object(
              {
                path: Type.String({ description: 'JSON pointer to the offending field: `/name` in the body, `/limit` in the query string' }),
                message: Type.String({ description: 'What is wrong with it, with the allowed values or range where there are few' }),
              },
              { additionalProperties: true },
            ),
          ),
        ),
      },
      { additionalProperties: false },
    ),
  },
  { $id: 'Error', additionalProperties: false, description: 'The body of every error response' },
);

const CONTROL = '\\u0000-\\u001f\\u007f-\\u009f';
const DISPLAY_NAME_PATTERN = `^[^${CONTROL}]*[^\\s${CONTROL}][^${CONTROL}]*$`;
const DISPLAY_NAME = new RegExp(DISPLAY_NAME_PATTERN, 'u');

/**
 * A name people give a record: 1-`maxLength` UTF-16 code units, no control characters (C0, DEL,
 * C1), not only white space. The middle class excludes white space as well as control characters,
 * so a control character can never be the one required non-blank character.
 */
export function DisplayName(maxLength = 100) {
  // The description is also what a client is told when the pattern refuses a name (validation-messages.ts).
  return Type.String({
    minLength: 1,
    maxLength,
    pattern: DISPLAY_NAME_PATTERN,
    description: `1-${maxLength} characters, not only white space, and no control characters`,
  });
}

/** The DisplayName rule, for names that arrive outside HTTP (the operator CLI). */
export function isDisplayName(value: string, maxLength = 100): boolean {
  return value.length >= 1 && value.length <= maxLength && DISPLAY_NAME.test(value);
}

/**
 * A reference to a registered component schema, e.g. ref('Error'). Given the schema itself, the
 * reference has its static type, so that a type derived with `Static` from a schema that refers to
 * another is typed (a reference by name is `unknown` to `Static`).
 */
export function ref(id: string): TSchema;
export function ref<T extends TSchema & { $id?: string }>(schema: T): TUnsafe<Static<T>>;
export function ref(target: string | (TSchema & { $id?: string })): TSchema {
  const id = typeof target === 'string' ? target : target.$id;
  if (id === undefined) throw new Error('ref() needs a schema with an $id');
  return Type.Unsafe({ $ref: `${id}#` });
}

/** Path parameter `{id}` of a record. */
export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

export const NoContent = Type.Null({ description: 'No content' });

/** Response headers documented once, as components (platform/openapi.ts), that a route may name. */
export type DocumentedHeader = 'ETag' | 'Accept-Ranges' | 'Content-Disposition' | 'Content-Range';

/**
 * A response schema that also names headers of its own for the OpenAPI document (@fastify/swagger
 * reads `headers`; the serializer ignores it). openapi.ts completes them with the shared ones.
 */
export function withHeaders<T extends object>(schema: T, ...names: DocumentedHeader[]): T {
  const own = (schema as { headers?: Record<string, unknown> }).headers;
  return { ...schema, headers: { ...own, ...Object.fromEntries(names.map((name) => [name, { type: 'string' }])) } };
}

/**
 * The content type Fastify gives serialized JSON. A route that builds its JSON itself (splicing in
 * stored JSON text rather than parsing and re-serializing it) sends its string with this type.
 */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

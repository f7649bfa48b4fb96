// POST /api/v1/batch: its operations, each a component of the OpenAPI document, and the union of
// them that `op` tells apart (a discriminator, so that validation speaks of the operation sent).
import { Type, type Static } from 'typebox';
import { ref } from '../../platform/schemas.js';
import { DISCRIMINATOR_VALUES } from '../../platform/validation-messages.js';
import { CreateResourceFields, UpdateResourceFields } from '../resources/schemas.js';
import { PublishFields } from '../events/routes.js';

/** The most operations in one batch, and the largest body of one (api-decisions §12). */
export const BATCH_MAX_OPERATIONS = 1000;
export const BATCH_BODY_LIMIT = 4 * 1024 * 1024;
/** A batch counts against the rate allowance as one request per this many operations, rounded up. */
export const OPERATIONS_PER_REQUEST = 100;

const Id = Type.String({ minLength: 1, maxLength: 100 });
const IfMatch = Type.Integer({ minimum: 1, description: 'The version last read: the operation fails with 412 unless the resource is still at it' });
const operation = <Op extends string, Fields extends Record<string, import('typebox').TSchema>>(id: string, op: Op, fields: Fields, description: string) =>
  Type.Object({ op: Type.Literal(op), ...fields }, { $id: id, additionalProperties: false, description });

const BatchCreate = operation('BatchCreate', 'create', CreateResourceFields, 'Create a resource (as POST /api/v1/resources)');
const BatchUpdate = operation(
  'BatchUpdate',
  'update',
  { id: Id, ifMatch: Type.Optional(IfMatch), ...UpdateResourceFields },
  'Change a resource (as PATCH /api/v1/resources/{id})',
);
const BatchDelete = operation('BatchDelete', 'delete', { id: Id, ifMatch: Type.Optional(IfMatch) }, 'Delete a resource (as DELETE /api/v1/resources/{id})');
const BatchPublish = operation('BatchPublish', 'publish', PublishFields, 'Publish a custom event (as POST /api/v1/events)');

export type BatchOperation = Static<typeof BatchCreate> | Static<typeof BatchUpdate> | Static<typeof BatchDelete> | Static<typeof BatchPublish>;
export type OperationName = BatchOperation['op'];

const OPERATIONS = [BatchCreate, BatchUpdate, BatchDelete, BatchPublish];
const BatchOperationSchema = Type.Unsafe<BatchOperation>({
  $id: 'BatchOperation',
  description: 'One operation of a batch; `op` says which',
  oneOf: OPERATIONS.map((schema) => ref(schema)),
  discriminator: { propertyName: 'op', [DISCRIMINATOR_VALUES]: OPERATIONS.map((schema) => schema.properties.op.const) },
});

export const BatchBody = Type.Object(
  { operations: Type.Array(ref(BatchOperationSchema), { minItems: 1, maxItems: BATCH_MAX_OPERATIONS }) },
  { additionalProperties: false },
);

const result = <Op extends OperationName>(id: string, op: Op, status: number, fields: Record<string, import('typebox').TSchema>) =>
  Type.Object({ op: Type.Literal(op), status: Type.Literal(status), ...fields }, { $id: id });
const RESULTS = [
  result('BatchCreated', 'create', 201, { resource: ref('Resource') }),
  result('BatchUpdated', 'update', 200, { resource: ref('Resource') }),
  result('BatchDeleted', 'delete', 204, {}),
  result('BatchPublished', 'publish', 201, { event: ref('CustomEvent') }),
];
const BatchResultSchema = Type.Unsafe({
  $id: 'BatchResult',
  description: "One operation's result, in the order of the operations",
  oneOf: RESULTS.map((schema) => ref(schema)),
  discriminator: { propertyName: 'op', [DISCRIMINATOR_VALUES]: RESULTS.map((schema) => schema.properties.op.const) },
});
const BatchResponse = Type.Object(
  {
    results: Type.Array(ref(BatchResultSchema)),
    cursor: Type.Integer({ description: 'The id of the last event the batch wrote: its events are the ones up to it, one per operation' }),
  },
  { $id: 'BatchResponse' },
);

export const batchSchemas = [...OPERATIONS, BatchOperationSchema, ...RESULTS, BatchResultSchema, BatchResponse];

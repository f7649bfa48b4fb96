// POST /api/v1/batch (api-decisions §12): up to 1,000 writes in one request, all or nothing.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError } from 'fastify';
import { credentialOf } from '../../platform/access.js';
import { hasScopes } from '../../platform/credential.js';
import { DomainError, insufficientScope, type ErrorDetail } from '../../domain-errors.js';
import { errorResponse } from '../../platform/openapi-responses.js';
import { ref } from '../../platform/schemas.js';
import { outcomeRecordOf } from '../../platform/idempotency.js';
import { PART_NAMES, validationDetails } from '../../platform/validation-messages.js';
import type { Scope } from '../../platform/scopes.js';
import { eventJson } from '../events/event.js';
import type { Capability } from '../system/capability.js';
import { BATCH_BODY_LIMIT, BATCH_MAX_OPERATIONS, BatchBody, OPERATIONS_PER_REQUEST, type BatchOperation, type OperationName } from './schemas.js';
import { MAX_INVALID_LISTED, type BatchOutcome, type BatchService } from './service.js';

export { batchSchemas } from './schemas.js';

/** The scope each operation needs: its own route's. */
const SCOPE_OF: Readonly<Record<OperationName, Scope>> = {
  create: 'resources:write',
  update: 'resources:write',
  delete: 'resources:write',
  publish: 'events:write',
};

/** The body of a batch's answer, laid out as its schema (BatchResponse) says, from JSON the events already hold. */
function batchJson({ results, cursor }: BatchOutcome): string {
  const parts = results.map((result) => {
    const head = `{"op":"${result.op}","status":${result.status}`;
    if (result.op === 'delete') return `${head}}`;
    if (result.op === 'publish') return `${head},"event":${eventJson(result.event)}}`;
    return `${head},"resource":${JSON.stringify(result.resource)}}`;
  });
  return `{"results":[${parts.join(',')}],"cursor":${cursor}}`;
}

/** The validator's findings as the batch's refusal: each invalid operation's, at most MAX_INVALID_LISTED of them. */
function invalidBatch(error: FastifyError): DomainError {
  const details: ErrorDetail[] = [];
  const operations = new Set<number>();
  for (const detail of validationDetails(error.validation ?? [])) {
    const index = /^\/operations\/(\d+)(?:\/|$)/.exec(detail.path)?.[1];
    if (index === undefined) {
      details.push(detail);
      continue;
    }
    if (!operations.has(Number(index)) && operations.size === MAX_INVALID_LISTED) continue;
    operations.add(Number(index));
    details.push({ ...detail, index: Number(index) });
  }
  const part = PART_NAMES[error.validationContext ?? ''] ?? 'request';
  return new DomainError('invalid_request', `Invalid ${part}: ${details.map((detail) => `${detail.path} ${detail.message}`).join('; ')}`, details);
}

export const batchRoutes: FastifyPluginAsyncTypebox<{ batches: BatchService }> = async (app, { batches }) => {
  app.post(
    '/api/v1/batch',
    {
      // Each operation's scope is checked once the body is read: every one before anything runs.
      config: {
        auth: { scopes: [] },
        requestsCounted: (body) => Math.ceil(((body as { operations?: unknown[] })?.operations?.length ?? 1) / OPERATIONS_PER_REQUEST),
        outcome: { status: 200, payload: batchJson },
      },
      bodyLimit: BATCH_BODY_LIMIT,
      attachValidation: true,
      schema: {
        operationId: 'batch',
        summary: 'Write up to 1,000 operations at once, all or nothing',
        description:
          'Creates, updates and deletes resources and publishes custom events in one request: every operation is checked first, then all are written in order, one event each with consecutive ids, or none when one fails. A refusal has the status of the first failing operation, and its `details` name each operation by `index`. Each operation needs the scope of its own route (`resources:write`, `events:write`). Counts as one request per 100 operations against the rate limit.',
        tags: ['batch'],
        body: BatchBody,
        response: {
          200: ref('BatchResponse'),
          403: errorResponse('insufficient_scope', 'the credential lacks the scope of one of the operations (resources:write, events:write)'),
          404: errorResponse('not_found', 'an operation names a resource that does not exist; `details[0].index` says which'),
          412: errorResponse('precondition_failed', "an operation's ifMatch is not the resource's version; `details[0].index` says which"),
        },
      },
    },
    async (request) => {
      if (request.validationError) throw invalidBatch(request.validationError as FastifyError);
      const credential = credentialOf(request);
      const operations = request.body.operations as BatchOperation[];
      const needed = [...new Set(operations.map((operation) => SCOPE_OF[operation.op]))];
      if (!hasScopes(credential, needed)) throw insufficientScope(needed);
      return batches.run(credential.accountId, operations, outcomeRecordOf(request));
    },
  );
};

export function batchCapability(): Capability {
  return {
    feature: {
      name: 'batch',
      description: 'Up to 1,000 creates, updates, deletes and custom events in one request, all or nothing, with consecutive event ids',
      maxOperations: BATCH_MAX_OPERATIONS,
      maxBodyBytes: BATCH_BODY_LIMIT,
      operationsPerRateLimitedRequest: OPERATIONS_PER_REQUEST,
    },
    limits: { batchOperations: BATCH_MAX_OPERATIONS },
  };
}

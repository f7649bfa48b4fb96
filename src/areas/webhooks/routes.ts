// Webhook management and delivery history.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { outcomeRecordOf } from '../../platform/idempotency.js';
import { errorResponse } from '../../platform/openapi-responses.js';
import { IdParams, NoContent, ref } from '../../platform/schemas.js';
import { MAX_WEBHOOKS_PER_ACCOUNT, type WebhooksService } from './service.js';
import { HISTORY_KEPT, QUEUE_CAP } from './resends.js';
import { MAX_ATTEMPTS, MAX_RETRY_AFTER_SECONDS, MIN_FAILED_TO_DISABLE } from './attempts.js';
import { RESPONSE_EXCERPT_BYTES } from './sender.js';
import { CreateWebhookBody, DeliveriesQuery, RecoverBody, ReplayBody, UpdateWebhookBody } from './schemas.js';
import { SIGNATURE_HEADER, STANDARD_HEADERS } from './signing.js';
import type { Capability } from '../system/capability.js';
import type { Config } from '../../config.js';

export { webhookSchemas } from './schemas.js';

export const webhookRoutes: FastifyPluginAsyncTypebox<{ webhooks: WebhooksService }> = async (app, { webhooks }) => {
  const { resends } = webhooks;
  const manage = { auth: { scopes: ['webhooks:manage' as const] } };
  const manageAndRead = { auth: { scopes: ['webhooks:manage' as const, 'events:read' as const] } };
  const WebhookParams = IdParams;

  app.post(
    '/api/v1/webhooks',
    {
      config: { ...manageAndRead, outcome: { status: 201, secret: true } },
      schema: {
        operationId: 'createWebhook',
        summary: 'Create a webhook',
        tags: ['webhooks'],
        body: CreateWebhookBody,
        response: { 201: ref('WebhookWithSecret'), 409: errorResponse('conflict', `the account has ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks`) },
      },
    },
    async (request) => webhooks.create(credentialOf(request), request.body, outcomeRecordOf(request)),
  );

  app.get(
    '/api/v1/webhooks',
    {
      config: manage,
      schema: {
        operationId: 'listWebhooks',
        summary: 'List webhooks',
        tags: ['webhooks'],
        response: { 200: Type.Object({ data: Type.Array(ref('Webhook')) }) },
      },
    },
    async (request) => ({ data: await webhooks.list(credentialOf(request).accountId) }),
  );

  app.get(
    '/api/v1/webhooks/:id',
    {
      config: manage,
      schema: { operationId: 'getWebhook', summary: 'Get a webhook', tags: ['webhooks'], params: WebhookParams, response: { 200: ref('Webhook') } },
    },
    async (request) => webhooks.get(credentialOf(request).accountId, request.params.id),
  );

  app.patch(
    '/api/v1/webhooks/:id',
    {
      config: { ...manage, outcome: { status: 200 } },
      schema: {
        operationId: 'updateWebhook',
        summary: 'Change a webhook (pausing needs webhooks:manage; editing name, url or events and enabling also events:read)',
        tags: ['webhooks'],
        params: WebhookParams,
        body: UpdateWebhookBody,
        response: { 200: ref('Webhook') },
      },
    },
    async (request) => webhooks.update(credentialOf(request), request.params.id, request.body, outcomeRecordOf(request)),
  );

  app.delete(
    '/api/v1/webhooks/:id',
    {
      config: { ...manage, outcome: { status: 204, payload: () => undefined } },
      schema: { operationId: 'deleteWebhook', summary: 'Delete a webhook', tags: ['webhooks'], params: WebhookParams, response: { 204: NoContent } },
    },
    async (request) => webhooks.delete(credentialOf(request), request.params.id, outcomeRecordOf(request)),
  );

  app.get(
    '/api/v1/webhooks/:id/deliveries',
    {
      config: manage,
      schema: {
        operationId: 'listWebhookDeliveries',
        summary: `Deliveries, newest first (the pending ones and the latest ${HISTORY_KEPT} completed): each attempt with the headers sent and the start of the answer`,
        tags: ['webhooks'],
        params: WebhookParams,
        querystring: DeliveriesQuery,
        response: { 200: ref('WebhookDeliveryPage') },
      },
    },
    async (request) => resends.deliveries(credentialOf(request).accountId, request.params.id, request.query),
  );

  const queuedConflict = errorResponse('conflict', `the webhook's credential ended (enable it again first), or its queue is full (${QUEUE_CAP} pending)`);

  app.post(
    '/api/v1/webhooks/:id/deliveries/:deliveryId/retry',
    {
      config: { ...manage, outcome: { status: 200 } },
      schema: {
        operationId: 'retryWebhookDelivery',
        summary: 'Queue a completed delivery again',
        tags: ['webhooks'],
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }), deliveryId: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: {
          200: ref('WebhookDelivery'),
          409: errorResponse(
            'conflict',
            `the webhook's credential ended (enable it again first), its queue is full (${QUEUE_CAP} pending), or the delivery is pending already`,
          ),
        },
      },
    },
    async (request) => resends.retry(credentialOf(request).accountId, request.params.id, request.params.deliveryId, outcomeRecordOf(request)),
  );

  app.post(
    '/api/v1/webhooks/:id/test',
    {
      config: { ...manage, outcome: { status: 202 } },
      schema: {
        operationId: 'testWebhook',
        summary: 'Send a webhook.test delivery (event id 0, not an event of the log), even while the webhook is disabled',
        tags: ['webhooks'],
        params: WebhookParams,
        response: { 202: ref('WebhookTestDelivery'), 409: queuedConflict },
      },
    },
    async (request, reply) => reply.code(202).send(await resends.test(credentialOf(request).accountId, request.params.id, outcomeRecordOf(request))),
  );

  app.post(
    '/api/v1/webhooks/:id/replay',
    {
      // It sends the events' contents again, as enabling does.
      config: { ...manageAndRead, outcome: { status: 202 } },
      schema: {
        operationId: 'replayWebhook',
        summary: `Deliver again every retained event in (after, until] the webhook subscribes to, as new deliveries (at most ${QUEUE_CAP} pending)`,
        tags: ['webhooks'],
        params: WebhookParams,
        body: ReplayBody,
        response: { 202: ref('WebhookReplay'), 409: queuedConflict, 410: errorResponse('cursor_expired') },
      },
    },
    async (request, reply) =>
      reply.code(202).send(await resends.replay(credentialOf(request).accountId, request.params.id, request.body, outcomeRecordOf(request))),
  );

  app.post(
    '/api/v1/webhooks/:id/recover',
    {
      config: { ...manage, outcome: { status: 202 } },
      schema: {
        operationId: 'recoverWebhook',
        summary: 'Send again, as new deliveries, every delivery that ended failed at or after a time',
        tags: ['webhooks'],
        params: WebhookParams,
        body: RecoverBody,
        response: { 202: ref('WebhookRecover'), 409: queuedConflict },
      },
    },
    async (request, reply) =>
      reply.code(202).send(await resends.recover(credentialOf(request).accountId, request.params.id, request.body.since, outcomeRecordOf(request))),
  );

  app.post(
    '/api/v1/webhooks/:id/rotate-secret',
    {
      // The secret lets its holder forge deliveries of the events it cannot read otherwise.
      config: { ...manageAndRead, outcome: { status: 200, secret: true } },
      schema: {
        operationId: 'rotateWebhookSecret',
        summary: 'Replace the signing secret',
        tags: ['webhooks'],
        params: WebhookParams,
        response: { 200: ref('WebhookWithSecret') },
      },
    },
    async (request) => webhooks.rotateSecret(credentialOf(request), request.params.id, outcomeRecordOf(request)),
  );
};

export function webhooksCapability(config: Config): Capability {
  return {
    feature: {
      name: 'webhooks',
      description: 'Signed event delivery to HTTPS receivers, at least once',
      maxPerAccount: MAX_WEBHOOKS_PER_ACCOUNT,
      queueCap: QUEUE_CAP,
      historyKept: HISTORY_KEPT,
      maxAttempts: MAX_ATTEMPTS,
      retryScheduleSeconds: config.webhookRetrySchedule,
      timeoutSeconds: config.webhookTimeoutMs / 1000,
      signatureHeader: SIGNATURE_HEADER,
      standardWebhooksHeaders: [...STANDARD_HEADERS],
      tools: ['test', 'replay', 'recover'],
      responseExcerptBytes: RESPONSE_EXCERPT_BYTES,
      maxRetryAfterSeconds: MAX_RETRY_AFTER_SECONDS,
      disableAfterHours: config.webhookDisableAfterHours,
      minFailedToDisable: MIN_FAILED_TO_DISABLE,
    },
  };
}

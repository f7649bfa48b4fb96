// Webhook management and delivery history.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { outcomeRecordOf } from '../../platform/idempotency.js';
import { errorResponse } from '../../platform/openapi-responses.js';
import { IdParams, NoContent, ref } from '../../platform/schemas.js';
import { HISTORY_KEPT, MAX_ATTEMPTS, MAX_WEBHOOKS_PER_ACCOUNT, QUEUE_CAP, type WebhooksService } from './service.js';
import { CreateWebhookBody, UpdateWebhookBody } from './schemas.js';
import { SIGNATURE_HEADER } from './signing.js';
import type { Capability } from '../system/capability.js';
import type { Config } from '../../config.js';

export { webhookSchemas } from './schemas.js';

export const webhookRoutes: FastifyPluginAsyncTypebox<{ webhooks: WebhooksService }> = async (app, { webhooks }) => {
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
        summary: 'Delivery attempts and results, newest first (pending, and the latest 500 completed)',
        tags: ['webhooks'],
        params: WebhookParams,
        response: { 200: Type.Object({ data: Type.Array(ref('WebhookDelivery')) }) },
      },
    },
    async (request) => ({ data: await webhooks.deliveries(credentialOf(request).accountId, request.params.id) }),
  );

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
            `the webhook was disabled by the service, its queue is full (${QUEUE_CAP} pending), or the delivery is pending already`,
          ),
        },
      },
    },
    async (request) => webhooks.retry(credentialOf(request).accountId, request.params.id, request.params.deliveryId, outcomeRecordOf(request)),
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
    },
  };
}

// The same receiver with Fastify: a content-type parser that keeps the body as a Buffer (scoped
// to this plugin), so the signature is checked over the bytes that were sent.
//   WEBHOOK_SECRET=whsec_… PORT=3000 node examples/webhook-receiver-fastify.mjs
import Fastify from 'fastify';
import { verifyWebhook, WebhookVerificationError } from '@devdata/client';

const app = Fastify();
await app.register(async (webhooks) => {
  webhooks.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  webhooks.post('/webhooks', async (request, reply) => {
    try {
      const event = await verifyWebhook(request.body, request.headers['x-service-signature'], process.env.WEBHOOK_SECRET);
      console.log(`verified #${event.id} ${event.type}`);
      return reply.code(204).send();
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      console.log(`refused: ${error.code}`);
      return reply.code(400).send(error.message);
    }
  });
});
const address = await app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' });
console.log(`listening on ${address}/webhooks`);

// A webhook receiver on Node's own http module. The signature covers the raw bytes of the body:
// read them whole and verify them before parsing anything.
//   WEBHOOK_SECRET=whsec_… PORT=3000 node examples/webhook-receiver.mjs
// Try it with `devdata-client listen --forward-to http://localhost:3000/webhooks --secret $WEBHOOK_SECRET`.
import { createServer } from 'node:http';
import { verifyWebhook, WebhookVerificationError } from '@devdata/client';

const secret = process.env.WEBHOOK_SECRET;
const seen = new Set(); // X-Service-Delivery-Id values already handled: a delivery may come twice.

const server = createServer(async (request, response) => {
  if (request.method !== 'POST' || request.url !== '/webhooks') return response.writeHead(404).end();
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  const rawBody = Buffer.concat(chunks);
  try {
    const event = await verifyWebhook(rawBody, request.headers['x-service-signature'], secret);
    const deliveryId = request.headers['x-service-delivery-id'];
    if (!seen.has(deliveryId)) {
      seen.add(deliveryId);
      console.log(`verified #${event.id} ${event.type}`);
    }
    response.writeHead(204).end();
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error;
    console.log(`refused: ${error.code}`);
    response.writeHead(400).end(error.message);
  }
});
server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}/webhooks`));

// The same receiver with Express: express.raw() keeps the body as bytes for this route. A JSON
// body parser in front of it would re-serialize the body and break the signature.
//   WEBHOOK_SECRET=whsec_… PORT=3000 node examples/webhook-receiver-express.mjs
import express from 'express';
import { verifyWebhook, WebhookVerificationError } from '@devdata/client';

const app = express();
app.post('/webhooks', express.raw({ type: 'application/json' }), async (request, response) => {
  try {
    const event = await verifyWebhook(request.body, request.get('x-service-signature'), process.env.WEBHOOK_SECRET);
    console.log(`verified #${event.id} ${event.type}`);
    response.sendStatus(204);
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error;
    console.log(`refused: ${error.code}`);
    response.status(400).send(error.message);
  }
});
const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}/webhooks`));

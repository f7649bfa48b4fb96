// The Standard Webhooks example of docs/webhook-verification.md, run as written against real
// deliveries of the server to a loopback receiver: a genuine one verifies, an altered body, another
// secret and a changed id do not.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/processes.js';
import { useTestApp } from '../support/app.js';
import { until } from '../support/wait.js';
import { Receiver } from './support.js';

type VerifyStandard = (rawBody: string, headers: Record<string, unknown>, secret: string) => unknown;

describe('the Standard Webhooks example of docs/webhook-verification.md', () => {
  const app = useTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  const receiver = new Receiver();
  const directory = mkdtempSync(join(ROOT, 'node_modules', '.devdata-standard-docs-'));
  let verifyStandard: VerifyStandard;

  beforeAll(async () => {
    await receiver.start();
    const document = readFileSync(join(ROOT, 'docs', 'webhook-verification.md'), 'utf8');
    const code = /```js\n([\s\S]*?)```/.exec(document.slice(document.indexOf('## Standard Webhooks libraries')))?.[1];
    expect(code, 'the js block under "Standard Webhooks libraries"').toBeDefined();
    // Inside node_modules' parent, so the example's `import 'standardwebhooks'` resolves as a receiver's would.
    const file = join(directory, 'verify-standard.mjs');
    writeFileSync(file, code!);
    verifyStandard = ((await import(pathToFileURL(file).href)) as { verifyStandard: VerifyStandard }).verifyStandard;
  });
  afterAll(async () => {
    await receiver.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('verifies a real delivery and a test delivery, and refuses altered ones', async () => {
    const caller = await app().account();
    const created = await app().request({
      method: 'POST',
      url: '/api/v1/webhooks',
      key: caller.key,
      body: { name: 'docs', url: receiver.url('/ok?standard-docs'), events: ['custom.*'] },
    });
    const { id, secret } = created.json;
    await app().request({ method: 'POST', url: '/api/v1/events', key: caller.key, body: { type: 'custom.docs', data: { text: 'Küche ✓' } } });
    await app().request({ method: 'POST', url: `/api/v1/webhooks/${id}/test`, key: caller.key });
    await until(() => receiver.on('/ok?standard-docs').length === 2, 'both deliveries');
    const [event, test] = receiver.on('/ok?standard-docs');
    expect(verifyStandard(event!.rawBody, event!.headers, secret)).toMatchObject({ type: 'custom.docs', data: { text: 'Küche ✓' } });
    expect(verifyStandard(test!.rawBody, test!.headers, secret)).toMatchObject({ id: 0, type: 'webhook.test', data: { webhookId: id } });
    expect(() => verifyStandard(event!.rawBody.replace('Küche', 'Kuche'), event!.headers, secret)).toThrow();
    expect(() => verifyStandard(event!.rawBody, event!.headers, `whsec_${Buffer.alloc(32, 1).toString('base64')}`)).toThrow();
    expect(() => verifyStandard(event!.rawBody, { ...event!.headers, 'webhook-id': test!.headers['webhook-id'] }, secret)).toThrow();
  });
});

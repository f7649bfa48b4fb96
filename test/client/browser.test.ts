// @devdata/client in a real browser (Chromium), loaded as plain ES modules from another origin
// than the API's: typed calls, the error type, the live stream with its credential in a header,
// and webhook signatures (both schemes) with Web Crypto. CORS of the API is what makes this work.
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { describeInBrowser, launchBrowser } from '../support/browser.js';
import { ROOT } from '../support/processes.js';

/** The page's origin: the client's built modules and its two dependencies, resolved by an import map. */
async function servePage(): Promise<{ server: Server; origin: string }> {
  const files: Record<string, string> = {
    '/deps/openapi-fetch.js': join(ROOT, 'node_modules', 'openapi-fetch', 'dist', 'index.mjs'),
    '/deps/oauth4webapi.js': join(ROOT, 'node_modules', 'oauth4webapi', 'build', 'index.js'),
  };
  const page = `<!doctype html><meta charset="utf-8"><title>client</title>
<script type="importmap">{"imports":{"openapi-fetch":"/deps/openapi-fetch.js","oauth4webapi":"/deps/oauth4webapi.js"}}</script>
<script type="module">import * as client from '/client/index.js'; window.devdataClient = client;</script>`;
  const server = createServer(async (request, response) => {
    const path = new URL(request.url ?? '/', 'http://page').pathname;
    if (path === '/') return response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
    const file = files[path] ?? (path.startsWith('/client/') ? join(ROOT, 'client', 'dist', normalize(path.slice('/client/'.length))) : undefined);
    try {
      if (!file?.endsWith('.js') && !file?.endsWith('.mjs')) throw new Error('not a module');
      response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(await readFile(file));
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describeInBrowser('@devdata/client in Chromium', () => {
  const app = useTestApp();
  let browser: Browser;
  let page: { server: Server; origin: string };

  beforeAll(async () => {
    browser = await launchBrowser();
    page = await servePage();
  });

  afterAll(async () => {
    await browser?.close();
    page?.server.close();
  });

  it('calls the API, follows the stream and checks signatures from a page of another origin', async () => {
    const base = await app().listen();
    const account = await app().account();
    const tab = await browser.newPage();
    try {
      await tab.goto(page.origin);
      await tab.waitForFunction(() => 'devdataClient' in globalThis);
      const result = await tab.evaluate(
        async ({ base, key }) => {
          // The package as the page loaded it (a module script), so not through this test's bundler.
          const client = (globalThis as unknown as { devdataClient: typeof import('@devdata/client') }).devdataClient;
          const devdata = new client.DevdataClient({ baseUrl: base, apiKey: key });
          const me = await devdata.getCurrentCredential();
          const created = await devdata.createResource({ body: { name: 'Browser sensor', type: 'sensor', state: 1 } });
          let missing: { name: string; status: number; code: string; isDevdataError: boolean } | undefined;
          try {
            await devdata.getResource({ path: { id: 'res_missing' } });
          } catch (error) {
            const failure = error as { name: string; status: number; code: string };
            missing = { name: failure.name, status: failure.status, code: failure.code, isDevdataError: error instanceof client.DevdataError };
          }
          // The live stream: replay from 0, then a live event, then stop.
          const controller = new AbortController();
          const streamed: number[] = [];
          const following = (async () => {
            for await (const event of devdata.streamEvents({ after: 0, signal: controller.signal })) {
              streamed.push(event.id);
              if (event.id === 1) await devdata.publishEvent({ body: { type: 'custom.from_browser', data: {} } });
              if (event.id === 2) controller.abort();
            }
          })();
          await following;
          const body = JSON.stringify({ id: 9, type: 'custom.signed', data: {}, createdAt: new Date().toISOString() });
          const header = await client.signWebhook(body, 'whsec_browser');
          const verified = await client.verifyWebhook(body, header, 'whsec_browser');
          let refused: string | undefined;
          try {
            await client.verifyWebhook(body, header, 'whsec_other');
          } catch (error) {
            refused = (error as { code: string }).code;
          }
          // Standard Webhooks' headers, with the secret's key decoded by the browser's atob.
          const secret = `whsec_${btoa('a 32-byte key for the browser ok')}`;
          const timestamp = String(Math.floor(Date.now() / 1000));
          const signature = await client.signStandardWebhook(body, secret, 'dlv_browser', Number(timestamp));
          const headers = new Headers({ 'webhook-id': 'dlv_browser', 'webhook-timestamp': timestamp, 'webhook-signature': signature });
          const standard = await client.verifyStandardWebhook(body, headers, secret);
          return { accountId: me.account.id, created: created.name, missing, streamed, verifiedId: verified.id, refused, standardId: standard.id };
        },
        { base, key: account.key },
      );
      expect(result).toEqual({
        accountId: account.accountId,
        created: 'Browser sensor',
        missing: { name: 'DevdataError', status: 404, code: 'not_found', isDevdataError: true },
        streamed: [1, 2],
        verifiedId: 9,
        refused: 'no_matching_signature',
        standardId: 9,
      });
    } finally {
      await tab.close();
    }
  });
});

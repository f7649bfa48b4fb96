// The approval page in a real browser: Debian's Chromium, driven by playwright-core, opens the
// page, a user types the key and clicks Connect, and the browser arrives at a local callback
// (RFC 8252 loopback) with a code that oauth4webapi then exchanges. Only loopback traffic.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oauth from 'oauth4webapi';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { describeInBrowser, launchBrowser } from '../support/browser.js';
import { apiStatus, discover, insecure, registerApp, type RegisteredApp } from './support.js';

describeInBrowser('the approval page in Chromium', () => {
  const app = useTestApp();
  let base: string;
  let as: oauth.AuthorizationServer;
  let browser: Browser;
  let callbackServer: Server;
  let callbackUri: string;

  beforeAll(async () => {
    base = await app().listen();
    as = await discover(base);
    callbackServer = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end('<!doctype html><title>Callback</title><h1>Back in the app</h1>');
    });
    await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
    callbackUri = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/callback`;
    // playwright gives the browser a fresh, throwaway profile directory.
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => callbackServer?.close(resolve));
  });

  /** An authorization URL as the app builds it, with what it keeps to check the callback. */
  async function authorizationUrl(registered: RegisteredApp) {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint as string);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: registered.clientId,
      redirect_uri: callbackUri,
      scope: registered.scopes.join(' '),
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    return { url: url.toString(), verifier, state };
  }

  async function arrivedAtCallback(page: Page): Promise<URL> {
    await page.waitForURL((url) => url.toString().startsWith(callbackUri), { timeout: 15_000 });
    await expect(page.getByRole('heading', { name: 'Back in the app' }).textContent()).resolves.toBe('Back in the app');
    return new URL(page.url());
  }

  it('a user types the key, clicks Connect, and the app exchanges the code it receives', async () => {
    const user = await app().account();
    const registered = await registerApp(app(), user.key, {
      name: 'Greenhouse Monitor',
      redirectUris: [callbackUri],
      scopes: ['resources:read', 'events:read'],
    });
    const { url, verifier, state } = await authorizationUrl(registered);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const response = await page.goto(url);
      expect(response?.status()).toBe(200);
      expect(await page.title()).toBe('Connect Greenhouse Monitor');
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Connect Greenhouse Monitor to your account?');
      const scopes = await page.getByRole('listitem').allTextContents();
      expect(scopes.map((text) => text.replace(/\s+/g, ' ').trim())).toEqual([
        'Read resources resources:read',
        'Read events, including full resource changes events:read',
      ]);

      // Keyboard order: the key field, then Connect, then Cancel.
      const focused = async () => page.locator(':focus').evaluate((element) => element.getAttribute('id') ?? element.textContent ?? '');
      await page.keyboard.press('Tab');
      expect(await focused()).toBe('api_key');
      await page.keyboard.press('Tab');
      expect(await focused()).toBe('Connect');
      await page.keyboard.press('Tab');
      expect(await focused()).toBe('Cancel');

      // A wrong key first: the page again, with the error announced.
      await page.getByLabel('Your API key').fill('ddk_wrong');
      await page.getByRole('button', { name: 'Connect' }).click();
      await expect(page.getByRole('alert').textContent()).resolves.toMatch(/not valid/);
      expect(page.url()).toBe(`${base}/oauth/authorize`);
      expect(await page.title()).toBe('Error: Connect Greenhouse Monitor');
      expect(await focused()).toBe('api_key');

      await page.getByLabel('Your API key').fill(user.key);
      await page.getByRole('button', { name: 'Connect' }).click();
      const callback = await arrivedAtCallback(page);

      const client = { client_id: registered.clientId };
      const params = oauth.validateAuthResponse(as, client, callback, state);
      const tokens = await oauth.processAuthorizationCodeResponse(
        as,
        client,
        await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, callbackUri, verifier, insecure),
      );
      expect(tokens.scope).toBe('resources:read events:read');
      expect(await apiStatus(base, tokens.access_token, '/api/v1/resources')).toBe(200);
    } finally {
      await context.close();
    }
  });

  it('Cancel takes the user back to the app with access_denied', async () => {
    const user = await app().account();
    const registered = await registerApp(app(), user.key, { redirectUris: [callbackUri], scopes: ['resources:read'] });
    const { url, state } = await authorizationUrl(registered);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(url);
      await page.getByRole('button', { name: 'Cancel' }).click();
      const callback = await arrivedAtCallback(page);
      expect(() => oauth.validateAuthResponse(as, { client_id: registered.clientId }, callback, state)).toThrow(
        expect.objectContaining({ error: 'access_denied' }),
      );
      expect(callback.searchParams.get('iss')).toBe(base);
    } finally {
      await context.close();
    }
  });
});

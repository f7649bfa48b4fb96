// Two service instances on one database, as several processes run behind a load balancer: the
// approval form, codes, refresh tokens and connection ends live in storage, so any instance may
// take any step of a flow (decisions: the form key is kept in the database).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestApp, sharedDatabase } from '../support/app.js';
import { authorizationParams, form, getAuthorize, hiddenFields, registerApp, tokenRequest } from './support.js';

describe('OAuth across two instances on one database', () => {
  let first: TestApp;
  let second: TestApp;
  let database: { url: string; drop: () => Promise<void> };

  beforeAll(async () => {
    // SQLite: a file both open (memory is per instance).
    database = await sharedDatabase();
    first = await TestApp.start({ env: { DATABASE_URL: database.url } });
    second = await TestApp.start({ env: { DATABASE_URL: database.url } });
  });

  afterAll(async () => {
    await second?.close();
    await first?.close();
    await database?.drop();
  });

  it('a page from one instance is approved on the other; tokens, refresh and reuse detection span both', async () => {
    const user = await first.account();
    const registered = await registerApp(first, user.key);
    const { params, verifier, state } = await authorizationParams(registered);
    const page = await getAuthorize(first, params);
    expect(page.status).toBe(200);
    const approval = await second.request({
      method: 'POST',
      url: '/oauth/authorize',
      ...form({ ...hiddenFields(page.body), api_key: user.key, action: 'approve' }),
    });
    expect(approval.status).toBe(303);
    const callback = new URL(approval.headers.location as string);
    expect(callback.searchParams.get('state')).toBe(state);
    const code = callback.searchParams.get('code') as string;

    const redirect = registered.redirectUris[0] as string;
    const tokens = await first.request({
      method: 'POST',
      url: '/oauth/token',
      ...form({ grant_type: 'authorization_code', client_id: registered.clientId, code, redirect_uri: redirect, code_verifier: verifier }),
    });
    expect(tokens.status).toBe(200);
    expect((await second.request({ url: '/api/v1/auth/me', key: tokens.json.access_token })).status).toBe(200);
    // The code is spent for the other instance too.
    const again = await tokenRequest(second, {
      grant_type: 'authorization_code',
      client_id: registered.clientId,
      code,
      redirect_uri: redirect,
      code_verifier: verifier,
    });
    expect(again.json.error).toBe('invalid_grant');
    expect((await first.request({ url: '/api/v1/auth/me', key: tokens.json.access_token })).status).toBe(401);

    // A fresh connection: refreshed on one instance, its old refresh token replayed on the other.
    const next = await authorizationParams(registered);
    const nextPage = await getAuthorize(second, next.params);
    const nextApproval = await first.request({
      method: 'POST',
      url: '/oauth/authorize',
      ...form({ ...hiddenFields(nextPage.body), api_key: user.key, action: 'approve' }),
    });
    const nextCode = new URL(nextApproval.headers.location as string).searchParams.get('code') as string;
    const pair = await tokenRequest(second, {
      grant_type: 'authorization_code',
      client_id: registered.clientId,
      code: nextCode,
      redirect_uri: redirect,
      code_verifier: next.verifier,
    });
    const rotated = await tokenRequest(first, { grant_type: 'refresh_token', client_id: registered.clientId, refresh_token: pair.json.refresh_token });
    expect(rotated.status).toBe(200);
    const replay = await tokenRequest(second, { grant_type: 'refresh_token', client_id: registered.clientId, refresh_token: pair.json.refresh_token });
    expect(replay.json.error).toBe('invalid_grant');
    expect((await first.request({ url: '/api/v1/auth/me', key: rotated.json.access_token })).status).toBe(401);
  });
});

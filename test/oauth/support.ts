// What the OAuth tests share: registering an app, reading the approval page's form, approving it
// the way a browser submits it, and an oauth4webapi client for the server listening on a socket.
import * as oauth from 'oauth4webapi';
import { expect } from 'vitest';
import type { TestApp, TestResponse } from '../support/app.js';

export interface RegisteredApp {
  id: string;
  clientId: string;
  clientSecret?: string;
  type: 'public' | 'confidential';
  redirectUris: string[];
  scopes: string[];
}

export const REDIRECT_URI = 'https://client.example.com/callback';

export async function registerApp(
  app: TestApp,
  key: string,
  body: Partial<Omit<RegisteredApp, 'id' | 'clientId'>> & { name?: string } = {},
): Promise<RegisteredApp> {
  const response = await app.request({
    method: 'POST',
    url: '/api/v1/apps',
    key,
    body: { name: 'Sensor Dashboard', type: 'public', redirectUris: [REDIRECT_URI], scopes: ['resources:read', 'events:read'], ...body },
  });
  expect(response.status).toBe(201);
  return response.json;
}

const decodeEntities = (value: string) =>
  value.replace(/&(amp|lt|gt|quot|#39);/g, (_, name: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[name] as string);

/** The hidden fields of the approval page's form, as a browser would send them back. */
export function hiddenFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const match of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[match[1] as string] = decodeEntities(match[2] as string);
  return fields;
}

export function form(fields: Record<string, string>): { headers: Record<string, string>; body: string } {
  return { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() };
}

export interface AuthorizationParams {
  client_id: string;
  redirect_uri?: string;
  scope?: string;
  state?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  response_type?: string;
}

export async function pkce(): Promise<{ verifier: string; challenge: string }> {
  const verifier = oauth.generateRandomCodeVerifier();
  return { verifier, challenge: await oauth.calculatePKCECodeChallenge(verifier) };
}

/** A complete, valid authorization request for this app (overrides may remove fields with undefined). */
export async function authorizationParams(registered: RegisteredApp, overrides: Partial<AuthorizationParams> = {}) {
  const { verifier, challenge } = await pkce();
  const params: Record<string, string | undefined> = {
    response_type: 'code',
    client_id: registered.clientId,
    redirect_uri: registered.redirectUris[0],
    scope: registered.scopes.join(' '),
    state: oauth.generateRandomState(),
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...overrides,
  };
  const query = new URLSearchParams(Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined));
  return { verifier, params: query, state: params.state as string };
}

export function getAuthorize(app: TestApp, params: URLSearchParams): Promise<TestResponse> {
  return app.request({ url: `/oauth/authorize?${params}` });
}

/** Opens the approval page and submits it with this key and action, like the browser does. */
export async function submitApproval(app: TestApp, params: URLSearchParams, apiKey: string, action: 'approve' | 'cancel' = 'approve'): Promise<TestResponse> {
  const page = await getAuthorize(app, params);
  expect(page.status).toBe(200);
  return app.request({ method: 'POST', url: '/oauth/authorize', ...form({ ...hiddenFields(page.body), api_key: apiKey, action }) });
}

/** The code of an approved request (the 303's Location), checked for state and iss. */
export async function approvedCode(app: TestApp, params: URLSearchParams, apiKey: string): Promise<string> {
  const response = await submitApproval(app, params, apiKey);
  expect(response.status).toBe(303);
  const location = new URL(response.headers.location as string);
  expect(location.searchParams.get('state')).toBe(params.get('state'));
  expect(location.searchParams.get('iss')).toBe(app.config.baseUrl);
  return location.searchParams.get('code') as string;
}

/** The token endpoint called directly (for requests no well-behaved client library would send). */
export function tokenRequest(app: TestApp, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<TestResponse> {
  const body = form(fields);
  return app.request({ method: 'POST', url: '/oauth/token', headers: { ...body.headers, ...headers }, body: body.body });
}

export function basic(clientId: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

/** An RFC 6749 §5.2 error answer, never cached. */
export function expectOAuthError(response: TestResponse, status: number, error: string): void {
  expect({ status: response.status, body: response.json }).toEqual({ status, body: { error, error_description: expect.any(String) } });
  expect(response.headers['cache-control']).toBe('no-store');
}

export const insecure = { [oauth.allowInsecureRequests]: true } as const;

/** The authorization server as oauth4webapi discovers it from the metadata (RFC 8414). */
export async function discover(issuer: string): Promise<oauth.AuthorizationServer> {
  const response = await oauth.discoveryRequest(new URL(issuer), { algorithm: 'oauth2', ...insecure });
  return oauth.processDiscoveryResponse(new URL(issuer), response);
}

export function clientAuth(registered: RegisteredApp): oauth.ClientAuth {
  return registered.clientSecret ? oauth.ClientSecretBasic(registered.clientSecret) : oauth.None();
}

/**
 * The whole authorization-code flow with oauth4webapi: it builds the request, checks the callback's
 * state and iss, sends the code with the PKCE verifier and checks the token response.
 */
export async function connect(_app: TestApp, as: oauth.AuthorizationServer, registered: RegisteredApp, apiKey: string, scope?: string | null) {
  const client: oauth.Client = { client_id: registered.clientId };
  const redirectUri = registered.redirectUris[0] as string;
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint as string);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', client.client_id);
  url.searchParams.set('redirect_uri', redirectUri);
  // null leaves scope out: the app's registered scopes are granted.
  if (scope !== null) url.searchParams.set('scope', scope ?? registered.scopes.join(' '));
  url.searchParams.set('state', state);
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
  url.searchParams.set('code_challenge_method', 'S256');

  const page = await fetch(url, { redirect: 'manual' });
  expect(page.status).toBe(200);
  const approval = await fetch(new URL('/oauth/authorize', url), {
    method: 'POST',
    redirect: 'manual',
    ...form({ ...hiddenFields(await page.text()), api_key: apiKey, action: 'approve' }),
  });
  expect(approval.status).toBe(303);
  const callback = new URL(approval.headers.get('location') as string);
  expect(callback.origin + callback.pathname).toBe(redirectUri);

  const params = oauth.validateAuthResponse(as, client, callback, state);
  const response = await oauth.authorizationCodeGrantRequest(as, client, clientAuth(registered), params, redirectUri, verifier, insecure);
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
  return { tokens, client, code: params.get('code') as string, verifier, redirectUri };
}

export async function refresh(as: oauth.AuthorizationServer, registered: RegisteredApp, refreshToken: string) {
  const client: oauth.Client = { client_id: registered.clientId };
  const response = await oauth.refreshTokenGrantRequest(as, client, clientAuth(registered), refreshToken, insecure);
  return oauth.processRefreshTokenResponse(as, client, response);
}

export async function revoke(as: oauth.AuthorizationServer, registered: RegisteredApp, token: string): Promise<void> {
  const response = await oauth.revocationRequest(as, { client_id: registered.clientId }, clientAuth(registered), token, insecure);
  await oauth.processRevocationResponse(response);
}

/** The status of an API call made with this token over the socket. */
export async function apiStatus(base: string, token: string, path = '/api/v1/auth/me'): Promise<number> {
  const response = await fetch(new URL(path, base), { headers: { authorization: `Bearer ${token}` } });
  await response.arrayBuffer();
  return response.status;
}

/** An OAuth connection's client and tokens, as the token endpoint issued them. */
export interface GrantedConnection {
  clientId: string;
  access: string;
  refresh: string;
}

/**
 * A connection of a new public app registered with `registeringKey` for `scopes`, approved with
 * `approvingKey` through the approval page and exchanged at the token endpoint.
 */
export async function grantedConnection(app: TestApp, registeringKey: string, approvingKey: string, scopes: string[]): Promise<GrantedConnection> {
  const registered = await registerApp(app, registeringKey, { scopes });
  const { verifier, params } = await authorizationParams(registered);
  const code = await approvedCode(app, params, approvingKey);
  const fields = { grant_type: 'authorization_code', client_id: registered.clientId, code, redirect_uri: REDIRECT_URI, code_verifier: verifier };
  const tokens = await tokenRequest(app, fields);
  expect(tokens.status, tokens.body).toBe(200);
  return { clientId: registered.clientId, access: tokens.json.access_token, refresh: tokens.json.refresh_token };
}

/** Ends the connection: RFC 7009 revocation of its refresh token. */
export async function revokeConnection(app: TestApp, granted: { clientId: string; refresh: string }): Promise<void> {
  const response = await app.request({
    method: 'POST',
    url: '/oauth/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: granted.refresh, client_id: granted.clientId }).toString(),
  });
  expect(response.status, response.body).toBe(200);
}

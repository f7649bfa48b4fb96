// OAuth 2.0 for apps that connect to a devdata server, on oauth4webapi (which does the protocol
// and its checks): the authorization URL with PKCE S256 and state, the code exchange with the
// callback's state and iss checked, refresh, revocation, and client credentials.
import * as oauth from 'oauth4webapi';
import { DevdataError, errorFromResponse } from './errors.js';

export interface OAuthAppOptions {
  /** The server's base address: its OAuth issuer (`iss`). */
  issuer: string;
  /** The app's `clientId` (`ddc_…`). */
  clientId: string;
  /** Confidential apps only (`ddcs_…`), sent with HTTP Basic; public apps have none. */
  clientSecret?: string;
  /** The registered redirect URI the callback comes back to. */
  redirectUri?: string;
  fetch?: typeof fetch;
}

export interface TokenSet {
  accessToken: string;
  tokenType: string;
  /** Seconds the access token lives (at most 900). */
  expiresIn: number | undefined;
  /** When the access token stops working. */
  expiresAt: Date | undefined;
  /** The granted scopes. */
  scopes: string[];
  /** Absent for client credentials. Rotates: keep the newest one. */
  refreshToken: string | undefined;
}

/** What the app keeps between sending the user away and the callback (e.g. in its session). */
export interface PendingAuthorization {
  url: URL;
  state: string;
  codeVerifier: string;
}

/** http: only on loopback (RFC 8252 development setups); everything else must be https. */
function isLoopback(url: URL): boolean {
  return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

/** oauth4webapi's errors as the client's one error type; the OAuth error code becomes `code`. */
async function asDevdataError(error: unknown): Promise<unknown> {
  // A 401 with a WWW-Authenticate challenge (invalid_client): its body is the RFC 6749 error.
  if (error instanceof oauth.WWWAuthenticateChallengeError) {
    const described = await errorFromResponse(error.response);
    return described.code.startsWith('http_')
      ? new DevdataError({ status: error.status, code: 'invalid_client', message: error.message, cause: error })
      : described;
  }
  if (error instanceof oauth.ResponseBodyError) {
    return new DevdataError({ status: error.status, code: error.error, message: error.error_description ?? error.error, cause: error });
  }
  if (error instanceof oauth.AuthorizationResponseError) {
    return new DevdataError({ status: 0, code: error.error, message: error.error_description ?? error.error, cause: error });
  }
  if (error instanceof oauth.OperationProcessingError || error instanceof oauth.UnsupportedOperationError) {
    return new DevdataError({ status: 0, code: 'invalid_oauth_response', message: error.message, cause: error });
  }
  return error;
}

async function translated<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw await asDevdataError(error);
  }
}

function tokenSet(response: oauth.TokenEndpointResponse): TokenSet {
  return {
    accessToken: response.access_token,
    tokenType: response.token_type,
    expiresIn: response.expires_in,
    expiresAt: response.expires_in === undefined ? undefined : new Date(Date.now() + response.expires_in * 1000),
    scopes: response.scope ? response.scope.split(' ') : [],
    refreshToken: response.refresh_token,
  };
}

export class DevdataOAuth {
  private readonly client: oauth.Client;
  private readonly clientAuth: oauth.ClientAuth;
  private readonly requestOptions: { [oauth.allowInsecureRequests]?: boolean; [oauth.customFetch]?: typeof fetch };

  private constructor(
    /** The server's metadata (RFC 8414), as discovered. */
    readonly server: oauth.AuthorizationServer,
    private readonly options: OAuthAppOptions,
  ) {
    this.client = { client_id: options.clientId };
    this.clientAuth = options.clientSecret ? oauth.ClientSecretBasic(options.clientSecret) : oauth.None();
    this.requestOptions = requestOptions(options);
  }

  /** Reads the server's metadata (`/.well-known/oauth-authorization-server`) and checks its issuer. */
  static async discover(options: OAuthAppOptions): Promise<DevdataOAuth> {
    const issuer = new URL(options.issuer);
    return translated(async () => {
      const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...requestOptions(options) });
      return new DevdataOAuth(await oauth.processDiscoveryResponse(issuer, response), options);
    });
  }

  /** Where to send the user: a fresh PKCE verifier (S256) and state, kept by you until the callback. */
  async authorizationUrl(request: { scopes?: string[]; redirectUri?: string } = {}): Promise<PendingAuthorization> {
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(this.server.authorization_endpoint as string);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', this.options.clientId);
    url.searchParams.set('redirect_uri', this.redirectUri(request.redirectUri));
    // Without scopes the server grants the app's registered ones.
    if (request.scopes) url.searchParams.set('scope', request.scopes.join(' '));
    url.searchParams.set('state', state);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier));
    url.searchParams.set('code_challenge_method', 'S256');
    return { url, state, codeVerifier };
  }

  /**
   * Handles the callback: checks `state` and `iss` (RFC 9207), turns an `error` (the user
   * cancelled: `access_denied`) into a DevdataError, and exchanges the code with the verifier.
   */
  async exchangeCode(callbackUrl: string | URL, pending: Pick<PendingAuthorization, 'state' | 'codeVerifier'>, redirectUri?: string): Promise<TokenSet> {
    return translated(async () => {
      const parameters = oauth.validateAuthResponse(this.server, this.client, new URL(callbackUrl), pending.state);
      const response = await oauth.authorizationCodeGrantRequest(
        this.server,
        this.client,
        this.clientAuth,
        parameters,
        this.redirectUri(redirectUri),
        pending.codeVerifier,
        this.requestOptions,
      );
      return tokenSet(await oauth.processAuthorizationCodeResponse(this.server, this.client, response));
    });
  }

  /** A new access token and a new refresh token; the one sent stops working. */
  async refresh(refreshToken: string): Promise<TokenSet> {
    return translated(async () => {
      const response = await oauth.refreshTokenGrantRequest(this.server, this.client, this.clientAuth, refreshToken, this.requestOptions);
      return tokenSet(await oauth.processRefreshTokenResponse(this.server, this.client, response));
    });
  }

  /** Revokes a token (RFC 7009): a refresh token ends the whole connection, an access token only itself. */
  async revoke(token: string): Promise<void> {
    await translated(async () => {
      const response = await oauth.revocationRequest(this.server, this.client, this.clientAuth, token, this.requestOptions);
      await oauth.processRevocationResponse(response);
    });
  }

  /** A token for the app's own account (confidential apps only); no refresh token. */
  async clientCredentials(scopes?: string[]): Promise<TokenSet> {
    return translated(async () => {
      const parameters: Record<string, string> = scopes ? { scope: scopes.join(' ') } : {};
      const response = await oauth.clientCredentialsGrantRequest(this.server, this.client, this.clientAuth, parameters, this.requestOptions);
      return tokenSet(await oauth.processClientCredentialsResponse(this.server, this.client, response));
    });
  }

  private redirectUri(override: string | undefined): string {
    const redirectUri = override ?? this.options.redirectUri;
    if (!redirectUri) throw new Error('a redirectUri is needed: pass it to DevdataOAuth.discover() or to this call');
    return redirectUri;
  }
}

function requestOptions(options: OAuthAppOptions) {
  return {
    ...(isLoopback(new URL(options.issuer)) ? { [oauth.allowInsecureRequests]: true } : {}),
    ...(options.fetch ? { [oauth.customFetch]: options.fetch } : {}),
  };
}

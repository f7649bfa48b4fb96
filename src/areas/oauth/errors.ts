// The authorization server's errors: RFC 6749's codes (oauth/routes.ts gives each its status), and
// the faults that may never be redirected.

/** RFC 6749's error codes (section 5.2, and 4.1.2.1 for the authorization endpoint). */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'unsupported_response_type'
  | 'access_denied';

/** An RFC 6749 error: its code and description; oauth/routes.ts gives it its status. */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
  ) {
    super(description);
  }
}

/** A fault in client_id or redirect_uri: shown on a page, never redirected (RFC 6749 §4.1.2.1). */
export class UntrustedRedirectError extends Error {}

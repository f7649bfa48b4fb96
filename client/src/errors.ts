// The one error type of the client: every failed call, whatever went wrong, is a DevdataError.

/** One entry of an error body's `details`: the field (a JSON pointer) and what is wrong with it. */
export interface ErrorDetail {
  path: string;
  message: string;
  [key: string]: unknown;
}

export interface DevdataErrorInit {
  status: number;
  code: string;
  message: string;
  requestId?: string | undefined;
  details?: ErrorDetail[] | undefined;
  headers?: Headers | undefined;
  cause?: unknown;
}

/**
 * A failed call. `status` is the HTTP status (0 when no response arrived: `code` is then
 * `connection_error`, or `aborted` when the caller's signal fired); `code` is the API's stable
 * error code (`invalid_request`, `precondition_failed`, `cursor_expired`, …, or an OAuth error such
 * as `invalid_grant`); `requestId` is the `X-Request-Id` to quote when reporting a problem.
 */
export class DevdataError extends Error {
  override name = 'DevdataError';
  readonly status: number;
  readonly code: string;
  readonly requestId: string | undefined;
  readonly details: ErrorDetail[];
  readonly headers: Headers | undefined;

  constructor(init: DevdataErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.details = init.details ?? [];
    this.headers = init.headers;
  }

  /** 412: the resource changed since the version you sent in If-Match; read it again and retry. */
  get isPreconditionFailed(): boolean {
    return this.status === 412;
  }

  /** On a 412, the resource's current version (the server's `details[0].currentVersion`). */
  get currentVersion(): number | undefined {
    const value = this.details[0]?.currentVersion;
    return typeof value === 'number' ? value : undefined;
  }

  /** On a 410 `cursor_expired`, the oldest `after` that still works (`details[0].oldestCursor`). */
  get oldestCursor(): number | undefined {
    const value = this.details[0]?.oldestCursor;
    return typeof value === 'number' ? value : undefined;
  }

  /** Seconds the server asked to wait (`Retry-After`), when it did. */
  get retryAfterSeconds(): number | undefined {
    const value = Number(this.headers?.get('retry-after') ?? Number.NaN);
    return Number.isFinite(value) && value >= 0 ? value : undefined;
  }
}

/** The error of a non-2xx response: the API's error body, an OAuth error body, or just the status. */
export async function errorFromResponse(response: Response): Promise<DevdataError> {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  const text = await response.text().catch(() => '');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const apiError = (body as { error?: { code?: unknown; message?: unknown; requestId?: unknown; details?: unknown } } | undefined)?.error;
  if (apiError && typeof apiError === 'object' && typeof apiError.code === 'string') {
    return new DevdataError({
      status: response.status,
      code: apiError.code,
      message: typeof apiError.message === 'string' ? apiError.message : `HTTP ${response.status}`,
      requestId: typeof apiError.requestId === 'string' ? apiError.requestId : requestId,
      details: Array.isArray(apiError.details) ? (apiError.details as ErrorDetail[]) : undefined,
      headers: response.headers,
    });
  }
  // OAuth endpoints answer RFC 6749 errors: {"error":"invalid_grant","error_description":"…"}.
  const oauth = body as { error?: unknown; error_description?: unknown } | undefined;
  if (typeof oauth?.error === 'string') {
    return new DevdataError({
      status: response.status,
      code: oauth.error,
      message: typeof oauth.error_description === 'string' ? oauth.error_description : oauth.error,
      requestId,
      headers: response.headers,
    });
  }
  return new DevdataError({
    status: response.status,
    code: `http_${response.status}`,
    message: `HTTP ${response.status} ${response.statusText}`.trim(),
    requestId,
    headers: response.headers,
  });
}

/** A 410 of the event log, with a message that says which cursor expired and where to resume. */
export function explainExpiredCursor(error: unknown, after: number | undefined): unknown {
  if (!(error instanceof DevdataError) || error.code !== 'cursor_expired') return error;
  const oldest = error.oldestCursor;
  return new DevdataError({
    status: error.status,
    code: error.code,
    message: `Cursor ${after ?? '?'} has expired: the oldest cursor still retained is ${oldest ?? 'unknown'}. Reload what you keep (a resource snapshot) and resume after ${oldest ?? 'it'}.`,
    requestId: error.requestId,
    details: error.details,
    headers: error.headers,
    cause: error,
  });
}

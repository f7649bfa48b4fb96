// Sends one webhook request: POST with a 10 s limit, no redirects followed, and (unless private
// targets are allowed for development) only to public addresses, checked on the address the
// socket actually connects to.
import { Agent, request } from 'undici';
import { ForbiddenAddressError, ipLiteral, isPublicAddress, publicOnlyLookup } from '../../platform/public-address.js';

export const DELIVERY_TIMEOUT_MS = 10_000;
/** How much of an answer's body an attempt records (api-decisions §14). */
export const RESPONSE_EXCERPT_BYTES = 1024;
/** How much of an answer's body is read at most; the connection is dropped past it. */
const RESPONSE_READ_LIMIT = 64 * 1024;

export interface SendResult {
  responseStatus: number | null;
  error: string | null;
  durationMs: number;
  /** The first RESPONSE_EXCERPT_BYTES of the answer's body as UTF-8 (a character cut at the edge dropped); null without an answer. */
  responseBody: string | null;
  /** What a 429 or 503 asked for in `Retry-After`, in seconds from now; null otherwise. */
  retryAfterSeconds: number | null;
}

export class WebhookSender {
  private readonly agent: Agent;

  constructor(
    private readonly allowPrivateTargets: boolean,
    /** The whole attempt's limit; only tests shorten it. */
    private readonly timeoutMs = DELIVERY_TIMEOUT_MS,
  ) {
    this.agent = new Agent({
      connect: { timeout: timeoutMs, ...(allowPrivateTargets ? {} : { lookup: publicOnlyLookup }) },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      keepAliveTimeout: 30_000,
      // No per-origin socket limit (the dispatcher bounds the attempts): several webhooks on one
      // host must not queue behind one that hangs.
    });
  }

  async send(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    try {
      // A literal address never goes through the resolver, so it is checked here.
      const literal = ipLiteral(new URL(url).hostname);
      if (!this.allowPrivateTargets && literal !== undefined && !isPublicAddress(literal)) {
        throw new ForbiddenAddressError('the address is not public');
      }
      const response = await request(url, {
        method: 'POST',
        body,
        headers,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const responseBody = await excerptOf(response.body);
      const status = response.statusCode;
      const answered = { responseStatus: status, responseBody, retryAfterSeconds: null };
      if (status >= 200 && status < 300) return { ...answered, error: null, durationMs: elapsed() };
      const error = status >= 300 && status < 400 ? `redirect (${status}) not followed` : `receiver answered ${status}`;
      const retryAfterSeconds = status === 429 || status === 503 ? retryAfter(response.headers['retry-after']) : null;
      return { ...answered, retryAfterSeconds, error, durationMs: elapsed() };
    } catch (error) {
      return { responseStatus: null, error: this.describeFailure(error), durationMs: elapsed(), responseBody: null, retryAfterSeconds: null };
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private describeFailure(error: unknown): string {
    if (error instanceof ForbiddenAddressError) return `destination refused: ${error.message}`;
    const { name, code, message } = error as { name?: string; code?: string; message?: string };
    if (name === 'TimeoutError' || name === 'AbortError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
      return `timed out after ${this.timeoutMs / 1000} s`;
    }
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    if (cause?.code === 'EADDRFORBIDDEN' || code === 'EADDRFORBIDDEN') return `destination refused: ${cause?.message ?? message}`;
    return cause?.code ?? code ?? message ?? 'request failed';
  }
}

/** Reads the body (up to RESPONSE_READ_LIMIT, so the connection can be reused) and keeps its first bytes as text. */
async function excerptOf(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let read = 0;
  try {
    for await (const chunk of body) {
      if (keptBytes < RESPONSE_EXCERPT_BYTES) {
        const part = chunk.subarray(0, RESPONSE_EXCERPT_BYTES - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      }
      read += chunk.length;
      if (read > RESPONSE_READ_LIMIT) {
        body.destroy();
        break;
      }
    }
  } catch {
    // A body cut short still has its first bytes.
  }
  return excerptText(Buffer.concat(kept));
}

/** The first RESPONSE_EXCERPT_BYTES of `bytes` as UTF-8: a character the edge cuts is dropped, invalid bytes become U+FFFD. */
export function excerptText(bytes: Uint8Array): string {
  // Streaming decode holds back a character whose bytes the edge cut.
  return new TextDecoder().decode(bytes.subarray(0, RESPONSE_EXCERPT_BYTES), { stream: true });
}

/** `Retry-After` as seconds from now: a number of seconds or an HTTP date; null when absent or unreadable. */
export function retryAfter(value: string | string[] | undefined, now = Date.now()): number | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

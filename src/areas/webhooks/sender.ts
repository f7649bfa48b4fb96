// Sends one webhook request: POST with a 10 s limit, no redirects followed, and (unless private
// targets are allowed for development) only to public addresses, checked on the address the
// socket actually connects to.
import { Agent, request } from 'undici';
import { ForbiddenAddressError, ipLiteral, isPublicAddress, publicOnlyLookup } from '../../platform/public-address.js';

export const DELIVERY_TIMEOUT_MS = 10_000;

export interface SendResult {
  responseStatus: number | null;
  error: string | null;
  durationMs: number;
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
      await response.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      const status = response.statusCode;
      if (status >= 200 && status < 300) return { responseStatus: status, error: null, durationMs: elapsed() };
      const error = status >= 300 && status < 400 ? `redirect (${status}) not followed` : `receiver answered ${status}`;
      return { responseStatus: status, error, durationMs: elapsed() };
    } catch (error) {
      return { responseStatus: null, error: this.describeFailure(error), durationMs: elapsed() };
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

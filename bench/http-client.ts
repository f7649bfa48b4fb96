// A small keep-alive JSON client over node:http, for seeding and for the stream scenarios' writer.
import { Agent, request, type IncomingHttpHeaders } from 'node:http';

export interface JsonResponse {
  status: number;
  body: unknown;
  /** The body as received, and the response headers (for the floor rows, which copy them). */
  text: string;
  headers: IncomingHttpHeaders;
}

export class JsonClient {
  private readonly agent: Agent;

  constructor(
    private readonly origin: string,
    private readonly headers: Record<string, string> = {},
    maxSockets = 32,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets });
  }

  send(method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<JsonResponse> {
    const url = new URL(path, this.origin);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          method,
          agent: this.agent,
          timeout: timeoutMs,
          headers: {
            accept: 'application/json',
            ...this.headers,
            ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = text === '' ? undefined : JSON.parse(text);
            } catch {
              // not JSON: keep the text
            }
            resolve({ status: response.statusCode ?? 0, body: parsed, text, headers: response.headers });
          });
          response.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no response within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Like send, but throws unless the status is the expected one; the parsed body. */
  async expect(status: number, method: string, path: string, body?: unknown): Promise<unknown> {
    return (await this.expectResponse(status, method, path, body)).body;
  }

  /** Like send, but throws unless the status is the expected one. */
  async expectResponse(status: number, method: string, path: string, body?: unknown): Promise<JsonResponse> {
    const response = await this.send(method, path, body);
    if (response.status !== status) {
      throw new Error(`${method} ${path}: expected HTTP ${status}, got ${response.status}: ${JSON.stringify(response.body).slice(0, 500)}`);
    }
    return response;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Runs `task(i)` for i in [0, count) with at most `concurrency` at a time. */
export async function inParallel(count: number, concurrency: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

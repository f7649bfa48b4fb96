// An HTTP proxy in front of the real server that can lose what the server answered: the request
// reached the server (which ran it and committed), and the client sees its connection close
// instead of the response, as after a timeout or a network that went away. Or it keeps the
// response back (`hold`), so that a test can kill the client while its write is committed and
// unacknowledged. Every request is recorded with its Idempotency-Key and the server's answer.
import { createServer, request as forward, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Exchange {
  method: string;
  path: string;
  key: string | undefined;
  /** The server's status, and whether it said the response was a replay. */
  status: number;
  replayed: boolean;
  /** What the client got: the response, or its connection closed. */
  outcome: 'passed' | 'dropped' | 'held';
}

type Matcher = (request: { method: string; path: string }) => boolean;
interface Rule {
  match: Matcher;
  outcome: 'dropped' | 'held';
  /** Matching requests still to pass before the rule applies, then how many it applies to. */
  skip: number;
  left: number;
}

/** `POST /api/v1/batch` and the like. */
export const requestTo =
  (method: string, pathPrefix: string): Matcher =>
  (request) =>
    request.method === method && request.path.startsWith(pathPrefix);

export class LossyProxy {
  readonly exchanges: Exchange[] = [];
  private readonly rules: Rule[] = [];
  private server: Server | undefined;
  private target = '';
  private readonly heldBack = new Set<IncomingMessage>();

  /** Listens on a port of its own, sending everything on to `target` (the server's base URL). */
  async start(target: string): Promise<string> {
    this.target = target;
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => this.pass(request, Buffer.concat(chunks), response));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** The next `times` matching requests reach the server, and the client loses the server's answer. */
  drop(match: Matcher, times = 1): void {
    this.rules.push({ match, outcome: 'dropped', skip: 0, left: times });
  }

  /** After `skip` matching requests, the next reaches the server, and its answer is kept back until the proxy closes. */
  hold(match: Matcher, skip = 0): void {
    this.rules.push({ match, outcome: 'held', skip, left: 1 });
  }

  /** The exchanges of requests that match. */
  of(match: Matcher): Exchange[] {
    return this.exchanges.filter((exchange) => match(exchange));
  }

  async close(): Promise<void> {
    for (const request of this.heldBack) request.socket.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private pass(request: IncomingMessage, body: Buffer, response: import('node:http').ServerResponse): void {
    const method = request.method ?? 'GET';
    const path = request.url ?? '/';
    let rule = this.rules.find((candidate) => candidate.left > 0 && candidate.match({ method, path }));
    if (rule && rule.skip > 0) {
      rule.skip--;
      rule = undefined;
    } else if (rule) rule.left--;
    const key = request.headers['idempotency-key'] as string | undefined;
    const headers = { ...request.headers, host: new URL(this.target).host, 'content-length': String(body.length) };
    delete headers['transfer-encoding'];
    const upstream = forward(new URL(path, this.target), { method, headers }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => {
        const outcome = rule?.outcome ?? 'passed';
        this.exchanges.push({ method, path, key, status: answer.statusCode ?? 0, replayed: answer.headers['idempotent-replayed'] === 'true', outcome });
        if (outcome === 'dropped') return void request.socket.destroy();
        if (outcome === 'held') return void this.heldBack.add(request);
        const answerHeaders = { ...answer.headers };
        delete answerHeaders['transfer-encoding'];
        delete answerHeaders.connection;
        response.writeHead(answer.statusCode ?? 502, { ...answerHeaders, 'content-length': String(Buffer.concat(chunks).length) });
        response.end(Buffer.concat(chunks));
      });
    });
    upstream.on('error', () => request.socket.destroy());
    upstream.end(body);
  }
}

// What the webhook tests share: a real HTTP receiver on loopback that records every request as it
// arrived (raw body, headers, time) and answers per path, and a deadline-bound wait.
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  method: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as the bytes arrived. */
  rawBody: string;
  at: number;
}

/** What `/big` answers: 1,023 ASCII bytes, then a 3-byte character across the 1,024th byte, then more. */
export const BIG_ANSWER = `${'a'.repeat(1023)}€${'b'.repeat(2000)}`;

/** What `/html` answers: markup, quotes and an ampersand, for a reader that must show it as text. */
export const HTML_ANSWER = '<h1>Thanks</h1><script>window.receiverScriptRan = true</script><img src=x onerror="window.receiverScriptRan = true"> & "done"';

/**
 * Paths and what they answer: `/ok` 200, `/fail` 500, `/hang` never (until the receiver closes),
 * `/slow` 200 after `slowMs`, `/redirect` 302 to `/ok`, `/status/<n>` n, `/retry-after/<value>`
 * 429 with that Retry-After, `/big` 200 with BIG_ANSWER, `/html` 200 with HTML_ANSWER,
 * `/down/<name>` 503 while `down` holds the name, else 200. Any other path 200; a query string is
 * ignored.
 */
export class Receiver {
  readonly received: Received[] = [];
  slowMs = 300;
  /** Names of `/down/<name>` receivers that are down. */
  readonly down = new Set<string>();
  private readonly hanging = new Set<ServerResponse>();
  private server: Server | undefined;
  origin = '';

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '/';
        this.received.push({ path, method: request.method ?? '', headers: request.headers, rawBody: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
        // The query string only tells tests apart; the path decides the answer.
        const route = path.replace(/\?.*$/, '');
        const status = /^\/status\/(\d{3})$/.exec(route);
        const retryAfter = /^\/retry-after\/(.+)$/.exec(route);
        const down = /^\/down\/(.+)$/.exec(route);
        if (retryAfter) response.writeHead(429, { 'retry-after': decodeURIComponent(retryAfter[1]!) }).end('slow down');
        else if (down) response.writeHead(this.down.has(down[1]!) ? 503 : 200).end(this.down.has(down[1]!) ? 'down' : 'up');
        else if (route === '/big') response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(BIG_ANSWER);
        else if (route === '/fail') response.writeHead(500).end('no');
        else if (route === '/hang') this.hanging.add(response);
        else if (route === '/slow') setTimeout(() => response.writeHead(200).end('ok'), this.slowMs);
        else if (route === '/redirect') response.writeHead(302, { location: `${this.origin}/ok` }).end();
        else if (route === '/html') response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(HTML_ANSWER);
        else if (status) response.writeHead(Number(status[1])).end();
        else response.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolvePromise) => this.server!.listen(0, '127.0.0.1', resolvePromise));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  url(path: string): string {
    return `${this.origin}${path}`;
  }

  on(path: string): Received[] {
    return this.received.filter((entry) => entry.path === path);
  }

  async close(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolvePromise) => (this.server ? this.server.close(() => resolvePromise()) : resolvePromise()));
  }
}

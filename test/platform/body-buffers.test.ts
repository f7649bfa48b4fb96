// Reused response buffers: a buffer is handed out again only after its response finished, and
// every body sent from one is complete and its own, also when many large responses of different
// sizes are in flight at once over real sockets.
import { once } from 'node:events';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodyBuffers } from '../../src/platform/body-buffers.js';
import { type TestAccount, TestApp } from '../support/app.js';
import { until } from '../support/wait.js';

/** A listening app with an account holding `count` custom events, each `{ index, padding: padding(index) }`. */
async function serverWithEvents(count: number, padding: (index: number) => string): Promise<{ app: TestApp; account: TestAccount; base: string }> {
  const app = await TestApp.start();
  const account = await app.account();
  const base = await app.listen();
  for (let index = 1; index <= count; index++) {
    const response = await app.request({
      method: 'POST',
      url: '/api/v1/events',
      key: account.key,
      body: { type: 'custom.padded', data: { index, padding: padding(index) } },
    });
    expect(response.status).toBe(201);
  }
  return { app, account, base };
}

describe('BodyBuffers', () => {
  it('hands out a buffer of the size class, and the same buffer again once released', () => {
    const buffers = new BodyBuffers(1024 * 1024);
    const first = buffers.acquire(20_000);
    expect(first.length).toBe(32 * 1024);
    expect(buffers.acquire(20_000)).not.toBe(first);
    buffers.release(first);
    expect(buffers.idle).toBe(32 * 1024);
    expect(buffers.acquire(17_000)).toBe(first);
    expect(buffers.idle).toBe(0);
    // Another class does not take it.
    buffers.release(first);
    expect(buffers.acquire(5_000)).not.toBe(first);
  });

  it('keeps no more idle bytes than its budget', () => {
    const buffers = new BodyBuffers(100 * 1024);
    const taken = Array.from({ length: 10 }, () => buffers.acquire(30_000));
    for (const buffer of taken) buffers.release(buffer);
    expect(buffers.idle).toBe(3 * 32 * 1024);
  });
});

describe('large bodies sent from reused buffers, over real sockets', () => {
  let app: TestApp;
  let base: string;
  let account: TestAccount;
  const EVENTS = 600;

  beforeAll(async () => {
    // Data of varying size, so that pages of one limit differ in length and share size classes.
    ({ app, account, base } = await serverWithEvents(EVENTS, (index) => 'é'.repeat(index % 97)));
  });
  afterAll(() => app?.close());

  it('answers 400 concurrent pages of different cursors and limits, each complete and exact', async () => {
    const requests = Array.from({ length: 400 }, (_, index) => ({ after: (index * 37) % (EVENTS - 10), limit: 10 + ((index * 13) % 190) }));
    const pages = await Promise.all(
      requests.map(async ({ after, limit }) => {
        const response = await fetch(`${base}/api/v1/events?after=${after}&limit=${limit}`, { headers: { authorization: `Bearer ${account.key}` } });
        const text = await response.text();
        return { after, limit, status: response.status, length: Number(response.headers.get('content-length')), text };
      }),
    );
    for (const page of pages) {
      expect(page.status).toBe(200);
      expect(Buffer.byteLength(page.text)).toBe(page.length);
      const body = JSON.parse(page.text) as { data: Array<{ id: number; data: { index: number; padding: string } }> };
      const expectedCount = Math.min(page.limit, EVENTS - page.after);
      expect(body.data.map((event) => event.id)).toEqual(Array.from({ length: expectedCount }, (_, index) => page.after + 1 + index));
      for (const event of body.data) expect(event.data.padding).toBe('é'.repeat(event.data.index % 97));
    }
  });

  it('sends the same large list to many clients at once, byte for byte', async () => {
    for (let index = 0; index < 60; index++) {
      await app.request({
        method: 'POST',
        url: '/api/v1/resources',
        key: account.key,
        body: { name: `Sensor ${index}`, type: 'sensor', state: index, attributes: { note: 'ü'.repeat(index) } },
      });
    }
    const url = `${base}/api/v1/resources?limit=50`;
    const texts = await Promise.all(
      Array.from({ length: 200 }, async () => (await fetch(url, { headers: { authorization: `Bearer ${account.key}` } })).text()),
    );
    expect(Buffer.byteLength(texts[0] as string)).toBeGreaterThan(4096);
    expect(new Set(texts).size).toBe(1);
    expect((JSON.parse(texts[0] as string) as { data: unknown[] }).data).toHaveLength(50);
  });
});

describe('a slow reader keeps its body', () => {
  let app: TestApp;
  let base: string;
  let account: TestAccount;
  const EVENTS = 600;
  /** About 3.6 MB a page: more than the sockets between server and a client that reads nothing hold. */
  const padding = (index: number) => String(index % 10).repeat(6000);

  beforeAll(async () => {
    ({ app, account, base } = await serverWithEvents(EVENTS, padding));
  });
  afterAll(() => app?.close());

  it('is not overwritten by later responses of its size while it is still being sent', async () => {
    const { port } = new URL(base);
    const socket = connect(Number(port), '127.0.0.1');
    await once(socket, 'connect');
    socket.pause();
    // Three requests at once on one connection, and nothing read: the kernel takes about the first
    // page, the rest waits in the server, in the buffers the pages were assembled in.
    const request = `GET /api/v1/events?after=0&limit=${EVENTS} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${account.key}\r\n\r\n`;
    const answered = () => app.responses.filter((response) => response.method === 'GET' && response.route === '/api/v1/events').length;
    const before = answered();
    socket.write(request.repeat(2) + request.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'));
    // The server has assembled all three pages (they are on their way out, most of them waiting).
    await until(() => answered() === before + 3, 'the three pages to be assembled');
    for (let round = 0; round < 4; round++) {
      const response = await fetch(`${base}/api/v1/events?after=1&limit=${EVENTS - 1}`, { headers: { authorization: `Bearer ${account.key}` } });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.resume();
    await once(socket, 'end');
    let raw = Buffer.concat(chunks);
    for (let response = 0; response < 3; response++) {
      const headEnd = raw.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(raw.subarray(0, headEnd).toString('latin1'))?.[1]);
      const body = raw.subarray(headEnd + 4, headEnd + 4 + length);
      raw = raw.subarray(headEnd + 4 + length);
      const page = JSON.parse(body.toString()) as { data: Array<{ id: number; data: { index: number; padding: string } }> };
      expect(page.data.map((event) => event.id)).toEqual(Array.from({ length: EVENTS }, (_, index) => index + 1));
      for (const event of page.data) expect(event.data.padding).toBe(padding(event.data.index));
    }
    expect(raw.length).toBe(0);
  });
});

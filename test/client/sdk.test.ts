// @devdata/client against the real server over a socket: typed calls, the one error type,
// retries (429 after Retry-After, network failures; writes with their Idempotency-Key), If-Match, paging.
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { dirname, join, resolve } from 'node:path';
import { DevdataClient, DevdataError, ifMatch, type Resource } from '@devdata/client';
import { describe, expect, it } from 'vitest';
import { renderOpenApiDocument, CANONICAL_BASE_URL } from '../../src/openapi-document.js';
import { ManualClock, TestApp, useTestApp } from '../support/app.js';
import { ROOT } from '../support/processes.js';
import { sleep } from '../support/wait.js';
import { thrown } from './support.js';

const failure = (call: Promise<unknown>) => thrown(call, DevdataError);

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

describe('@devdata/client', () => {
  const app = useTestApp({ env: { EVENT_RETENTION: '20' } });

  async function client(scopes?: Parameters<TestApp['account']>[0]) {
    const base = app().config.baseUrl.startsWith('http://127.0.0.1') ? app().config.baseUrl : await app().listen();
    const account = await app().account(scopes);
    return { devdata: new DevdataClient({ baseUrl: base, apiKey: account.key }), account, base };
  }

  it('has a typed method for every operation of the served document except the stream, the OAuth endpoints and HEAD', async () => {
    const document = (await app().request({ url: '/openapi.json' })).json as { paths: Record<string, Record<string, { operationId: string }>> };
    const handWritten = new Set(['streamEvents', 'showAuthorizationPage', 'submitAuthorizationPage', 'requestToken', 'revokeToken', 'batch']);
    // A HEAD operation is its GET's headers without a body: the GET's method serves.
    const ids = Object.values(document.paths).flatMap((methods) =>
      Object.entries(methods).flatMap(([method, operation]) => (method === 'head' ? [] : [operation.operationId])),
    );
    for (const id of ids) {
      if (handWritten.has(id)) continue;
      expect(typeof (DevdataClient.prototype as unknown as Record<string, unknown>)[id], id).toBe('function');
    }
    // The stream is the hand-written iterator; the OAuth endpoints are DevdataOAuth's; batch is typed by its operations.
    expect(typeof DevdataClient.prototype.streamEvents).toBe('function');
    expect(typeof DevdataClient.prototype.batch).toBe('function');
  });

  it('was generated from the document the server serves (the copy in client/ has not drifted)', async () => {
    const copy = await readFile(join(ROOT, 'client', 'openapi.json'), 'utf8');
    expect(copy === (await renderOpenApiDocument(CANONICAL_BASE_URL)), 'client/openapi.json is stale: run npm run openapi:client').toBe(true);
  });

  it('creates, reads, changes and deletes a resource with typed calls', async () => {
    const { devdata } = await client();
    const created = await devdata.createResource({
      body: { name: 'Kitchen temperature', type: 'sensor', state: 21.5, tags: ['kitchen'], attributes: { unit_of_measurement: '°C' } },
    });
    expect(created).toMatchObject({ name: 'Kitchen temperature', type: 'sensor', state: 21.5, version: 1, tags: ['kitchen'] });
    expect(await devdata.getResource({ path: { id: created.id } })).toEqual(created);
    const changed = await devdata.updateResource({ path: { id: created.id }, body: { state: 22 } });
    expect(changed.version).toBe(2);
    // A matching If-None-Match answers 304: nothing to read again.
    expect(await devdata.getResource({ path: { id: created.id }, header: { 'if-none-match': ifMatch(2) } })).toBeUndefined();
    await devdata.deleteResource({ path: { id: created.id }, header: { 'if-match': ifMatch(2) } });
    const gone = await failure(devdata.getResource({ path: { id: created.id } }));
    expect(gone).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('makes a 412 easy to recognise, with the current version to retry from', async () => {
    const { devdata } = await client();
    const resource = await devdata.createResource({ body: { name: 'Switch', type: 'switch', state: false } });
    await devdata.updateResource({ path: { id: resource.id }, body: { state: true } });
    const conflict = await failure(devdata.updateResource({ path: { id: resource.id }, header: { 'if-match': ifMatch(1) }, body: { state: false } }));
    expect(conflict.isPreconditionFailed).toBe(true);
    expect(conflict).toMatchObject({ status: 412, code: 'precondition_failed' });
    expect(conflict.currentVersion).toBe(2);
    const retried = await devdata.updateResource({
      path: { id: resource.id },
      header: { 'if-match': ifMatch(conflict.currentVersion as number) },
      body: { state: false },
    });
    expect(retried.version).toBe(3);
  });

  it('throws one error type carrying status, code, message, requestId and details', async () => {
    const { devdata, base } = await client(['resources:read']);
    const invalid = await failure(devdata.createResource({ body: { name: '', type: 'sensor', state: 1 } }));
    // Missing scope first: the key has resources:read only.
    expect(invalid).toMatchObject({ status: 403, code: 'insufficient_scope' });
    expect(invalid.requestId).toMatch(/\S+/);
    expect(invalid.message).toContain('resources:write');

    const writer = await client();
    const bad = await failure(writer.devdata.createResource({ body: { name: 'x', type: 'switch', state: 'on' as unknown as boolean } }));
    expect(bad).toMatchObject({ status: 400, code: 'invalid_request', name: 'DevdataError' });
    expect(bad.details).toEqual([expect.objectContaining({ path: '/state', message: expect.any(String) })]);

    const anonymous = await failure(new DevdataClient({ baseUrl: base, apiKey: 'ddk_not_a_key' }).getCurrentCredential());
    expect(anonymous).toMatchObject({ status: 401, code: 'unauthorized' });
    expect(anonymous.headers?.get('www-authenticate')).toContain('invalid_token');
  });

  it('sends the credential from a function, so a token can be refreshed between calls', async () => {
    const { account, base } = await client();
    let asked = 0;
    const devdata = new DevdataClient({
      baseUrl: base,
      apiKey: () => {
        asked++;
        return Promise.resolve(account.key);
      },
    });
    expect((await devdata.getCurrentCredential()).credential.id).toBe(account.keyId);
    await devdata.getApiInfo();
    expect(asked).toBe(2);
  });

  it('retries network failures with backoff, a write with its Idempotency-Key; a write outside the API never', async () => {
    const { account, base } = await client();
    let failuresLeft = 2;
    const calls: Array<[string, string | null]> = [];
    const flaky: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      calls.push([request.method, request.headers.get('idempotency-key')]);
      if (failuresLeft > 0) {
        failuresLeft--;
        throw new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } });
      }
      return fetch(request);
    };
    const devdata = new DevdataClient({ baseUrl: base, apiKey: account.key, fetch: flaky, retry: { initialDelayMs: 10 } });
    expect((await devdata.getCurrentCredential()).account.id).toBe(account.accountId);
    expect(calls).toEqual([
      ['GET', null],
      ['GET', null],
      ['GET', null],
    ]);

    // A POST is sent again with the same key: had it reached the server, the server would replay it.
    failuresLeft = 1;
    calls.length = 0;
    await devdata.publishEvent({ body: { type: 'custom.once', data: {} } });
    expect(calls.map(([method]) => method)).toEqual(['POST', 'POST']);
    expect(calls[0]![1]).toMatch(/^[0-9a-f-]{36}$/);
    expect(calls[1]![1]).toBe(calls[0]![1]);
    expect((await devdata.listEvents({ query: { type: 'custom.once' } })).data).toHaveLength(1);

    // The OAuth endpoints take no key: a POST there is not retried.
    failuresLeft = 1;
    calls.length = 0;
    const refused = await failure(devdata.api.POST('/oauth/revoke', { body: { token: 'dda_x' } as never }));
    expect(refused).toMatchObject({ status: 0, code: 'connection_error' });
    expect(refused.message).toContain('ECONNRESET');
    expect(calls).toEqual([['POST', null]]);

    // Past the configured retries, the failure is thrown.
    failuresLeft = 5;
    expect(await failure(devdata.getApiInfo())).toMatchObject({ code: 'connection_error' });
  });

  it('stops retrying when the caller aborts', async () => {
    const { account, base } = await client();
    const down: typeof fetch = async () => {
      throw new TypeError('fetch failed');
    };
    // The retry would wait 22 s at least (30 s less its jitter): ending within 20 s, however busy the machine, is the abort's doing.
    const devdata = new DevdataClient({ baseUrl: base, apiKey: account.key, fetch: down, retry: { initialDelayMs: 30_000 } });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    expect(await failure(devdata.getApiInfo(undefined, { signal: controller.signal }))).toMatchObject({ status: 0, code: 'aborted' });
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('aborts a call whose server never answers, also after a garbage collection (undici loses a cloned request’s abort then)', async () => {
    const { account } = await client();
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const devdata = new DevdataClient({ baseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, apiKey: account.key });
      const controller = new AbortController();
      const call = failure(devdata.createResource({ body: { name: 'Never', type: 'text', state: 'x' } }, { signal: controller.signal }));
      await sleep(100);
      v8.setFlagsFromString('--expose-gc');
      (runInNewContext('gc') as () => void)();
      controller.abort();
      expect(await call).toMatchObject({ status: 0, code: 'aborted' });
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  it('pages through every list as an async iterator', async () => {
    const { devdata } = await client();
    const made: Resource[] = [];
    for (let i = 0; i < 7; i++)
      made.push(await devdata.createResource({ body: { name: `Sensor ${i}`, type: 'sensor', state: i, tags: i % 2 ? ['odd'] : [] } }));
    expect((await collect(devdata.iterateResources({ limit: 3 }))).map((resource) => resource.id)).toEqual(made.map((resource) => resource.id));
    expect((await collect(devdata.iterateResources({ limit: 2, tag: ['odd'] }))).map((resource) => resource.state)).toEqual([1, 3, 5]);

    const events = await collect(devdata.iterateEvents({ limit: 3 }));
    expect(events.map((event) => event.id)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const first = events[0];
    if (first?.type !== 'resource.created') throw new Error('expected a resource.created event');
    expect(first.data.resource.name).toBe('Sensor 0');
    const pages = await collect(devdata.eventPages({ after: 4, limit: 2 }));
    expect(pages.map((page) => [page.data.map((event) => event.id), page.cursor, page.hasMore])).toEqual([
      [[5, 6], 6, true],
      [[7], 7, false],
    ]);

    expect((await collect(devdata.iterateAuditRecords({ limit: 1 }))).length).toBeGreaterThan(0);
    await devdata.createApiKey({ body: { name: 'second', scopes: ['resources:read'] } });
    expect((await collect(devdata.iterateApiKeys())).map((key) => key.name)).toContain('second');
    expect(await collect(devdata.iterateWebhooks())).toEqual([]);
    expect(await collect(devdata.iterateApps())).toEqual([]);
    expect(await collect(devdata.iterateSchedules())).toEqual([]);
    expect((await collect(devdata.iterateInstallations())).map((installation) => installation.id)).toContain('openapi-document');
  });

  it('surfaces an expired cursor (410) with the oldest cursor that still works', async () => {
    const { devdata } = await client();
    for (let i = 0; i < 25; i++) await devdata.publishEvent({ body: { type: 'custom.tick', data: { i } } });
    const expired = await failure(collect(devdata.iterateEvents({ after: 2 })));
    expect(expired).toMatchObject({ status: 410, code: 'cursor_expired' });
    expect(expired.oldestCursor).toBe(5);
    expect(expired.message).toContain('the oldest cursor still retained is 5');
    expect((await collect(devdata.iterateEvents({ after: expired.oldestCursor as number }))).map((event) => event.id)[0]).toBe(6);
  });

  it('downloads a file as bytes through the generated method', async () => {
    const { devdata } = await client();
    const bytes = await devdata.downloadInstallation({ path: { id: 'openapi-document' } });
    const document = JSON.parse(new TextDecoder().decode(bytes)) as { openapi: string };
    expect(document.openapi).toMatch(/^3\.1/);
  });
});

describe('@devdata/client and the rate limit', () => {
  it('retries a 429 after its Retry-After, and throws it when told not to retry', async () => {
    // The window resets at the minute: with the clock 1 s before it, Retry-After is 1.
    const clock = new ManualClock(new Date('2026-01-01T00:00:59.000Z'));
    const t = await TestApp.start({ env: { RATE_LIMIT_PER_MINUTE: '2' }, clock });
    try {
      const base = await t.listen();
      const account = await t.account();
      const seen: number[] = [];
      // The server's clock moves on once the client has been told to wait: the retry then lands in the next window.
      const observing: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        seen.push(response.status);
        if (response.status === 429) clock.advance(1_000);
        return response;
      };
      const devdata = new DevdataClient({ baseUrl: base, apiKey: account.key, fetch: observing });
      await devdata.getApiInfo();
      await devdata.getApiInfo();
      const started = Date.now();
      expect((await devdata.getCurrentCredential()).account.id).toBe(account.accountId);
      expect(seen).toEqual([200, 200, 429, 200]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);

      // A key of its own: a window starts for it now, a whole minute before it resets.
      const impatient = new DevdataClient({ baseUrl: base, apiKey: (await t.account()).key, retry: { rateLimited: 0 } });
      await impatient.getApiInfo();
      await impatient.getApiInfo();
      const limited = await failure(impatient.getApiInfo());
      expect(limited).toMatchObject({ status: 429, code: 'rate_limited' });
      expect(limited.retryAfterSeconds).toBe(60);
    } finally {
      await t.close();
    }
  });
});

describe('@devdata/client in a browser', () => {
  it('imports nothing of Node from its entry point (the CLI alone uses node:http)', async () => {
    const seen = new Set<string>();
    const nodeImports: string[] = [];
    const visit = async (file: string): Promise<void> => {
      if (seen.has(file)) return;
      seen.add(file);
      const source = await readFile(file, 'utf8');
      for (const [, specifier] of source.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]/g)) {
        if (specifier?.startsWith('.')) await visit(resolve(dirname(file), specifier));
        else if (specifier?.startsWith('node:')) nodeImports.push(`${file}: ${specifier}`);
      }
    };
    await visit(join(ROOT, 'client', 'dist', 'index.js'));
    expect(seen.size).toBeGreaterThan(5);
    expect([...seen].some((file) => file.endsWith('forward.js') || file.endsWith('cli.js'))).toBe(false);
    expect(nodeImports).toEqual([]);
  });
});

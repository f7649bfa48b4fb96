import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Installation as BuiltInstallation } from '../../src/areas/installations/service.js';
import { TestApp, useTestApp } from '../support/app.js';
import { expectError } from '../support/expect.js';

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/** An installation as the list shows it: its record and where to download it. */
interface Installation extends BuiltInstallation {
  downloadUrl: string;
}

describe('installations', () => {
  const app = useTestApp();

  async function listed(): Promise<{ key: string; installation: Installation }> {
    const caller = await app().account(['integrations:read']);
    const response = await app().request({ url: '/api/v1/installations', key: caller.key });
    expect(response.status, response.body).toBe(200);
    const installation = response.json.data.find((entry: Installation) => entry.id === 'openapi-document');
    expect(installation).toBeDefined();
    return { key: caller.key, installation };
  }

  /** The raw bytes of a download through inject() (its body as a Buffer, not a string). */
  async function download(key: string | undefined, url: string, headers: Record<string, string> = {}) {
    const response = await app().app.inject({ method: 'GET', url, headers: { ...headers, ...(key ? { authorization: `Bearer ${key}` } : {}) } });
    return { status: response.statusCode, headers: response.headers, bytes: response.rawPayload };
  }

  describe('GET /api/v1/installations', () => {
    it('lists the OpenAPI document, described by size and sha256', async () => {
      const caller = await app().account(['integrations:read']);
      const response = await app().request({ url: '/api/v1/installations', key: caller.key });
      expect(response.status).toBe(200);
      expect(Object.keys(response.json)).toEqual(['data']);
      expect(response.json.data).toContainEqual({
        id: 'openapi-document',
        name: 'OpenAPI document',
        description: expect.any(String),
        version: '1.3.0',
        filename: 'devdata-openapi-1.3.0.json',
        size: expect.any(Number),
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
        downloadUrl: '/api/v1/installations/openapi-document/download',
      });
      // The listed figures describe the very document GET /openapi.json serves.
      const installation = response.json.data[0] as Installation;
      const served = Buffer.from((await app().request({ url: '/openapi.json' })).body);
      expect(installation.size).toBe(served.length);
      expect(installation.sha256).toBe(sha256(served));
    });

    it("serves the document for this server's base URL, byte for byte the one /openapi.json serves", async () => {
      const t = await TestApp.start({ env: { BASE_URL: 'https://data.acme.test' } });
      try {
        const caller = await t.account(['integrations:read']);
        const served = await t.request({ url: '/openapi.json' });
        const downloaded = await t.app.inject({ url: '/api/v1/installations/openapi-document/download', headers: { authorization: `Bearer ${caller.key}` } });
        expect(downloaded.statusCode).toBe(200);
        expect(downloaded.rawPayload.equals(Buffer.from(served.body))).toBe(true);
        const document = JSON.parse(downloaded.body);
        expect(document.servers).toEqual([{ url: 'https://data.acme.test' }]);
        expect(document.components.securitySchemes.oauth2.flows.clientCredentials.tokenUrl).toBe('https://data.acme.test/oauth/token');
        expect(downloaded.body).not.toContain('devdata.example');
      } finally {
        await t.close();
      }
    });

    it('needs integrations:read (403) and a credential (401)', async () => {
      const other = await app().account(['resources:read', 'events:read', 'usage:read']);
      const refused = await app().request({ url: '/api/v1/installations', key: other.key });
      expectError(refused, 403, 'insufficient_scope');
      expect(refused.headers['www-authenticate']).toBe('Bearer realm="devdata", error="insufficient_scope", scope="integrations:read"');
      const anonymous = await app().request({ url: '/api/v1/installations' });
      expectError(anonymous, 401, 'unauthorized');
      expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="devdata"');
      expectError(await app().request({ url: '/api/v1/installations', key: 'ddk_nope' }), 401, 'unauthorized');
    });
  });

  describe('GET /api/v1/installations/{id}/download', () => {
    it('serves the whole file: size and sha256 as listed, attachment, ETag, Content-Length', async () => {
      const { key, installation } = await listed();
      const response = await download(key, installation.downloadUrl);
      expect(response.status).toBe(200);
      expect(response.bytes.length).toBe(installation.size);
      expect(sha256(response.bytes)).toBe(installation.sha256);
      expect(response.headers['content-type']).toBe('application/octet-stream');
      expect(response.headers['content-disposition']).toBe('attachment; filename="devdata-openapi-1.3.0.json"');
      expect(response.headers['content-length']).toBe(String(installation.size));
      expect(response.headers.etag).toBe(`"${installation.sha256}"`);
      expect(response.headers['accept-ranges']).toBe('bytes');
      expect(response.headers['x-request-id']).toBeDefined();
      expect(response.headers['ratelimit-limit']).toBeDefined();
      // It is this API's OpenAPI document.
      const document = JSON.parse(response.bytes.toString('utf8'));
      expect(document.openapi).toMatch(/^3\.1\./);
      expect(document.info.version).toBe('1.3.0');
      expect(Object.keys(document.paths)).toContain('/api/v1/installations/{id}/download');
    });

    it('answers a Range request with 206 and exactly those bytes', async () => {
      const { key, installation } = await listed();
      const whole = (await download(key, installation.downloadUrl)).bytes;
      const cases: Array<[string, number, number]> = [
        ['bytes=0-99', 0, 99],
        ['bytes=100-199', 100, 199],
        [`bytes=${installation.size - 10}-`, installation.size - 10, installation.size - 1],
        ['bytes=-50', installation.size - 50, installation.size - 1],
        [`bytes=5-${installation.size + 1000}`, 5, installation.size - 1],
        ['bytes=0-0', 0, 0],
      ];
      for (const [range, start, end] of cases) {
        const part = await download(key, installation.downloadUrl, { range });
        expect(part.status, range).toBe(206);
        expect(part.headers['content-range']).toBe(`bytes ${start}-${end}/${installation.size}`);
        expect(part.headers['content-length']).toBe(String(end - start + 1));
        expect(part.bytes.equals(whole.subarray(start, end + 1)), range).toBe(true);
        expect(part.headers.etag).toBe(`"${installation.sha256}"`);
      }
      // Reassembled from ranges, the file has the listed digest.
      const pieces: Buffer[] = [];
      for (let start = 0; start < installation.size; start += 4096) {
        pieces.push((await download(key, installation.downloadUrl, { range: `bytes=${start}-${start + 4095}` })).bytes);
      }
      expect(sha256(Buffer.concat(pieces))).toBe(installation.sha256);
    });

    it('answers 416 with Content-Range for a range beyond the file, and ignores ranges it does not serve', async () => {
      const { key, installation } = await listed();
      for (const range of [`bytes=${installation.size}-`, `bytes=${installation.size + 10}-${installation.size + 20}`, 'bytes=-0', 'bytes=50-10']) {
        const response = await app().request({ url: installation.downloadUrl, key, headers: { range } });
        expectError(response, 416, 'range_not_satisfiable');
        expect(response.headers['content-range']).toBe(`bytes */${installation.size}`);
      }
      // Another unit, several ranges, or nonsense: the whole file (a server may ignore Range).
      for (const range of ['items=0-10', 'bytes=0-10,20-30', 'bytes=abc', 'bytes=-']) {
        const response = await download(key, installation.downloadUrl, { range });
        expect(response.status, range).toBe(200);
        expect(response.bytes.length).toBe(installation.size);
      }
    });

    it('answers 304 to If-None-Match with the current ETag', async () => {
      const { key, installation } = await listed();
      const etag = `"${installation.sha256}"`;
      for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const response = await download(key, installation.downloadUrl, { 'if-none-match': header });
        expect(response.status, header).toBe(304);
        expect(response.bytes.length).toBe(0);
        expect(response.headers.etag).toBe(etag);
      }
      const stale = await download(key, installation.downloadUrl, { 'if-none-match': '"0000"' });
      expect(stale.status).toBe(200);
      expect(stale.bytes.length).toBe(installation.size);
    });

    it('is 404 for an unknown installation, 403 without integrations:read, 401 without a credential', async () => {
      const { key } = await listed();
      expectError(await app().request({ url: '/api/v1/installations/no-such-thing/download', key }), 404, 'not_found');
      expectError(await app().request({ url: '/api/v1/installations/manifest.json/download', key }), 404, 'not_found');
      expectError(await app().request({ url: '/api/v1/installations/..%2Fcli.js/download', key }), 404, 'not_found');
      const other = await app().account(['resources:read']);
      expectError(await app().request({ url: '/api/v1/installations/openapi-document/download', key: other.key }), 403, 'insufficient_scope');
      expectError(await app().request({ url: '/api/v1/installations/openapi-document/download' }), 401, 'unauthorized');
    });
  });

  describe('over a real socket', () => {
    it('downloads the file whole and by range with fetch', async () => {
      const { key, installation } = await listed();
      const base = await app().listen();
      const url = new URL(installation.downloadUrl, base);
      const whole = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
      expect(whole.status).toBe(200);
      const bytes = Buffer.from(await whole.arrayBuffer());
      expect(bytes.length).toBe(installation.size);
      expect(Number(whole.headers.get('content-length'))).toBe(installation.size);
      expect(sha256(bytes)).toBe(installation.sha256);

      const part = await fetch(url, { headers: { 'x-api-key': key, range: 'bytes=0-99' } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe(`bytes 0-99/${installation.size}`);
      expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(0, 100))).toBe(true);

      const head = await fetch(url, { method: 'HEAD', headers: { authorization: `Bearer ${key}` } });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe(String(installation.size));
      expect(await head.text()).toBe('');
    });
  });

  describe('discovery', () => {
    it('lists installations in the capabilities document and both routes in /openapi.json', async () => {
      const capabilities = await app().request({ url: '/api/v1/capabilities' });
      expect(capabilities.json.features.installations).toMatchObject({ rangeRequests: true });
      const document = (await app().request({ url: '/openapi.json' })).json;
      expect(document.paths['/api/v1/installations'].get).toBeDefined();
      const downloadOperation = document.paths['/api/v1/installations/{id}/download'].get;
      expect(Object.keys(downloadOperation.responses)).toEqual(expect.arrayContaining(['200', '206', '304', '404', '416']));
      expect(document.components.schemas.Installation.required).toEqual(
        expect.arrayContaining(['id', 'name', 'description', 'version', 'filename', 'size', 'sha256', 'downloadUrl']),
      );
    });
  });
});

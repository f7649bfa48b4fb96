// /console: the service serves the built console itself: the page never cached and under a strict
// Content-Security-Policy, hashed assets cached for good and compressed, nothing from elsewhere.
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { attributeValues, builtFile, consoleIndexHtml } from './built-files.js';

describe('the console files', () => {
  const app = useTestApp();

  it('serves the page with no-store, a strict CSP and the usual security headers', async () => {
    const response = await app().request({ url: '/console' });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.headers['cache-control']).toBe('no-store');
    const csp = String(response.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    expect(response.headers['x-frame-options']).toBe('DENY');
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['referrer-policy']).toBe('no-referrer');
    expect(response.headers['cross-origin-opener-policy']).toBe('same-origin');
    expect(response.body).toBe(consoleIndexHtml());
  });

  it('has no inline script and loads nothing from another origin', () => {
    const html = consoleIndexHtml();
    const scripts = [...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/gi)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [element, content] of scripts) {
      expect(element).toMatch(/\ssrc="\/console\/assets\/[^"]+\.js"/);
      expect(content?.trim()).toBe('');
    }
    expect(html).not.toMatch(/\sstyle="/i);
    expect(html).not.toMatch(/\son[a-z]+="/i);
    for (const url of [...attributeValues(html, 'script', 'src'), ...attributeValues(html, 'link', 'href')]) expect(url).toMatch(/^\/console\/assets\//);
  });

  it('serves every client route of the console as the same page', async () => {
    for (const path of ['/console/', '/console/resources', '/console/webhooks/wh_123']) {
      const response = await app().request({ url: path });
      expect(response.status, path).toBe(200);
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.body).toBe(consoleIndexHtml());
    }
  });

  it('caches hashed assets as immutable, also when a session cookie is sent, and compresses them', async () => {
    const html = consoleIndexHtml();
    const urls = [...attributeValues(html, 'script', 'src'), ...attributeValues(html, 'link', 'href')];
    expect(urls.some((url) => url.endsWith('.js'))).toBe(true);
    for (const url of urls) {
      const plain = await app().app.inject({ url, headers: { cookie: '__Host-service_developer_session=dds_x' } });
      expect(plain.statusCode, url).toBe(200);
      expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(plain.headers['cross-origin-resource-policy']).toBe('same-origin');
      expect(plain.rawPayload.equals(builtFile(url))).toBe(true);
      if (url.endsWith('.js')) expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
    }
    const script = attributeValues(html, 'script', 'src')[0] as string;
    const raw = await app().app.inject({ url: script, headers: { 'accept-encoding': 'gzip, deflate, br' } });
    expect(raw.headers['content-encoding']).toBe('br');
    expect(raw.headers.vary).toBe('Origin, Accept-Encoding');
    expect(brotliDecompressSync(raw.rawPayload).equals(builtFile(script))).toBe(true);
    const gzipped = await app().app.inject({ url: script, headers: { 'accept-encoding': 'gzip' } });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzipped.rawPayload).equals(builtFile(script))).toBe(true);
  });

  it('answers a missing asset with the API error body, never with the page', async () => {
    for (const path of ['/console/assets/missing-0000.js', '/console/missing.css']) {
      const response = await app().request({ url: path });
      expect(response.status, path).toBe(404);
      expect(response.json.error.code).toBe('not_found');
      expect(response.json.error.requestId).toBe(response.headers['x-request-id']);
    }
  });

  it('is not part of the API document and spends no API allowance', async () => {
    const document = await app().request({ url: '/openapi.json' });
    expect(Object.keys(document.json.paths).filter((path) => path.startsWith('/console'))).toEqual([]);
    const response = await app().request({ url: '/console' });
    expect(response.headers['ratelimit-remaining']).toBeDefined();
    const again = await app().request({ url: '/console' });
    expect(again.headers['ratelimit-remaining']).toBe(response.headers['ratelimit-remaining']);
  });
});

import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';

describe('public system endpoints', () => {
  const app = useTestApp();

  it('GET /health answers ok with the contract headers, uncounted', async () => {
    const first = await app().request({ url: '/health' });
    const second = await app().request({ url: '/health' });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ status: 'ok' });
    expect(first.headers['x-request-id']).toMatch(/^req_/);
    expect(first.headers['ratelimit-limit']).toBeDefined();
    expect(second.headers['ratelimit-remaining']).toBe(first.headers['ratelimit-remaining']);
  });

  it('GET /api/v1 names the API', async () => {
    const response = await app().request({ url: '/api/v1' });
    expect(response.json).toEqual({ name: 'Developer Data Service API', version: '1.3.0' });
  });

  it('POST /api/v1/echo echoes', async () => {
    const response = await app().request({ method: 'POST', url: '/api/v1/echo', body: { message: 'hi' } });
    expect(response.status).toBe(200);
    expect(response.json.message).toBe('hi');
  });
});

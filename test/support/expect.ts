// Assertions on the API's common error body (docs/decisions.md: "HTTP contract"), shared by the test files.
import { expect } from 'vitest';
import type { TestResponse } from './app.js';

/** The status, and the error body `{"error":{"code","message","requestId",…}}` with the response's request id. */
export function expectError(response: TestResponse, status: number, code: string): void {
  expect(response.status, response.body).toBe(status);
  expect(response.json).toMatchObject({ error: { code, message: expect.any(String), requestId: expect.any(String) } });
  expect(response.headers['x-request-id']).toBe(response.json.error.requestId);
}

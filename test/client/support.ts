// Restarting the server under a client: one database for two servers in turn, the second on the
// first one's port, so a client that follows the first reconnects to the second.
import { join } from 'node:path';
import { listen } from '../../src/app.js';
import { TestApp, testDatabase } from '../support/app.js';

/** A SQLite file in `directory`, or with TEST_DATABASE_URL a fresh PostgreSQL schema. */
export async function sharedDatabase(directory: string): Promise<{ url: string; drop: () => Promise<void> }> {
  if (process.env.TEST_DATABASE_URL?.startsWith('postgres')) return testDatabase();
  return { url: `sqlite:${join(directory, `restart-${Date.now()}-${Math.random().toString(36).slice(2)}.db`)}`, drop: async () => {} };
}

/**
 * Closes `current` (its streams end) and starts another server on the same database; `whileDown`
 * runs on it before it listens on the same port (e.g. writes events the client has not seen).
 */
export async function restart<T>(current: TestApp, databaseUrl: string, whileDown: (next: TestApp) => Promise<T>): Promise<{ next: TestApp; result: T }> {
  const port = Number(new URL(current.config.baseUrl).port);
  await current.close();
  const next = await TestApp.start({ env: { DATABASE_URL: databaseUrl } });
  try {
    const result = await whileDown(next);
    await listen(next.app, next.config, { port, host: '127.0.0.1' });
    return { next, result };
  } catch (error) {
    await next.close();
    throw error;
  }
}

// A real `devdata serve` process SIGKILLed while batches and keyed writes are in flight (issue #39):
// after a restart, every request that got no answer is sent again with its key until it is
// answered. Then every operation took effect exactly once, the event ids have no gap, and no batch
// is half there.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ON_POSTGRES, testDatabase } from '../support/app.js';
import { CLI, cleanEnv, killAll, run, ServerProcess } from '../support/processes.js';
import { until } from '../support/wait.js';

/** Requests in flight at once. */
const IN_FLIGHT = 12;
/** Creates per batch. */
const BATCH = 25;

interface Job {
  key: string;
  path: string;
  body: unknown;
  answered?: number;
}

function job(index: number): Job {
  const key = `crash-${index}`;
  if (index % 2 === 0) {
    const operations = Array.from({ length: BATCH }, (_, item) => ({ op: 'create', name: `b${index}-${item}`, type: 'sensor', state: item }));
    return { key, path: '/api/v1/batch', body: { operations: [...operations, { op: 'publish', type: 'custom.batch', data: { job: index } }] } };
  }
  return { key, path: '/api/v1/events', body: { type: 'custom.single', data: { job: index } } };
}

async function send(base: string, apiKey: string, entry: Job): Promise<number> {
  const response = await fetch(`${base}${entry.path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': entry.key },
    body: JSON.stringify(entry.body),
  });
  await response.arrayBuffer();
  return response.status;
}

describe('a server killed while keyed writes are in flight', () => {
  let workDir: string;
  let database: { url: string; drop: () => Promise<void> };
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    workDir = mkdtempSync(join(tmpdir(), 'devdata-idempotency-crash-'));
    database = ON_POSTGRES ? await testDatabase() : { url: `sqlite:${join(workDir, 'devdata.db')}`, drop: async () => {} };
    env = cleanEnv({ DATABASE_URL: database.url, PORT: '0', LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '1000000', RATE_LIMIT_ACCOUNT_PER_MINUTE: '1000000' });
  });

  afterAll(async () => {
    await killAll();
    await database?.drop();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  it('does every operation exactly once once the unanswered requests are sent again with their keys', async () => {
    const created = await run(process.execPath, [CLI, 'accounts', 'create', '--name', 'Crash', '--json'], { env });
    expect(created.code, created.stderr).toBe(0);
    const apiKey = (JSON.parse(created.stdout) as { apiKey: { key: string } }).apiKey.key;

    const first = new ServerProcess(env, workDir);
    const base = await first.listening();
    const jobs: Job[] = [];
    let stop = false;
    const workers = Array.from({ length: IN_FLIGHT }, async () => {
      while (!stop) {
        const entry = job(jobs.length);
        jobs.push(entry);
        try {
          entry.answered = await send(base, apiKey, entry);
        } catch {
          return; // the server is gone
        }
      }
    });
    await until(() => jobs.filter((entry) => entry.answered !== undefined).length >= 60, 'some writes answered before the kill', 60_000);
    first.child.kill('SIGKILL');
    stop = true;
    await Promise.all(workers);
    await first.exitWithin();
    const unanswered = jobs.filter((entry) => entry.answered === undefined);
    expect(unanswered.length).toBeGreaterThan(0);
    for (const entry of jobs) if (entry.answered !== undefined) expect(entry.answered, entry.key).toBeLessThan(300);

    const second = new ServerProcess(env, workDir);
    const restarted = await second.listening();
    for (const entry of unanswered) {
      let status = await send(restarted, apiKey, entry);
      while (status === 409) status = await send(restarted, apiKey, entry);
      expect(status, entry.key).toBeLessThan(300);
    }

    // Every event, in id order: ids from 1 with no gap, each job's own once.
    const events: Array<{ id: number; type: string; data: { job?: number; resource?: { name: string } } }> = [];
    for (let after = 0; ; ) {
      const page = await fetch(`${restarted}/api/v1/events?after=${after}&limit=1000`, { headers: { authorization: `Bearer ${apiKey}` } });
      const body = (await page.json()) as { data: typeof events; hasMore: boolean; cursor: number };
      events.push(...body.data);
      after = body.cursor;
      if (!body.hasMore) break;
    }
    expect(events.map((event) => event.id)).toEqual(events.map((_event, index) => index + 1));
    const count = new Map<string, number>();
    const seen = (name: string) => count.set(name, (count.get(name) ?? 0) + 1);
    for (const event of events) {
      if (event.type === 'resource.created') seen(event.data.resource!.name);
      else seen(`job ${event.data.job}`);
    }
    for (const [index, entry] of jobs.entries()) {
      if (entry.path === '/api/v1/batch') {
        for (let item = 0; item < BATCH; item++) expect(count.get(`b${index}-${item}`), `batch ${index} item ${item}`).toBe(1);
      }
      expect(count.get(`job ${index}`), entry.key).toBe(1);
    }
    expect(count.size).toBe(jobs.length + jobs.filter((entry) => entry.path === '/api/v1/batch').length * BATCH);
    second.child.kill('SIGTERM');
    expect((await second.exitWithin()).code).toBe(0);
  }, 120_000);
});

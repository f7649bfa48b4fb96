// The storage floor of the HTTP read rows: the SQLite statements the service runs for one such
// request (src/areas/resources/store.ts, src/areas/events/store.ts), run by better-sqlite3 directly
// in a loop on the benchmark's own database: no HTTP, no Kysely, no credential, no JSON building.
// A request can never cost the server's one thread less than its reads, so baseline CPU per
// request ÷ this is the highest ratio the row could reach on this machine with everything else free.
import Database from 'better-sqlite3';

export const FLOOR_ROWS = ['get', 'list', 'events'] as const;
export type FloorRowKey = (typeof FLOOR_ROWS)[number];

export interface StorageFloor {
  /** Microseconds of the row's statements per request, best of three runs. */
  usPerRequest: number;
  statements: number;
}

const RESOURCE_COLUMNS = '"id", "name", "type", "state", "attributes", "tags", "version", "created_at", "updated_at"';

export function measureStorageFloors(
  path: string,
  request: { resourceId: string; eventsAfter: number; listLimit: number; pageLimit: number },
  millisecondsPerRun = 300,
): Record<FloorRowKey, StorageFloor> {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const { account_id: accountId } = db.prepare('select "account_id" from "resources" where "id" = ?').get(request.resourceId) as { account_id: string };
    const resource = db.prepare(`select ${RESOURCE_COLUMNS} from "resources" where "id" = ? and "account_id" = ?`);
    const page = db.prepare(`select ${RESOURCE_COLUMNS} from "resources" where "account_id" = ? order by "created_seq" limit ? offset ?`);
    const count = db.prepare('select count(*) as "total" from "resources" where "account_id" = ?');
    const newest = db.prepare('select "event_seq" from "accounts" where "id" = ?');
    const events = db.prepare('select "id", "type", "data", "created_at" from "events" where "account_id" = ? and "id" > ? order by "id" limit ?');
    const runs: Record<FloorRowKey, { statements: number; run: () => void }> = {
      get: { statements: 1, run: () => resource.all(request.resourceId, accountId) },
      list: {
        statements: 2,
        run: () => {
          page.all(accountId, request.listLimit, 0);
          count.all(accountId);
        },
      },
      events: {
        statements: 2,
        run: () => {
          newest.all(accountId);
          // The service reads one more than the page to know whether there are more.
          events.all(accountId, request.eventsAfter, request.pageLimit + 1);
        },
      },
    };
    const floors = {} as Record<FloorRowKey, StorageFloor>;
    for (const [key, { statements, run }] of Object.entries(runs) as Array<[FloorRowKey, { statements: number; run: () => void }]>) {
      const perRun: number[] = [];
      for (let attempt = 0; attempt < 4; attempt++) {
        let done = 0;
        const started = process.hrtime.bigint();
        const until = started + BigInt(millisecondsPerRun) * 1_000_000n;
        let now = started;
        while (now < until) {
          run();
          done++;
          now = process.hrtime.bigint();
        }
        // The first run warms the caches and is not counted.
        if (attempt > 0) perRun.push(Number(now - started) / 1000 / done);
      }
      floors[key] = { usPerRequest: Math.round(Math.min(...perRun) * 10) / 10, statements };
    }
    return floors;
  } finally {
    db.close();
  }
}

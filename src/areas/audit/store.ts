import type { Executor } from '../../storage/schema.js';
import { startsWith } from '../../storage/filters.js';

export interface AuditRow {
  id: string;
  accountId: string;
  seq: number;
  type: string;
  actor: Record<string, unknown>;
  target: Record<string, unknown> | null;
  data: Record<string, unknown>;
  createdAt: string;
}

export async function insertAudit(db: Executor, row: AuditRow): Promise<void> {
  await db
    .insertInto('audit_log')
    .values({
      id: row.id,
      account_id: row.accountId,
      seq: row.seq,
      type: row.type,
      actor: JSON.stringify(row.actor),
      target: row.target === null ? null : JSON.stringify(row.target),
      data: JSON.stringify(row.data),
      created_at: row.createdAt,
    })
    .execute();
}

export const AUDIT_ORDERS = ['asc', 'desc'] as const;

export interface AuditQuery {
  /** The position the previous page ended at; 0 to begin. */
  after: number;
  limit: number;
  /** `asc`: oldest first (positions above `after`); `desc`: newest first (positions below `after`, or from the newest when it is 0). */
  order: (typeof AUDIT_ORDERS)[number];
  /** Exact type, or a prefix (without the trailing `*`) when `prefix` is set. */
  type?: { value: string; prefix: boolean };
}

/** Reads one page, plus one row more to tell whether another page follows. */
export async function listAudit(db: Executor, accountId: string, query: AuditQuery): Promise<AuditRow[]> {
  const newestFirst = query.order === 'desc';
  let select = db
    .selectFrom('audit_log')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('seq', newestFirst ? 'desc' : 'asc')
    .limit(query.limit + 1);
  if (!newestFirst) select = select.where('seq', '>', query.after);
  else if (query.after > 0) select = select.where('seq', '<', query.after);
  if (query.type) {
    select = query.type.prefix ? select.where(startsWith('type', query.type.value)) : select.where('type', '=', query.type.value);
  }
  const rows = await select.execute();
  return rows.map((row) => ({
    id: row.id,
    accountId: row.account_id,
    seq: Number(row.seq),
    type: row.type,
    actor: JSON.parse(row.actor) as Record<string, unknown>,
    target: row.target === null ? null : (JSON.parse(row.target) as Record<string, unknown>),
    data: JSON.parse(row.data) as Record<string, unknown>,
    createdAt: row.created_at,
  }));
}

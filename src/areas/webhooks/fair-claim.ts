// Fair claiming of due deliveries: each webhook in turn, none with more than its share under way,
// so a receiver that hangs with a backlog never holds up the others.

/** Attempts under way at once for one webhook in one process (of its 64): a hanging receiver holds no more. */
export const IN_FLIGHT_PER_WEBHOOK = 16;

/**
 * Round by round, the next oldest due delivery of each webhook (the webhook due longest first)
 * while it has room in its share; `taken` counts what each webhook has under way, picks included.
 */
export function takeInTurn(due: ReadonlyArray<{ id: string; webhookId: string }>, limit: number, taken: Map<string, number>): string[] {
  const queues = new Map<string, string[]>();
  for (const row of due) {
    const queue = queues.get(row.webhookId);
    if (queue) queue.push(row.id);
    else queues.set(row.webhookId, [row.id]);
  }
  const picked: string[] = [];
  for (let round = 0; picked.length < limit; round++) {
    let added = false;
    for (const [webhookId, queue] of queues) {
      if (picked.length === limit) break;
      const count = taken.get(webhookId) ?? 0;
      if (round >= queue.length || count >= IN_FLIGHT_PER_WEBHOOK) continue;
      picked.push(queue[round]!);
      taken.set(webhookId, count + 1);
      added = true;
    }
    if (!added) break;
  }
  return picked;
}

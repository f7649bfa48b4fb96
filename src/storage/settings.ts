// The service's own settings (service_settings: name → text), shared by every process.
import type { Executor } from './schema.js';

/** The stored value of `name`, made with `create` first when there is none (the first writer wins). */
export async function setting(db: Executor, name: string, create: () => string): Promise<string> {
  await db
    .insertInto('service_settings')
    .values({ name, value: create() })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('service_settings').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}

export async function readSetting(db: Executor, name: string): Promise<string | undefined> {
  const row = await db.selectFrom('service_settings').select('value').where('name', '=', name).executeTakeFirst();
  return row?.value;
}

export async function writeSetting(db: Executor, name: string, value: string): Promise<void> {
  await db
    .insertInto('service_settings')
    .values({ name, value })
    .onConflict((oc) => oc.column('name').doUpdateSet({ value }))
    .execute();
}

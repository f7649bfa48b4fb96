import { sql, type RawBuilder } from 'kysely';

/**
 * `column` starts with `prefix`, compared byte for byte. Used instead of LIKE, whose wildcards
 * (`_` appears in type names) and escaping differ between SQLite and PostgreSQL.
 */
export function startsWith(column: string, prefix: string, length = prefixLength(prefix)): RawBuilder<boolean> {
  return sql<boolean>`substr(${sql.ref(column)}, 1, ${length}) = ${prefix}`;
}

/** The prefix's length as SQL substr counts: characters (code points), not UTF-16 code units. */
export function prefixLength(prefix: string): number {
  return [...prefix].length;
}

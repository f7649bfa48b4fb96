import { sql, type RawBuilder } from 'kysely';

/**
 * `column` starts with `prefix`, compared byte for byte. Used instead of LIKE, whose wildcards
 * (`_` appears in type names) and escaping differ between SQLite and PostgreSQL.
 */
export function startsWith(column: string, prefix: string): RawBuilder<boolean> {
  // SQL substr counts characters (code points), not UTF-16 code units.
  return sql<boolean>`substr(${sql.ref(column)}, 1, ${[...prefix].length}) = ${prefix}`;
}

// Which better-sqlite3 this Node.js loads, chosen here once for every SQLite connection (the
// server's, backups', the CLI's and the tests'): better-sqlite3 12 on Node.js 20, better-sqlite3 13
// (installed as the optional dependency `better-sqlite3-napi`) on 22 and later. 12 aborts the process
// on Node.js 24.19 and later (nodejs/node#65446); 13 is built on Node-API and ships prebuilt, but
// requires Node.js 22 and crashes on 20, where npm skips it. docs/decisions.md, "Node.js versions".
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const require = createRequire(import.meta.url);

/** The first Node.js major that gets better-sqlite3 13. */
export const NAPI_FROM_MAJOR = 22;

/** The package name that loads on this Node.js: `better-sqlite3-napi` (13) or `better-sqlite3` (12). */
export const sqlitePackage = Number(process.versions.node.split('.')[0]) >= NAPI_FROM_MAJOR ? 'better-sqlite3-napi' : 'better-sqlite3';

function load(): typeof BetterSqlite3 {
  try {
    return require(sqlitePackage) as typeof BetterSqlite3;
  } catch (error) {
    if ((error as { code?: string }).code !== 'MODULE_NOT_FOUND') throw error;
    // npm skipped the optional dependency: node_modules was installed under Node.js 20.
    throw new Error(`${sqlitePackage} is not installed for Node.js ${process.versions.node}: run npm ci (or npm install) with this Node.js`, { cause: error });
  }
}

/** Where that package's entry point is: a worker thread loads the same one (sqlite-checkpointer.ts). */
export const sqliteModulePath = require.resolve(sqlitePackage);

/** better-sqlite3's Database class; the two majors share one API (and @types/better-sqlite3). */
const SQLite: typeof BetterSqlite3 = load();
// The types under the same name, as `import SQLite from 'better-sqlite3'` gives them.
declare namespace SQLite {
  type Database = BetterSqlite3.Database;
  // biome-ignore lint/complexity/noBannedTypes: better-sqlite3's own constraint, repeated
  type Statement<BindParameters extends unknown[] | {} = unknown[], Result = unknown> = BetterSqlite3.Statement<BindParameters, Result>;
  type Options = BetterSqlite3.Options;
}
export default SQLite;

// Queries of the request paths, built and compiled once instead of on every request (Kysely's
// builder and compiler were a large share of a simple GET's CPU: bench/HISTORY.md, "Earlier
// steps"). The query
// is written with the builder as usual, with named placeholders where values go; it is compiled
// with the Kysely instance it first runs on (so each backend gets its own SQL and placeholders),
// and each run substitutes the values into the compiled parameters.
import type { CompiledQuery, Compilable, DialectAdapter, QueryResult } from 'kysely';
import type { Executor } from './schema.js';
import { transactionStatementRunner } from './sqlite-dialect.js';

class Placeholder {
  constructor(readonly name: string) {}
}

/** Where each compiled parameter comes from: a named value, or a constant of the query. */
type Slot = { name: string } | { constant: unknown };

interface Compiled {
  query: CompiledQuery;
  slots: Slot[];
  /** SQLite: how a transaction's statement runs without Kysely's executor. */
  inTransaction: ReturnType<typeof transactionStatementRunner>;
}

export class PreparedQuery<P extends object, R> {
  // Per Kysely instance (its adapter is shared by all its transactions): a process may open both backends.
  private readonly compiled = new WeakMap<DialectAdapter, Compiled>();

  constructor(private readonly build: (db: Executor, params: P) => Compilable<R>) {}

  private compile(exec: Executor): Compiled {
    const adapter = exec.getExecutor().adapter;
    let compiled = this.compiled.get(adapter);
    if (!compiled) {
      const placeholders = new Proxy({} as P, { get: (_target, name) => new Placeholder(String(name)) });
      const query = this.build(exec, placeholders).compile();
      const slots = query.parameters.map((value): Slot => (value instanceof Placeholder ? { name: value.name } : { constant: value }));
      compiled = { query, slots, inTransaction: transactionStatementRunner(adapter) };
      this.compiled.set(adapter, compiled);
    }
    return compiled;
  }

  async execute(exec: Executor, params: P): Promise<QueryResult<R>> {
    const { query, slots, inTransaction } = this.compile(exec);
    const values = params as Record<string, unknown>;
    const parameters = slots.map((slot) => ('name' in slot ? values[slot.name] : slot.constant));
    if (inTransaction && exec.isTransaction) return inTransaction({ ...query, parameters }) as Promise<QueryResult<R>>;
    return exec.executeQuery<R>({ ...query, parameters });
  }

  async rows(exec: Executor, params: P): Promise<R[]> {
    return (await this.execute(exec, params)).rows;
  }

  async first(exec: Executor, params: P): Promise<R | undefined> {
    return (await this.execute(exec, params)).rows[0];
  }

  /** Rows changed by an update, insert or delete. */
  async affected(exec: Executor, params: P): Promise<number> {
    return Number((await this.execute(exec, params)).numAffectedRows ?? 0n);
  }
}

/**
 * A query compiled once. `build` receives stand-ins for the values: use `params.x` wherever a value
 * goes (never in JavaScript logic: it is only a placeholder), e.g.
 * `prepare((db, p: { id: string }) => db.selectFrom('resources').selectAll().where('id', '=', p.id))`.
 */
export function prepare<P extends object, R>(build: (db: Executor, params: P) => Compilable<R>): PreparedQuery<P, R> {
  return new PreparedQuery(build);
}

// The PostgreSQL column's database: a fresh schema of a database the caller names
// (`--postgres URL`), or else a throwaway cluster started from this machine's PostgreSQL binaries
// (Debian's `postgresql` package), removed when the run ends. The postmaster is a tracked child,
// so the benchmark's cleanup kills it like any other child.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { sleep, stop, track } from './children.js';

export interface PostgresDatabase {
  /** What the server gets as DATABASE_URL. */
  url: string;
  /** How the table names it, e.g. "PostgreSQL 15 (throwaway cluster)". */
  description: string;
  close(): Promise<void>;
}

function binDirectory(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
    .sort((a, b) => Number(a) - Number(b));
  const newest = versions.at(-1);
  return newest === undefined ? undefined : join(root, newest, 'bin');
}

async function query(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** A schema of its own in the caller's database, so nothing there is touched; dropped at the end. */
async function schemaOf(base: string, description: string): Promise<PostgresDatabase> {
  const schema = `bench_${randomBytes(6).toString('hex')}`;
  await query(base, `create schema ${schema}`);
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { url: url.toString(), description, close: () => query(base, `drop schema ${schema} cascade`) };
}

async function throwawayCluster(port: number, log: (message: string) => void): Promise<PostgresDatabase | undefined> {
  const bin = binDirectory();
  if (!bin) return undefined;
  const directory = mkdtempSync(join(tmpdir(), 'devdata-bench-pg-'));
  // initdb and postgres refuse to run as root: when we are root, the cluster is the postgres user's.
  let owner: { uid: number; gid: number } | undefined;
  if (process.getuid?.() === 0) {
    owner = {
      uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
      gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
    };
    chownSync(directory, owner.uid, owner.gid);
  }
  const data = join(directory, 'data');
  execFileSync(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres'], { stdio: 'ignore', ...owner });
  // synchronous_commit=off matches the SQLite side (WAL with synchronous=NORMAL: no fsync per
  // commit), so the two columns compare the databases rather than the disk's flush latency.
  const server = track(
    spawn(
      join(bin, 'postgres'),
      ['-D', data, '-p', String(port), '-k', directory, '-c', 'listen_addresses=127.0.0.1', '-c', 'synchronous_commit=off', '-c', 'max_connections=200'],
      { stdio: 'ignore', ...owner },
    ),
  );
  const admin = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await query(admin, 'select 1');
      break;
    } catch (error) {
      if (server.exitCode !== null || Date.now() > deadline) throw new Error(`the throwaway PostgreSQL cluster did not start: ${String(error)}`);
      await sleep(200);
    }
  }
  await query(admin, 'create database devdata_bench');
  const version = execFileSync(join(bin, 'postgres'), ['--version'], { encoding: 'utf8' }).trim();
  log(`started a throwaway cluster (${version}) on port ${port}`);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/devdata_bench`,
    description: `${version.replace(/^postgres \(PostgreSQL\) /, 'PostgreSQL ')}, throwaway cluster, synchronous_commit=off`,
    close: async () => {
      await stop(server, 'SIGINT');
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/**
 * The database for the PostgreSQL column: `url` when given, else a throwaway cluster; undefined
 * when neither is possible (no PostgreSQL binaries on this machine).
 */
export async function postgresForBench(url: string | undefined, port: number, log: (message: string) => void): Promise<PostgresDatabase | undefined> {
  if (url) return schemaOf(url, 'PostgreSQL at --postgres, own schema');
  return throwawayCluster(port, log);
}

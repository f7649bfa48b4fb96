// What `devdata serve` prints on a terminal once it listens (instead of its JSON start lines): where
// it is, what it runs on, and the command that makes a first API key. Log lines for people follow.
import { resolve } from 'node:path';
import { DEFAULT_DATABASE_URL, sqliteFile } from '../config.js';

export interface StartFacts {
  version: string;
  /** The address it listens on, as the server gives it (http://127.0.0.1:8080). */
  address: string;
  /** The public base address: BASE_URL, or http://localhost:PORT. */
  baseUrl: string;
  baseUrlExplicit: boolean;
  consoleUrl: string;
  /** Whether console/dist holds a build; without one the console answers 503. */
  consoleBuilt: boolean;
  databaseUrl: string;
  metricsUrl: string | undefined;
  color: boolean;
}

/** The database in a few words, never a password. */
export function describeDatabase(databaseUrl: string): string {
  if (databaseUrl === 'sqlite::memory:') return 'SQLite in memory: everything is gone when the server stops';
  const file = sqliteFile(databaseUrl);
  if (file !== undefined) return `SQLite ${resolve(file)}`;
  const url = parsed(databaseUrl);
  if (!url) return 'PostgreSQL';
  const host = url.hostname || url.searchParams.get('host') || 'localhost';
  const user = url.username ? ` as ${decodeURIComponent(url.username)}` : '';
  return `PostgreSQL ${host}${url.port ? `:${url.port}` : ''}${decodeURIComponent(url.pathname)}${user}`;
}

/** A PostgreSQL URL as a URL, if it reads as one (pg takes some that do not). */
function parsed(databaseUrl: string): URL | undefined {
  try {
    return new URL(databaseUrl);
  } catch {
    return undefined;
  }
}

/** A word as the shell reads it: quoted when it holds anything but plain characters. */
function shellWord(word: string): string {
  return /^[\w./:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The command that makes an account and its first key on this database, ready to paste. */
export function createAccountCommand(databaseUrl: string): string {
  const command = 'npx devdata accounts create --name "My account"';
  if (databaseUrl === DEFAULT_DATABASE_URL) return command;
  const file = sqliteFile(databaseUrl);
  if (file !== undefined) return `${command} --database-url ${shellWord(`sqlite:${resolve(file)}`)}`;
  // A password is never printed: the environment's variable is named instead.
  const url = parsed(databaseUrl);
  return !url || url.password ? `${command} --database-url "$DATABASE_URL"` : `${command} --database-url ${shellWord(databaseUrl)}`;
}

export function startBanner(facts: StartFacts): string {
  const bold = (text: string) => (facts.color ? `\x1b[1m${text}\x1b[0m` : text);
  const rows: Array<[string, string]> = [
    ['Listening on', facts.address],
    ...(facts.baseUrlExplicit ? [['Public URL', `${facts.baseUrl} (BASE_URL)`] as [string, string]] : []),
    ['Console', facts.consoleBuilt ? facts.consoleUrl : `${facts.consoleUrl} (not built: run npm run build, then restart)`],
    ['Database', describeDatabase(facts.databaseUrl)],
    ...(facts.metricsUrl ? [['Metrics', facts.metricsUrl] as [string, string]] : []),
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  const next =
    facts.databaseUrl === 'sqlite::memory:'
      ? [
          "An in-memory database is this process's alone: devdata accounts create cannot reach it.",
          'Start on a file (the default DATABASE_URL) to hand out API keys.',
        ]
      : [
          'Next: create an account and its first API key (printed once), in another terminal:',
          `  ${createAccountCommand(facts.databaseUrl)}`,
          `then use the key in the console, or: curl -H "Authorization: Bearer ddk_…" ${facts.baseUrl}/api/v1/auth/me`,
        ];
  return [
    '',
    bold(`devdata ${facts.version} is running`),
    ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`),
    '',
    ...next,
    '',
    'Ctrl-C stops it. Log lines follow (LOG_FORMAT=json for JSON lines).',
    '',
    '',
  ].join('\n');
}

// A command of the devdata CLI as a table entry, its options, its usage text and the parsing of
// its arguments; the commands themselves are in commands.ts.
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DATABASE_URL_FORMS, loadConfig, sqliteFile, type Config } from '../config.js';

export type Values = Record<string, string | boolean | undefined>;

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** The placeholder shown in help: `--account ID`. */
  value?: string;
  help: string;
}

export interface CommandInput {
  values: Values;
  positionals: string[];
  /** The configuration from the environment and the command's flags, read on first use. */
  config: () => Config;
}

export interface Command {
  name: string;
  /** What follows the name in the usage line. */
  args: string;
  summary: string;
  /** More about the command, shown by its --help. */
  details?: string;
  options: Record<string, OptionSpec>;
  /** Names of the positional arguments it takes, all required. */
  positionals?: string[];
  /**
   * Opening the database makes it when there is none (a new SQLite file, migrated): such a command
   * refuses a SQLite file in a directory that does not exist unless --create-database or
   * DATABASE_CREATE says to make it. Backup and restore check the file themselves.
   */
  makesDatabase?: boolean;
  run(input: CommandInput): Promise<void>;
}

export const DATABASE_URL_OPTION: OptionSpec = {
  type: 'string',
  value: 'URL',
  help: `overrides DATABASE_URL (${DATABASE_URL_FORMS})`,
};
const CREATE_DATABASE_OPTION: OptionSpec = {
  type: 'boolean',
  help: "create the SQLite file's directory if it does not exist (as DATABASE_CREATE=true)",
};
const HELP_OPTION: OptionSpec = { type: 'boolean', help: 'show this help' };
export const JSON_OPTION = (shape: string): OptionSpec => ({ type: 'boolean', help: `print one JSON object: ${shape}` });

export class UsageError extends Error {}

/** A command's options: its own, then --database-url and --help, which every command takes (and --create-database where it makes databases). */
export function optionsOf(command: Command): Record<string, OptionSpec> {
  return {
    ...command.options,
    'database-url': DATABASE_URL_OPTION,
    ...(command.makesDatabase ? { 'create-database': CREATE_DATABASE_OPTION } : {}),
    help: HELP_OPTION,
  };
}

function optionLabel(name: string, spec: OptionSpec): string {
  return `${name === 'help' ? '-h, ' : ''}--${name}${spec.value ? ` ${spec.value}` : ''}`;
}

export function commandUsage(command: Command): string {
  const options = Object.entries(optionsOf(command));
  const width = Math.max(...options.map(([name, spec]) => optionLabel(name, spec).length));
  return [
    `Usage: devdata ${command.name}${command.args ? ` ${command.args}` : ''}`,
    '',
    `${command.summary[0]!.toUpperCase()}${command.summary.slice(1)}.${command.details ? ` ${command.details}` : ''}`,
    '',
    'Options:',
    ...options.map(([name, spec]) => `  ${optionLabel(name, spec).padEnd(width)}  ${spec.help}`),
    '',
    'Configuration is read from the environment, as for serve (README.md, "Configuration").',
  ].join('\n');
}

export function generalUsage(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((command) => command.name.length));
  return [
    'Usage: devdata <command> [options]',
    '',
    'Commands:',
    ...commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    '',
    "devdata <command> --help shows a command's options; devdata --version the version.",
    'Options for every command:',
    `  --database-url URL  ${DATABASE_URL_OPTION.help}`,
    '',
    'Configuration is read from the environment; see README.md.',
  ].join('\n');
}

/** The commands of a group: `keys issue`, `keys list`… for `keys`; none for a word that names no group. */
export function subcommandsOf(commands: readonly Command[], group: string): Command[] {
  return commands.filter((command) => command.name.startsWith(`${group} `));
}

export function groupUsage(group: string, subcommands: readonly Command[]): string {
  const names = subcommands.map((command) => command.name.slice(group.length + 1));
  const width = Math.max(...names.map((name) => name.length));
  return [
    `Usage: devdata ${group} <subcommand> [options]`,
    '',
    'Subcommands:',
    ...subcommands.map((command, index) => `  ${names[index]!.padEnd(width)}  ${command.summary}`),
    '',
    `devdata ${group} <subcommand> --help shows a subcommand's options.`,
  ].join('\n');
}

export function commandNames(commands: readonly Command[]): string {
  return commands.map((command) => command.name).join(', ');
}

/** The command named by the leading words of argv (two words before one), and what follows it. */
export function findCommand(commands: readonly Command[], argv: string[]): { command: Command; rest: string[] } | undefined {
  for (const words of [2, 1]) {
    const name = argv.slice(0, words).join(' ');
    const command = commands.find((candidate) => candidate.name === name);
    if (command && argv.slice(0, words).every((word) => !word.startsWith('-'))) return { command, rest: argv.slice(words) };
  }
  return undefined;
}

export function parseCommandArgs(command: Command, rest: string[]): { values: Values; positionals: string[] } {
  const options = optionsOf(command);
  try {
    const parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      strict: true,
      options: Object.fromEntries(Object.entries(options).map(([name, spec]) => [name, { type: spec.type, ...(name === 'help' ? { short: 'h' } : {}) }])),
    });
    return { values: parsed.values as Values, positionals: parsed.positionals };
  } catch (error) {
    const code = (error as { code?: string }).code;
    const flag = /'(-[^' ]+)/.exec((error as Error).message)?.[1] ?? '';
    const valid = Object.keys(options)
      .map((name) => `--${name}`)
      .join(', ');
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw new UsageError(`unknown option ${flag} for "${command.name}"; its options: ${valid}`);
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      const spec = options[flag.replace(/^-+/, '')];
      throw new UsageError(spec?.type === 'boolean' ? `${flag} takes no value` : `${flag} needs a value${spec?.value ? ` (${spec.value})` : ''}`);
    }
    throw error;
  }
}

export function configFrom(command: Command, values: Values): Config {
  const env = { ...process.env };
  if (typeof values['database-url'] === 'string') env.DATABASE_URL = values['database-url'];
  if (values['create-database'] === true) env.DATABASE_CREATE = 'true';
  if (typeof values.port === 'string') env.PORT = values.port;
  if (typeof values.host === 'string') env.HOST = values.host;
  const config = loadConfig(env);
  if (command.makesDatabase) checkDatabaseDirectory(config);
  return config;
}

/**
 * A SQLite file in a directory that does not exist is most likely a mistyped DATABASE_URL: refused
 * (exit 1) rather than a new, empty database made there, unless asked for (docs/decisions.md,
 * "Operator CLI"). The default DATABASE_URL's directory is made as ever, so a fresh clone starts.
 */
function checkDatabaseDirectory(config: Config): void {
  const file = sqliteFile(config.databaseUrl);
  if (file === undefined || config.databaseCreate) return;
  const directory = resolve(dirname(file));
  if (!existsSync(directory)) {
    throw new Error(`the directory ${directory} of DATABASE_URL does not exist; create it, or pass --create-database / set DATABASE_CREATE=true to create it`);
  }
}

// A command of the devdata CLI as a table entry, its options, its usage text and the parsing of
// its arguments; the commands themselves are in commands.ts.
import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '../config.js';

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
  run(input: CommandInput): Promise<void>;
}

export const DATABASE_URL_OPTION: OptionSpec = {
  type: 'string',
  value: 'URL',
  help: 'overrides DATABASE_URL (sqlite:<path>, sqlite::memory:, postgres://…)',
};
const HELP_OPTION: OptionSpec = { type: 'boolean', help: 'show this help' };
export const JSON_OPTION = (shape: string): OptionSpec => ({ type: 'boolean', help: `print one JSON object: ${shape}` });

export class UsageError extends Error {}

const COMMON_OPTIONS: Record<string, OptionSpec> = { 'database-url': DATABASE_URL_OPTION, help: HELP_OPTION };

function optionsOf(command: Command): Record<string, OptionSpec> {
  return { ...command.options, ...COMMON_OPTIONS };
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

export function configFrom(values: Values): Config {
  const env = { ...process.env };
  if (typeof values['database-url'] === 'string') env.DATABASE_URL = values['database-url'];
  if (typeof values.port === 'string') env.PORT = values.port;
  if (typeof values.host === 'string') env.HOST = values.host;
  return loadConfig(env);
}

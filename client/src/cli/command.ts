// A command of devdata-client as a table entry: its options, its usage text, the parsing of its
// arguments into values, and finding it among the others by the words of the command line.
import { parseArgs } from 'node:util';
import type { DevdataClient } from '../client.js';
import type { Output } from './output.js';

export type Values = Record<string, string | string[] | boolean | undefined>;

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** The placeholder shown in help: `--name NAME`. */
  value?: string;
  help: string;
  /** Shown in the usage line, and refused when missing. */
  required?: boolean;
  /** May be given more than once (the values come as an array). */
  multiple?: boolean;
}

export interface CommandInput {
  values: Values;
  positionals: string[];
  /** The client for --url and --api-key (or the environment); a usage error without a credential. */
  client(): DevdataClient;
}

export interface Command {
  /** One or two words: `whoami`, `resources create`. */
  name: string;
  /** The positional arguments, each required: `<id>`. */
  positionals?: string[];
  /** What follows the name in the usage line, when the required options do not say it all. */
  synopsis?: string;
  /** One line, lower case, no full stop: shown in the list of commands. */
  summary: string;
  /** More about the command, shown by its --help. */
  details?: string;
  options: Record<string, OptionSpec>;
  /** Prints what it did; a failure is thrown (the exit code is reportFailure's). */
  run(input: CommandInput, output: Output): Promise<void>;
}

/** A mistake on the command line (exit code 2); `command` adds its usage line to the message. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: Command,
  ) {
    super(message);
  }
}

/** A command stopped by Ctrl-C before it was done (exit code 130), which says how to go on. */
export class Interrupted extends Error {}

export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  url: { type: 'string', value: 'URL', help: 'the server (env DEVDATA_URL, default http://localhost:8080)' },
  'api-key': { type: 'string', value: 'KEY', help: 'an API key or OAuth access token (env DEVDATA_API_KEY); never printed' },
  json: { type: 'boolean', help: "machine-readable output: the API's JSON, one document (streams: one event per line)" },
  'no-color': { type: 'boolean', help: 'no colours (also NO_COLOR, or when the output is not a terminal)' },
  help: { type: 'boolean', help: 'help for a command' },
};

function optionLabel(name: string, spec: OptionSpec): string {
  return `${name === 'help' ? '-h, ' : ''}--${name}${spec.value ? ` ${spec.value}` : ''}`;
}

/** `devdata-client resources create --name NAME --type TYPE --state STATE [options]` */
export function usageLine(command: Command): string {
  const required = Object.entries(command.options).filter(([, spec]) => spec.required);
  const hasOthers = Object.values(command.options).some((spec) => !spec.required);
  if (command.synopsis) return `Usage: devdata-client ${command.name} ${command.synopsis}`;
  return [
    `Usage: devdata-client ${command.name}`,
    ...(command.positionals ?? []),
    ...required.map(([name, spec]) => optionLabel(name, spec)),
    hasOthers ? '[options]' : '',
  ]
    .filter(Boolean)
    .join(' ');
}

function optionLines(options: Record<string, OptionSpec>): string[] {
  const entries = Object.entries(options);
  const width = Math.max(...entries.map(([name, spec]) => optionLabel(name, spec).length));
  return entries.map(([name, spec]) => `  ${optionLabel(name, spec).padEnd(width)}  ${spec.help}${spec.multiple ? ' (repeatable)' : ''}`);
}

/** A paragraph broken into lines of at most `width` characters, at spaces. */
function wrap(paragraph: string, width = 100): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of paragraph.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return line === '' ? lines : [...lines, line];
}

export function commandUsage(command: Command): string {
  const about = `${command.summary[0]!.toUpperCase()}${command.summary.slice(1)}.${command.details ? ` ${command.details}` : ''}`;
  const lines = [usageLine(command), ...about.split('\n\n').flatMap((paragraph) => ['', ...wrap(paragraph)])];
  if (Object.keys(command.options).length > 0) lines.push('', 'Options:', ...optionLines(command.options));
  lines.push('', 'Options of every command:', ...optionLines(GLOBAL_OPTIONS));
  return lines.join('\n');
}

function commandList(commands: readonly Command[]): string[] {
  const width = Math.max(...commands.map((command) => command.name.length));
  return commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`);
}

/** The commands of a group (`resources`), for `devdata-client resources --help`. */
export function groupUsage(group: string, commands: readonly Command[]): string {
  return [
    `Usage: devdata-client ${group} <command> [options]`,
    '',
    'Commands:',
    ...commandList(commands),
    '',
    `devdata-client ${group} <command> --help shows a command's options.`,
  ].join('\n');
}

export function generalUsage(commands: readonly Command[]): string {
  return [
    'Usage: devdata-client <command> [options]',
    '',
    'Commands:',
    ...commandList(commands),
    '',
    "devdata-client <command> --help shows a command's options; devdata-client --version the version.",
    'Options of every command:',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    'Exit codes: 0 done (also after Ctrl-C of listen or events tail), 1 the API refused or failed, 2 usage error, 3 server unreachable,',
    '130 an import stopped by Ctrl-C (run it again to resume).',
  ].join('\n');
}

/**
 * The table's own rules, checked at start: no command redefines an option of every command, and an
 * option is a string or a flag in every command that has it (commandWords skips a string's value).
 */
export function checkCommands(commands: readonly Command[]): void {
  const types = new Map(Object.entries(GLOBAL_OPTIONS).map(([name, spec]) => [name, spec.type]));
  for (const command of commands) {
    for (const [name, spec] of Object.entries(command.options)) {
      if (name in GLOBAL_OPTIONS) throw new Error(`${command.name} redefines --${name}, an option of every command`);
      if ((types.get(name) ?? spec.type) !== spec.type) throw new Error(`--${name} of ${command.name} is a ${spec.type}, elsewhere a ${types.get(name)}`);
      types.set(name, spec.type);
    }
  }
}

/** The subcommands' names of a group: "list, get or set". */
export function subcommandNames(group: string, commands: readonly Command[]): string {
  const names = commands.filter((command) => command.name.startsWith(`${group} `)).map((command) => command.name.slice(group.length + 1));
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names.at(-1)}` : names.join('');
}

/**
 * The command's words in argv (`resources create`), wherever the options stand, and the other
 * arguments. A word right after an option that takes a value is that value, not a command word.
 */
export function commandWords(commands: readonly Command[], argv: string[]): { words: string[]; rest: string[] } {
  const takesValue = new Set(
    [GLOBAL_OPTIONS, ...commands.map((command) => command.options)].flatMap((options) =>
      Object.entries(options)
        .filter(([, spec]) => spec.type === 'string')
        .map(([name]) => `--${name}`),
    ),
  );
  const wordAt: number[] = [];
  for (let index = 0; index < argv.length && wordAt.length < 2; index++) {
    const arg = argv[index]!;
    if (arg === '--') break;
    if (takesValue.has(arg)) index++;
    else if (!arg.startsWith('-')) wordAt.push(index);
  }
  const [first, second] = wordAt.map((index) => argv[index]!);
  const isGroup = first !== undefined && commands.some((command) => command.name.startsWith(`${first} `));
  const used = isGroup && second !== undefined ? wordAt : wordAt.slice(0, 1);
  return { words: used.map((index) => argv[index]!), rest: argv.filter((_arg, index) => !used.includes(index)) };
}

/** The values and positionals of a command's arguments; a friendly UsageError for any mistake. */
export function parseCommandArgs(command: Command, args: string[]): { values: Values; positionals: string[] } {
  const options = { ...command.options, ...GLOBAL_OPTIONS };
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: Object.fromEntries(
        Object.entries(options).map(([name, spec]) => [
          name,
          { type: spec.type, ...(spec.multiple && { multiple: true }), ...(name === 'help' && { short: 'h' }) },
        ]),
      ),
    }) as { values: Values; positionals: string[] };
  } catch (error) {
    throw parseFailure(command, options, args, error as Error & { code?: string });
  }
  const expected = command.positionals ?? [];
  if (parsed.positionals.length !== expected.length) {
    const what = expected.length === 0 ? 'no arguments' : expected.join(' ');
    throw new UsageError(`${command.name} takes ${what}${parsed.positionals.length > 0 ? ` (got ${parsed.positionals.join(' ')})` : ''}`, command);
  }
  for (const [name, spec] of Object.entries(command.options)) {
    if (spec.required && parsed.values[name] === undefined)
      throw new UsageError(`${command.name} needs --${name}${spec.value ? ` ${spec.value}` : ''}`, command);
  }
  return parsed;
}

/** Node's parseArgs message names the option in quotes; said again in the words of the command. */
function parseFailure(command: Command, options: Record<string, OptionSpec>, args: string[], error: Error & { code?: string }): Error {
  const flag = /'(-[^' ]+)/.exec(error.message)?.[1] ?? '';
  const spec = options[flag.replace(/^-+/, '')];
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const negative = /^-\d/.test(flag) ? `; an argument that starts with "-" goes after --, as in: -- ${flag}` : '';
    return new UsageError(`unknown option ${flag} for "${command.name}"${negative}`, command);
  }
  if (error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    if (spec?.type === 'boolean') return new UsageError(`${flag} takes no value`, command);
    const placeholder = spec?.value ?? 'VALUE';
    // "ambiguous": the next argument starts with "-" (a negative number, say), so it was not taken.
    const next = args[args.indexOf(flag) + 1] ?? placeholder;
    const dash = /ambiguous/.test(error.message) ? `; for a value starting with "-", write ${flag}=${next}` : '';
    return new UsageError(`${flag} needs a value (${placeholder})${dash}`, command);
  }
  return error;
}

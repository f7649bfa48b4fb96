#!/usr/bin/env node
// The devdata command: the server and the operator's tools (cli/commands.ts). Every command has its
// own --help; a usage error names what is valid and exits 2, a failure the operator can act on exits 1.
import { ConfigError, type Config } from './config.js';
import { packageVersion } from './paths.js';
import { type Command, commandNames, commandUsage, configFrom, findCommand, generalUsage, parseCommandArgs, UsageError } from './cli/command.js';
import { COMMANDS } from './cli/commands.js';

/** The command being run, for the usage printed after an error. */
let current: Command | undefined;

async function main(argv: string[]): Promise<void> {
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    const topic = argv[0] === 'help' ? findCommand(COMMANDS, argv.slice(1)) : undefined;
    if (argv[0] === 'help' && argv.length > 1 && !topic) throw new UsageError(`no command "${argv.slice(1).join(' ')}"; commands: ${commandNames(COMMANDS)}`);
    console.log(topic ? commandUsage(topic.command) : generalUsage(COMMANDS));
    return;
  }
  if (argv[0] === '--version' || argv[0] === '-V') {
    console.log(`devdata ${packageVersion()}`);
    return;
  }
  const found = findCommand(COMMANDS, argv);
  if (!found) {
    const group = COMMANDS.filter((command) => command.name.startsWith(`${argv[0]} `)).map((command) => command.name);
    if (group.length > 0 && (argv[1] === undefined || argv[1].startsWith('-'))) throw new UsageError(`"${argv[0]}" needs a subcommand: ${group.join(', ')}`);
    const words = argv
      .filter((word) => !word.startsWith('-'))
      .slice(0, group.length > 0 ? 2 : 1)
      .join(' ');
    throw new UsageError(`unknown command "${words || argv[0]}"; commands: ${commandNames(COMMANDS)}`);
  }
  const { command, rest } = found;
  current = command;
  const { values, positionals } = parseCommandArgs(command, rest);
  if (values.help) {
    console.log(commandUsage(command));
    return;
  }
  const expected = command.positionals ?? [];
  if (positionals.length < expected.length) throw new UsageError(`${expected[positionals.length]} is required`);
  if (positionals.length > expected.length) throw new UsageError(`unexpected argument "${positionals[expected.length]}"`);
  let config: Config | undefined;
  await command.run({ values, positionals, config: () => (config ??= configFrom(values)) });
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    console.error(`devdata: ${error.message}\n\n${current ? commandUsage(current) : generalUsage(COMMANDS)}`);
    process.exit(2);
  }
  // A configuration error names its variable and what it accepts; anything else is a failure to act on.
  console.error(`devdata: ${(error as Error).message}`);
  const exitCode = (error as { exitCode?: unknown }).exitCode;
  process.exit(error instanceof ConfigError ? 2 : exitCode === 2 ? 2 : 1);
});

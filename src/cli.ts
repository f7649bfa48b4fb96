#!/usr/bin/env node
// The devdata command: the server and the operator's tools (cli/commands.ts). Every command has its
// own --help; a usage error names what is valid and exits 2, a failure the operator can act on exits 1.
import { ConfigError, type Config } from './config.js';
import { packageVersion } from './paths.js';
import { commandNames, commandUsage, configFrom, findCommand, generalUsage, groupUsage, parseCommandArgs, subcommandsOf, UsageError } from './cli/command.js';
import { COMMANDS } from './cli/commands.js';

/** The usage printed after a usage error: that of the command or group being run, once known. */
let usage = (): string => generalUsage(COMMANDS);

const isHelpFlag = (word: string | undefined) => word === '--help' || word === '-h';

/** `devdata help [command…]`: the usage of the whole, a group or a command. */
function helpTopic(words: string[]): string {
  if (words.length === 0) return generalUsage(COMMANDS);
  const found = findCommand(COMMANDS, words);
  if (found && found.rest.length === 0) return commandUsage(found.command);
  const subcommands = words.length === 1 ? subcommandsOf(COMMANDS, words[0]!) : [];
  if (subcommands.length > 0) return groupUsage(words[0]!, subcommands);
  throw new UsageError(`no command "${words.join(' ')}"; commands: ${commandNames(COMMANDS)}`);
}

async function main(argv: string[]): Promise<void> {
  if (argv.length === 0 || isHelpFlag(argv[0]) || argv[0] === 'help') {
    console.log(helpTopic(argv[0] === 'help' ? argv.slice(1) : []));
    return;
  }
  if (argv[0] === '--version' || argv[0] === '-V') {
    console.log(`devdata ${packageVersion()}`);
    return;
  }
  const found = findCommand(COMMANDS, argv);
  if (!found) {
    const group = argv[0]!;
    const subcommands = subcommandsOf(COMMANDS, group);
    if (subcommands.length === 0) throw new UsageError(`unknown command "${group}"; commands: ${commandNames(COMMANDS)}`);
    usage = () => groupUsage(group, subcommands);
    const names = commandNames(subcommands);
    if (argv[1] === undefined || argv[1].startsWith('-')) {
      if (argv.slice(1).some(isHelpFlag)) {
        console.log(usage());
        return;
      }
      throw new UsageError(`"${group}" needs a subcommand: ${names}`);
    }
    throw new UsageError(`unknown command "${group} ${argv[1]}"; the ${group} commands: ${names}`);
  }
  const { command, rest } = found;
  usage = () => commandUsage(command);
  const { values, positionals } = parseCommandArgs(command, rest);
  if (values.help) {
    console.log(commandUsage(command));
    return;
  }
  const expected = command.positionals ?? [];
  if (positionals.length < expected.length) throw new UsageError(`${expected[positionals.length]} is required`);
  if (positionals.length > expected.length) throw new UsageError(`unexpected argument "${positionals[expected.length]}"`);
  let config: Config | undefined;
  await command.run({ values, positionals, config: () => (config ??= configFrom(command, values)) });
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    console.error(`devdata: ${error.message}\n\n${usage()}`);
    process.exit(2);
  }
  // A configuration error names its variable and what it accepts; anything else is a failure to act on.
  console.error(`devdata: ${(error as Error).message}`);
  const exitCode = (error as { exitCode?: unknown }).exitCode;
  process.exit(error instanceof ConfigError ? 2 : exitCode === 2 ? 2 : 1);
});

// devdata-client: the developer CLI of @devdata/client. Every command is an entry of COMMANDS
// (cli/: one file per group, cli/command.ts for their options and usage, cli/output.ts for what
// they print). `listen --forward-to` replays the live event stream to a local receiver as signed
// webhook deliveries, like `stripe listen`.
// Exit codes: 0 done (also after Ctrl-C of listen or events tail), 1 the API refused or
// failed, 2 a usage error, 3 the server could not be reached, 130 an import stopped by Ctrl-C.
import { readFileSync } from 'node:fs';
import { accountCommands } from './cli/account.js';
import { appCommands } from './cli/apps.js';
import {
  type Command,
  checkCommands,
  commandUsage,
  commandWords,
  generalUsage,
  groupUsage,
  Interrupted,
  parseCommandArgs,
  subcommandNames,
  UsageError,
  usageLine,
} from './cli/command.js';
import { eventCommands } from './cli/events.js';
import { keyCommands } from './cli/keys.js';
import { listenCommand } from './cli/listen.js';
import { type Output, wantsColour } from './cli/output.js';
import { resourceCommands } from './cli/resources.js';
import { scheduleCommands } from './cli/schedules.js';
import { clientFor } from './cli/values.js';
import { webhookCommands } from './cli/webhooks.js';
import { DevdataError } from './errors.js';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const COMMANDS: readonly Command[] = [
  ...accountCommands.filter((command) => command.name === 'whoami'),
  listenCommand,
  ...eventCommands,
  ...resourceCommands,
  ...webhookCommands,
  ...keyCommands,
  ...appCommands,
  ...scheduleCommands,
  ...accountCommands.filter((command) => command.name !== 'whoami'),
];

checkCommands(COMMANDS);

function groupOf(word: string | undefined): Command[] {
  return word === undefined ? [] : COMMANDS.filter((command) => command.name.startsWith(`${word} `));
}

async function main(argv: string[], output: Output): Promise<number> {
  const { words, rest } = commandWords(COMMANDS, argv);
  const name = words.join(' ');
  const command = COMMANDS.find((candidate) => candidate.name === name);
  const group = groupOf(words[0]);
  if (argv.includes('--version') && words.length === 0) {
    output.out(VERSION);
    return 0;
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    if (command) output.out(commandUsage(command));
    else if (group.length > 0 && words.length === 1) output.out(groupUsage(words[0]!, group));
    else if (words.length === 0) output.out(generalUsage(COMMANDS));
    else return reportFailure(new UsageError(`unknown command "${name}" (devdata-client --help lists them)`), output);
    return 0;
  }
  if (words.length === 0) {
    output.err(generalUsage(COMMANDS));
    return 2;
  }
  try {
    if (!command) {
      const [first, second] = words as [string, string | undefined];
      if (group.length === 0) throw new UsageError(`unknown command "${first}" (devdata-client --help lists them)`);
      const choices = `${first} takes ${subcommandNames(first, COMMANDS)} (devdata-client ${first} --help)`;
      throw new UsageError(second === undefined ? choices : `unknown command "${name}": ${choices}`);
    }
    const { values, positionals } = parseCommandArgs(command, rest);
    await command.run({ values, positionals, client: () => clientFor(values) }, output);
    return 0;
  } catch (error) {
    // A mistake found while running the command is shown with its usage line too.
    if (command && error instanceof UsageError && !error.command) return reportFailure(new UsageError(error.message, command), output);
    return reportFailure(error, output);
  }
}

/** Prints the failure and gives the exit code: 2 usage, 1 the API refused or failed, 3 unreachable, 130 interrupted. */
function reportFailure(error: unknown, output: Output): number {
  if (error instanceof Interrupted) {
    output.err(output.json ? JSON.stringify({ error: { code: 'interrupted', message: error.message } }) : `devdata-client: ${error.message}`);
    return 130;
  }
  if (error instanceof UsageError) {
    const usage = error.command && usageLine(error.command);
    if (output.json) output.err(JSON.stringify({ error: { code: 'usage', message: error.message, ...(usage && { usage }) } }));
    else {
      output.err(`devdata-client: ${error.message}`);
      if (usage) output.err(`${usage}\n(devdata-client ${error.command!.name} --help for its options)`);
    }
    return 2;
  }
  if (error instanceof DevdataError) {
    const { status, code, message, requestId, details } = error;
    if (output.json) output.err(JSON.stringify({ error: { status, code, message, requestId, ...(details.length > 0 && { details }) } }));
    else {
      output.err(`devdata-client: ${code}: ${message}${status ? ` (HTTP ${status}${requestId ? `, request ${requestId}` : ''})` : ''}`);
      // A refused body names each field that was wrong (unless the message said it already).
      for (const detail of details) if (detail.path && detail.message && !message.includes(detail.message)) output.err(`  ${detail.path}: ${detail.message}`);
    }
    return status === 0 ? 3 : 1;
  }
  const message = (error as Error).message ?? String(error);
  output.err(output.json ? JSON.stringify({ error: { message } }) : `devdata-client: ${message}`);
  return 1;
}

const argv = process.argv.slice(2);
process.exitCode = await main(argv, { json: argv.includes('--json'), colour: wantsColour(argv), out: console.log, err: console.error });
// Idle keep-alive sockets must not hold a finished command open; output is flushed by then.
setTimeout(() => process.exit(), 1000).unref();

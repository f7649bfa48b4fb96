// Help of the built operator CLI for every command, group and subcommand of the table
// (src/cli/commands.ts): the cases are made from the table, so a command added later is covered.
// Each asks `node dist/cli.js …` with a DATABASE_URL nobody could open: help never needs one.
import { afterAll, describe, expect, it } from 'vitest';
import { optionsOf } from '../../src/cli/command.js';
import { COMMANDS } from '../../src/cli/commands.js';
import { CLI, cleanEnv, killAll, run, type RunResult } from '../support/processes.js';

const env = cleanEnv({ DATABASE_URL: 'nonsense' });
const cli = (args: string[]) => run(process.execPath, [CLI, ...args], { env });

/** The groups: the first word of every two-word command, with their subcommands. */
const GROUPS = [...new Set(COMMANDS.filter((command) => command.name.includes(' ')).map((command) => command.name.split(' ')[0]!))].map((group) => ({
  group,
  subcommands: COMMANDS.filter((command) => command.name.startsWith(`${group} `)),
}));

const capitalized = (text: string) => `${text[0]!.toUpperCase()}${text.slice(1)}`;
const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A line of a listing: the name, padding, the summary. */
const listed = (name: string, summary: string) => new RegExp(`\\n {2}${literally(name)} +${literally(summary)}\\n`);

/** Runs every case at once (each is a Node.js process of its own) and names the failing one. */
async function each<T>(cases: T[], args: (item: T) => string[], check: (item: T, result: RunResult) => void): Promise<void> {
  const results = await Promise.all(cases.map((item) => cli(args(item))));
  for (const [index, item] of cases.entries()) check(item, results[index]!);
}

afterAll(() => killAll());

describe('devdata help', () => {
  it('the table has commands and groups to ask about', () => {
    expect(COMMANDS.length).toBeGreaterThan(5);
    expect(GROUPS.map(({ group }) => group)).toEqual(expect.arrayContaining(['accounts', 'keys']));
  });

  it('--help, -h, help and no arguments list every command with its summary, exit 0', async () => {
    await each(
      [['--help'], ['-h'], ['help'], []],
      (args) => args,
      (args, result) => {
        expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
        expect(result.stdout).toMatch(/^Usage: devdata <command>/);
        for (const command of COMMANDS) expect(result.stdout, command.name).toMatch(listed(command.name, command.summary));
      },
    );
  });

  const commandCases = COMMANDS.flatMap((command) => {
    const words = command.name.split(' ');
    return [
      { command, args: [...words, '--help'] },
      { command, args: [...words, '-h'] },
      { command, args: ['help', ...words] },
    ];
  });

  it(`<command> --help, -h and help <command> print that command's usage with every option, exit 0 (${commandCases.length} cases)`, async () => {
    await each(
      commandCases,
      ({ args }) => args,
      ({ command, args }, result) => {
        const what = `devdata ${args.join(' ')}: ${result.stderr}`;
        expect(result.code, what).toBe(0);
        expect(result.stderr, what).toBe('');
        expect(result.stdout.split('\n')[0], what).toBe(`Usage: devdata ${command.name}${command.args ? ` ${command.args}` : ''}`);
        expect(result.stdout, what).toContain(capitalized(command.summary));
        for (const [name, spec] of Object.entries(optionsOf(command))) {
          expect(result.stdout, `${what} --${name}`).toContain(`--${name}`);
          expect(result.stdout, `${what} --${name}`).toContain(spec.help);
        }
      },
    );
  });

  const groupHelpCases = GROUPS.flatMap((entry) => [
    { ...entry, args: [entry.group, '--help'] },
    { ...entry, args: [entry.group, '-h'] },
    { ...entry, args: ['help', entry.group] },
  ]);

  it(`<group> --help, -h and help <group> list the group's subcommands, exit 0 (${groupHelpCases.length} cases)`, async () => {
    await each(
      groupHelpCases,
      ({ args }) => args,
      ({ group, subcommands, args }, result) => {
        const what = `devdata ${args.join(' ')}: ${result.stderr}`;
        expect(result.code, what).toBe(0);
        expect(result.stdout.split('\n')[0], what).toBe(`Usage: devdata ${group} <subcommand> [options]`);
        for (const command of subcommands) expect(result.stdout, what).toMatch(listed(command.name.slice(group.length + 1), command.summary));
        // Only this group's.
        for (const other of COMMANDS.filter((command) => !subcommands.includes(command))) expect(result.stdout, what).not.toContain(other.summary);
      },
    );
  });

  it('a group without its subcommand, or with one it lacks, prints the group usage on stderr and exits 2', async () => {
    const cases = GROUPS.flatMap((entry) => [
      { ...entry, args: [entry.group], message: `"${entry.group}" needs a subcommand: ${entry.subcommands.map((command) => command.name).join(', ')}` },
      { ...entry, args: [entry.group, '--json'], message: `"${entry.group}" needs a subcommand` },
      { ...entry, args: [entry.group, 'frobnicate'], message: `unknown command "${entry.group} frobnicate"` },
    ]);
    await each(
      cases,
      ({ args }) => args,
      ({ group, subcommands, args, message }, result) => {
        const what = `devdata ${args.join(' ')}`;
        expect(result.code, what).toBe(2);
        expect(result.stdout, what).toBe('');
        expect(result.stderr, what).toContain(`devdata: ${message}`);
        expect(result.stderr, what).toContain(`Usage: devdata ${group} <subcommand> [options]`);
        for (const command of subcommands) expect(result.stderr, what).toContain(command.summary);
      },
    );
  });

  it('help about a command that does not exist is a usage error', async () => {
    const result = await cli(['help', 'frobnicate']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no command "frobnicate"');
  });
});

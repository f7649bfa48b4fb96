// The built devdata-client CLI's help and usage errors, which need no server: --help for every
// command and group (exit 0), an unknown option or a missing value named in one line with the
// command's usage (exit 2, never Node's parseArgs text), and help texts whose lists of valid values
// are the OpenAPI document's.
import { join } from 'node:path';
import { APP_TYPES, EVENT_TYPES, HISTORY_BUCKETS, OAUTH_SCOPES, RESOURCE_TYPES, SCOPES } from '@devdata/client';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES as SERVER_EVENT_TYPES } from '../../src/areas/events/event.js';
import { BUCKET_NAMES } from '../../src/areas/history/points.js';
import { RESOURCE_TYPES as SERVER_RESOURCE_TYPES } from '../../src/areas/resources/schemas.js';
import { ALL_SCOPES, OAUTH_GRANTABLE } from '../../src/platform/scopes.js';
import { killAll, ROOT, run } from '../support/processes.js';

const CLIENT_CLI = join(ROOT, 'client', 'bin', 'devdata-client.js');
// Parse errors come before any call: an unreachable server shows that nothing was sent.
const env = { ...process.env, DEVDATA_URL: 'http://127.0.0.1:9', DEVDATA_API_KEY: 'ddk_unused' };
const cli = (...args: string[]) => run(process.execPath, [CLIENT_CLI, ...args], { env });

/** The commands issues #38 and #41 ask for, with the ones there before. */
const COMMANDS = [
  'whoami',
  'listen',
  'trigger',
  'usage',
  ...['tail', 'list'].map((sub) => `events ${sub}`),
  ...['list', 'get', 'set', 'create', 'update', 'delete', 'history'].map((sub) => `resources ${sub}`),
  ...['list', 'get', 'create', 'update', 'delete', 'rotate-secret', 'deliveries', 'delivery', 'retry', 'test', 'replay', 'recover'].map(
    (sub) => `webhooks ${sub}`,
  ),
  ...['list', 'create', 'revoke'].map((sub) => `keys ${sub}`),
  ...['list', 'get', 'create', 'update', 'delete', 'rotate-secret'].map((sub) => `apps ${sub}`),
  ...['list', 'get', 'create', 'update', 'delete', 'run'].map((sub) => `schedules ${sub}`),
  'audit list',
];
const GROUPS = ['events', 'resources', 'webhooks', 'keys', 'apps', 'schedules', 'audit'];

afterAll(async () => {
  await killAll();
});

describe('devdata-client help', () => {
  it('answers --help for the CLI, every group and every command, exit code 0', async () => {
    const general = await cli('--help');
    expect(general.code).toBe(0);
    for (const name of COMMANDS) expect(general.stdout, name).toMatch(new RegExp(`^ {2}${name} {2,}\\S`, 'm'));
    for (const group of GROUPS) {
      const help = await cli(group, '--help');
      expect([help.code, help.stdout.split('\n')[0]], group).toEqual([0, `Usage: devdata-client ${group} <command> [options]`]);
    }
    await Promise.all(
      COMMANDS.map(async (name) => {
        const help = await cli(...name.split(' '), '--help');
        expect(help.code, name).toBe(0);
        expect(help.stdout, name).toMatch(new RegExp(`^Usage: devdata-client ${name}\\b`));
        expect(help.stdout, name).toContain('--json');
        expect(help.stderr, name).toBe('');
      }),
    );
    // -h, and --help wherever it stands.
    expect((await cli('-h', 'keys', 'create')).stdout).toMatch(/^Usage: devdata-client keys create --name NAME --scopes S1,S2/);
  });

  it('lists the valid values of the OpenAPI document, which are the service’s', async () => {
    expect([...RESOURCE_TYPES]).toEqual([...SERVER_RESOURCE_TYPES]);
    expect([...SCOPES]).toEqual(ALL_SCOPES);
    expect([...OAUTH_SCOPES]).toEqual(ALL_SCOPES.filter((scope) => OAUTH_GRANTABLE.has(scope)));
    expect([...EVENT_TYPES, 'custom.*']).toEqual([...SERVER_EVENT_TYPES]);
    expect([...APP_TYPES]).toEqual(['public', 'confidential']);
    expect([...HISTORY_BUCKETS]).toEqual(BUCKET_NAMES);

    const help = async (...command: string[]) => (await cli(...command, '--help')).stdout;
    const option = (text: string, name: string) => text.split('\n').find((line) => line.startsWith(`  --${name} `)) ?? '';
    expect(option(await help('resources', 'create'), 'type')).toContain(RESOURCE_TYPES.join(', '));
    expect(option(await help('keys', 'create'), 'scopes')).toContain(SCOPES.join(', '));
    const appScopes = option(await help('apps', 'create'), 'scopes');
    expect(appScopes).toContain(OAUTH_SCOPES.join(', '));
    expect(appScopes).not.toContain('keys:manage');
    for (const command of [['webhooks', 'create'], ['listen']]) expect(option(await help(...command), 'events')).toContain(EVENT_TYPES.join(', '));
    expect(option(await help('resources', 'history'), 'bucket')).toContain(HISTORY_BUCKETS.join(', '));
  });
});

describe('devdata-client usage errors', () => {
  it('names an unknown option of any command in one line, then the command’s usage; exit code 2', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...COMMANDS), fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/), fc.boolean(), async (name, suffix, withValue) => {
        const flag = `--zz-${suffix}`;
        const result = await cli(...name.split(' '), withValue ? `${flag}=1` : flag);
        expect(result.code).toBe(2);
        const [first, second] = result.stderr.split('\n');
        expect(first).toBe(`devdata-client: unknown option ${flag} for "${name}"`);
        expect(second).toMatch(new RegExp(`^Usage: devdata-client ${name}\\b`));
        expect(result.stderr).not.toMatch(/ERR_PARSE|To specify a positional|parseArgs/);
        expect(result.stdout).toBe('');
      }),
      { numRuns: 30 },
    );
    expect((await cli('resources', 'list', '-x')).stderr.split('\n')[0]).toBe('devdata-client: unknown option -x for "resources list"');
  });

  it('names a missing value, a value a flag does not take, a missing option or argument', async () => {
    const cases: Array<[string[], string]> = [
      [['resources', 'create', '--name'], '--name needs a value (NAME)'],
      [
        ['resources', 'create', '--name', 'x', '--type', 'sensor', '--state', '-3'],
        '--state needs a value (STATE); for a value starting with "-", write --state=-3',
      ],
      [['webhooks', 'list', '--json=yes'], '--json takes no value'],
      [['resources', 'set', 'res_1', '-7'], 'unknown option -7 for "resources set"; an argument that starts with "-" goes after --, as in: -- -7'],
      [['resources', 'create', '--name', 'x', '--state', '1'], 'resources create needs --type TYPE'],
      [['resources', 'get'], 'resources get takes <id>'],
      [['webhooks', 'retry', 'wh_1'], 'webhooks retry takes <id> <delivery-id> (got wh_1)'],
      [['keys', 'list', 'extra'], 'keys list takes no arguments (got extra)'],
      [['resources', 'create', '--name', 'x', '--type', 'lamp', '--state', '1'], `--type must be one of ${RESOURCE_TYPES.join(', ')}, not "lamp"`],
      [['resources', 'create', '--name', 'x', '--type', 'switch', '--state', 'maybe'], 'a switch takes on or off (true/false), not "maybe"'],
      [['resources', 'update', 'res_1'], 'nothing to change: give at least one of --name, --state, --attributes, --tags'],
      [['resources', 'update', 'res_1', '--if-match', 'W/x', '--name', 'y'], '--if-match takes a resource version, such as 3, not "W/x"'],
      [
        ['resources', 'create', '--name', 'x', '--type', 'text', '--state', 'a', '--attributes', '[1]'],
        `--attributes must be a JSON object, such as '{"unit":"°C"}'`,
      ],
      [['schedules', 'create', '--name', 'x', '--cron', '0 * * * *'], 'a schedule needs an action: --resource ID --state STATE, or --event-type TYPE'],
      [
        ['schedules', 'create', '--name', 'x', '--cron', '0 * * * *', '--at', '2030-01-01T00:00:00Z', '--event-type', 'custom.x'],
        '--cron and --at exclude each other',
      ],
      [['webhooks', 'update', 'wh_1', '--enable', '--disable'], '--enable and --disable exclude each other'],
      [['audit', 'list', '--limit', 'ten'], '--limit must be a non-negative integer, not "ten"'],
      [
        ['resources', 'history', 'res_1', '--since', '1w'],
        '--since takes a duration ago such as 30m, 24h or 7d, or an ISO 8601 time such as 2026-01-31T12:00Z, not "1w"',
      ],
      [
        ['resources', 'history', 'res_1', '--until', '2026-01-31T12:00:00+0100x'],
        '--until takes a duration ago such as 30m, 24h or 7d, or an ISO 8601 time such as 2026-01-31T12:00Z, not "2026-01-31T12:00:00+0100x"',
      ],
      [
        ['resources', 'history', 'res_1', '--since', '2026-01-02', '--until', '2026-01-01'],
        '--since (2026-01-02T00:00:00.000Z) must be before --until (2026-01-01T00:00:00.000Z)',
      ],
      [['resources', 'history', 'res_1', '--bucket', '2m'], `--bucket must be one of ${HISTORY_BUCKETS.join(', ')}, not "2m"`],
      [
        ['resources', 'frobnicate'],
        'unknown command "resources frobnicate": resources takes list, get, set, create, update, delete, history, import or export (devdata-client resources --help)',
      ],
    ];
    await Promise.all(
      cases.map(async ([args, message]) => {
        const result = await cli(...args);
        expect([result.code, result.stderr.split('\n')[0]], args.join(' ')).toEqual([2, `devdata-client: ${message}`]);
      }),
    );
  });

  it('with --json, reports a usage error as one JSON document', async () => {
    const result = await cli('keys', 'create', '--name', 'ci', '--json');
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stderr)).toEqual({
      error: { code: 'usage', message: 'keys create needs --scopes S1,S2', usage: 'Usage: devdata-client keys create --name NAME --scopes S1,S2 [options]' },
    });
  });
});

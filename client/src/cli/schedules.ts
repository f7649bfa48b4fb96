// devdata-client schedules list|get|create|update|delete|run.
import type { DevdataClient } from '../client.js';
import { describeScheduleAction, scheduleStatus } from '../display.js';
import type { Schedule, ScheduleAction } from '../types.js';
import { type Command, type OptionSpec, UsageError, type Values } from './command.js';
import { type Output, print, printDetails, printTable, statusStyle, time } from './output.js';
import { enabledValue, jsonObjectValue, requiredValue, someChange, stateFor, stringValue } from './values.js';

const OPTIONS: Record<string, OptionSpec> = {
  name: { type: 'string', value: 'NAME', help: '1-100 characters' },
  cron: { type: 'string', value: 'EXPR', help: 'repeat by cron, 5 fields: minute hour day-of-month month day-of-week ("0 7 * * 1-5")' },
  at: { type: 'string', value: 'TIME', help: 'run once at this ISO 8601 time (2030-01-01T07:00:00Z)' },
  timezone: { type: 'string', value: 'TZ', help: 'the IANA time zone of --cron (default UTC)' },
  resource: { type: 'string', value: 'ID', help: 'action: set this resource (needs resources:write) to --state' },
  state: { type: 'string', value: 'STATE', help: "the state to set, read as the resource's type needs it (on/off, a number, text)" },
  'event-type': { type: 'string', value: 'TYPE', help: 'action: publish this custom event (needs events:write), with --data' },
  data: { type: 'string', value: 'JSON', help: "the published event's data, a JSON object (default {})" },
};
const WHEN = 'One of --cron or --at; one action: --resource with --state, or --event-type.';

/** The action the options describe, or undefined when they name none. */
async function actionOf(values: Values, devdata: () => DevdataClient): Promise<ScheduleAction | undefined> {
  const resourceId = stringValue(values, 'resource');
  const text = stringValue(values, 'state');
  const eventType = stringValue(values, 'event-type');
  if (resourceId !== undefined && eventType !== undefined)
    throw new UsageError('a schedule has one action: --resource (with --state) or --event-type, not both');
  if (resourceId !== undefined) {
    if (text === undefined) throw new UsageError('--resource needs --state: the state to set');
    // The state's kind depends on the resource's type, so the resource is read first.
    const resource = await devdata().getResource({ path: { id: resourceId } });
    if (!resource) throw new Error('the resource was not returned');
    return { type: 'set_state', resourceId, state: stateFor(resource.type, text) };
  }
  if (text !== undefined) throw new UsageError('--state goes with --resource');
  if (eventType !== undefined) return { type: 'publish_event', eventType, data: jsonObjectValue(values, 'data') ?? {} };
  if (values.data !== undefined) throw new UsageError('--data goes with --event-type');
  return undefined;
}

/** --cron, --at and --timezone, as given. */
function timing(values: Values): { cron?: string; at?: string; timezone?: string } {
  const cron = stringValue(values, 'cron');
  const at = stringValue(values, 'at');
  const timezone = stringValue(values, 'timezone');
  if (cron !== undefined && at !== undefined) throw new UsageError('--cron and --at exclude each other');
  return { ...(cron !== undefined && { cron }), ...(at !== undefined && { at }), ...(timezone !== undefined && { timezone }) };
}

function status(schedule: Schedule) {
  const text = scheduleStatus(schedule);
  return { text, style: statusStyle(text) };
}

function when(schedule: Schedule): string {
  return schedule.cron !== null ? `cron ${schedule.cron} (${schedule.timezone})` : `at ${time(schedule.at)}`;
}

function printSchedule(output: Output, schedule: Schedule): void {
  print(output, schedule, () =>
    printDetails(output, [
      ['ID', schedule.id],
      ['Name', schedule.name],
      ['When', when(schedule)],
      ['Action', describeScheduleAction(schedule.action)],
      ['Status', status(schedule)],
      ['Next run', time(schedule.nextRunAt, 'none')],
      ['Last run', time(schedule.lastRunAt, 'never')],
      ['Created', time(schedule.createdAt)],
      ['Updated', time(schedule.updatedAt)],
    ]),
  );
}

export const scheduleCommands: Command[] = [
  {
    name: 'schedules list',
    summary: 'list the schedules',
    details: 'Needs schedules:manage.',
    options: {},
    async run({ client }, output) {
      const page = await client().listSchedules();
      print(output, page, () => {
        if (page.data.length === 0) return output.err('No schedules.');
        printTable(
          output,
          ['ID', 'NAME', 'STATUS', 'WHEN', 'NEXT RUN', 'ACTION'],
          page.data.map((schedule) => [
            schedule.id,
            schedule.name,
            status(schedule),
            when(schedule),
            time(schedule.nextRunAt, 'none'),
            describeScheduleAction(schedule.action),
          ]),
        );
      });
    },
  },
  {
    name: 'schedules get',
    positionals: ['<id>'],
    summary: 'show a schedule',
    options: {},
    async run({ positionals, client }, output) {
      printSchedule(output, await client().getSchedule({ path: { id: positionals[0]! } }));
    },
  },
  {
    name: 'schedules create',
    summary: "create a schedule: set a resource's state or publish an event, once or by cron",
    details: `Needs schedules:manage and the action's scope. ${WHEN}`,
    options: { ...OPTIONS, name: { ...OPTIONS.name!, required: true }, disabled: { type: 'boolean', help: 'create it paused' } },
    async run({ values, client }, output) {
      const when = timing(values);
      if (when.cron === undefined && when.at === undefined) throw new UsageError('a schedule needs --cron EXPR or --at TIME');
      const action = await actionOf(values, client);
      if (!action) throw new UsageError('a schedule needs an action: --resource ID --state STATE, or --event-type TYPE');
      const body = { name: requiredValue(values, 'name'), ...when, action, ...(values.disabled && { enabled: false }) };
      printSchedule(output, await client().createSchedule({ body }));
    },
  },
  {
    name: 'schedules update',
    positionals: ['<id>'],
    summary: 'change a schedule, or pause or enable it',
    details: '--cron or --at replaces the other; an action given replaces the whole action.',
    options: {
      ...OPTIONS,
      enable: { type: 'boolean', help: 'enable it (also after the service stopped it)' },
      disable: { type: 'boolean', help: 'pause it' },
    },
    async run({ values, positionals, client }, output) {
      const name = stringValue(values, 'name');
      const action = await actionOf(values, client);
      const body = { ...(name !== undefined && { name }), ...timing(values), ...(action && { action }), ...enabledValue(values) };
      someChange(body, '--name, --cron, --at, --timezone, --resource, --event-type, --enable, --disable');
      printSchedule(output, await client().updateSchedule({ path: { id: positionals[0]! }, body }));
    },
  },
  {
    name: 'schedules delete',
    positionals: ['<id>'],
    summary: 'delete a schedule',
    options: {},
    async run({ positionals, client }, output) {
      const id = positionals[0]!;
      await client().deleteSchedule({ path: { id } });
      print(output, { id, deleted: true }, () => output.out(`Deleted ${id}.`));
    },
  },
  {
    name: 'schedules run',
    positionals: ['<id>'],
    summary: "run a schedule's action now",
    details: "Needs schedules:manage and the action's scope. Exit 1 when the action failed.",
    options: {},
    async run({ positionals, client }, output) {
      const execution = await client().runSchedule({ path: { id: positionals[0]! } });
      print(output, execution, () =>
        printDetails(output, [
          ['Outcome', { text: execution.outcome, style: statusStyle(execution.outcome) }],
          ['Error', execution.error],
          ['Event', `#${execution.eventId} schedule.executed`],
          ['Executed', time(execution.executedAt)],
        ]),
      );
      // The call succeeded, the action did not: exit 1, as for a refused call.
      if (execution.outcome === 'failed') throw new Error(`the schedule's action failed: ${execution.error ?? 'no reason given'}`);
    },
  },
];

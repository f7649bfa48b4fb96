// devdata-client resources list|get|set|create|update|delete|history|import|export (history.ts,
// import.ts, export.ts).
import { BATCH_MAX_OPERATIONS, HISTORY_BUCKETS, RESOURCE_TYPES } from '../generated/values.js';
import { CSV_COLUMNS } from '../import-rows.js';
import type { Resource } from '../types.js';
import type { Command, OptionSpec } from './command.js';
import { exportResources } from './export.js';
import { showHistory } from './history.js';
import { importResources } from './import.js';
import { list, type Output, print, printDetails, printTable, stateCell, time } from './output.js';
import { ifMatchHeader, integerValue, jsonObjectValue, listValue, requiredValue, resourceTypeValue, someChange, stateFor, stringValue } from './values.js';

const TYPES = RESOURCE_TYPES.join(', ');

const IF_MATCH: OptionSpec = {
  type: 'string',
  value: 'VERSION',
  help: 'only if the resource is still at this version; else exit 1 with precondition_failed (HTTP 412)',
};
const ATTRIBUTES: OptionSpec = { type: 'string', value: 'JSON', help: `free details, a JSON object such as '{"unit_of_measurement":"°C"}'` };
const TAGS: OptionSpec = { type: 'string', value: 'A,B', help: 'tags, comma-separated' };
const STATE_HELP = 'on/off (or true/false) for a binary_sensor or switch, a number or text for a sensor, text for a text';
const FORMAT: OptionSpec = { type: 'string', value: 'FORMAT', help: 'ndjson or csv (default: what the file name says)' };

function printResources(output: Output, resources: Resource[]): void {
  if (resources.length === 0) {
    output.err('No resources.');
    return;
  }
  printTable(
    output,
    ['ID', 'TYPE', 'NAME', 'STATE', 'VERSION', 'TAGS'],
    resources.map((resource) => [resource.id, resource.type, resource.name, stateCell(resource.state), String(resource.version), list(resource.tags)]),
  );
}

function printResource(output: Output, resource: Resource): void {
  print(output, resource, () =>
    printDetails(output, [
      ['ID', resource.id],
      ['Name', resource.name],
      ['Type', resource.type],
      ['State', stateCell(resource.state)],
      ['Version', String(resource.version)],
      ['Tags', list(resource.tags)],
      ['Attributes', JSON.stringify(resource.attributes)],
      ['Created', time(resource.createdAt)],
      ['Updated', time(resource.updatedAt)],
    ]),
  );
}

export const resourceCommands: Command[] = [
  {
    name: 'resources list',
    summary: 'list resources in creation order',
    details: 'Every page, unless --limit or --offset asks for one page (with --json, the API page itself).',
    options: {
      type: { type: 'string', value: 'TYPE', help: `only this type: ${TYPES}` },
      tag: { type: 'string', value: 'TAG', multiple: true, help: 'only resources with this tag (all must match)' },
      limit: { type: 'string', value: 'N', help: 'one page of at most N resources (the API allows 1-500)' },
      offset: { type: 'string', value: 'N', help: 'one page, starting after the first N resources' },
    },
    async run({ values, client }, output) {
      const type = resourceTypeValue(values, 'type');
      const tag = values.tag as string[] | undefined;
      const limit = integerValue(values, 'limit');
      const offset = integerValue(values, 'offset');
      const query = { ...(type && { type }), ...(tag && { tag }) };
      if (limit !== undefined || offset !== undefined) {
        const page = await client().listResources({ query: { ...query, ...(limit !== undefined && { limit }), ...(offset !== undefined && { offset }) } });
        return print(output, page, () => {
          printResources(output, page.data);
          if (page.hasMore) output.err(`${page.total} in all; the next page: --offset ${page.offset + page.data.length}`);
        });
      }
      const resources: Resource[] = [];
      for await (const resource of client().iterateResources(query)) resources.push(resource);
      print(output, { data: resources }, () => printResources(output, resources));
    },
  },
  {
    name: 'resources get',
    positionals: ['<id>'],
    summary: 'show a resource',
    options: {},
    async run({ positionals, client }, output) {
      const resource = await client().getResource({ path: { id: positionals[0]! } });
      if (resource) printResource(output, resource);
    },
  },
  {
    name: 'resources set',
    positionals: ['<id>', '<state>'],
    summary: "set a resource's state",
    details: `The state is read as the resource's type needs it: ${STATE_HELP}.`,
    options: { 'if-match': IF_MATCH },
    async run({ values, positionals, client }, output) {
      const [id, text] = positionals as [string, string];
      const header = ifMatchHeader(values);
      const devdata = client();
      // The state's kind depends on the resource's type, so the resource is read first.
      const current = await devdata.getResource({ path: { id } });
      if (!current) throw new Error('the resource was not returned');
      // Without --if-match the state is set whatever changed in between, like the API without If-Match.
      printResource(output, await devdata.updateResource({ path: { id }, header, body: { state: stateFor(current.type, text) } }));
    },
  },
  {
    name: 'resources create',
    summary: 'create a resource',
    options: {
      name: { type: 'string', value: 'NAME', required: true, help: '1-200 characters' },
      type: { type: 'string', value: 'TYPE', required: true, help: `one of ${TYPES}` },
      state: { type: 'string', value: 'STATE', required: true, help: STATE_HELP },
      attributes: ATTRIBUTES,
      tags: TAGS,
    },
    async run({ values, client }, output) {
      const type = resourceTypeValue(values, 'type')!;
      const attributes = jsonObjectValue(values, 'attributes');
      const tags = listValue(values, 'tags');
      const body = {
        name: requiredValue(values, 'name'),
        type,
        state: stateFor(type, requiredValue(values, 'state')),
        ...(attributes && { attributes }),
        ...(tags && { tags }),
      };
      printResource(output, await client().createResource({ body }));
    },
  },
  {
    name: 'resources update',
    positionals: ['<id>'],
    summary: "change a resource's name, state, attributes or tags",
    details: 'Fields not given are left as they are; --attributes and --tags replace the whole value (--tags "" clears the tags).',
    options: {
      name: { type: 'string', value: 'NAME', help: '1-200 characters' },
      state: { type: 'string', value: 'STATE', help: STATE_HELP },
      attributes: ATTRIBUTES,
      tags: TAGS,
      'if-match': IF_MATCH,
    },
    async run({ values, positionals, client }, output) {
      const id = positionals[0]!;
      const header = ifMatchHeader(values);
      const name = stringValue(values, 'name');
      const text = stringValue(values, 'state');
      const attributes = jsonObjectValue(values, 'attributes');
      const tags = listValue(values, 'tags');
      const changes = { ...(name !== undefined && { name }), ...(attributes && { attributes }), ...(tags && { tags }) };
      someChange({ ...changes, ...(text !== undefined && { state: text }) }, '--name, --state, --attributes, --tags');
      const devdata = client();
      let state: { state?: string | number | boolean } = {};
      if (text !== undefined) {
        const current = await devdata.getResource({ path: { id } });
        if (!current) throw new Error('the resource was not returned');
        state = { state: stateFor(current.type, text) };
      }
      printResource(output, await devdata.updateResource({ path: { id }, header, body: { ...changes, ...state } }));
    },
  },
  {
    name: 'resources delete',
    positionals: ['<id>'],
    summary: 'delete a resource',
    options: { 'if-match': IF_MATCH },
    async run({ values, positionals, client }, output) {
      const id = positionals[0]!;
      await client().deleteResource({ path: { id }, header: ifMatchHeader(values) });
      print(output, { id, deleted: true }, () => output.out(`Deleted ${id}.`));
    },
  },
  {
    name: 'resources history',
    positionals: ['<id>'],
    summary: "a resource's past states, as points or as buckets",
    details: `Every point from --since to --until, oldest first (all pages); with --bucket, the buckets of that length, aligned to the epoch (UTC): for a sensor the count, min, max and mean of its numbers and its last state, for a binary_sensor or switch the count, the time spent on and the last state. --csv writes a header row and a row per point or bucket; --json the API's JSON (the points as {"data":[…]}).`,
    options: {
      since: { type: 'string', value: 'TIME', help: 'from this time: a duration ago (30m, 24h, 7d) or an ISO 8601 time (default 24h)' },
      until: { type: 'string', value: 'TIME', help: 'up to this time, excluded: a duration ago or an ISO 8601 time (default: now)' },
      bucket: { type: 'string', value: 'LENGTH', help: `buckets of ${HISTORY_BUCKETS.join(', ')} rather than points` },
      csv: { type: 'boolean', help: 'CSV: a header row, then a row per point or bucket' },
    },
    run: showHistory,
  },
  {
    name: 'resources import',
    positionals: ['<file>'],
    summary: 'create and update resources from an NDJSON or CSV file, in batches',
    details: `A row without an id creates a resource; a row with one updates it (its version, when given, must still be the resource's). NDJSON: a JSON object per line with a resource's fields, as resources export writes them. CSV: a header row naming any of the columns ${CSV_COLUMNS.join(', ')}; tags are separated by ";", attributes are a JSON object, a state is read by the type (${STATE_HELP}), and an empty cell leaves a field as it is.

Rows that cannot be read are listed by line, and nothing is sent unless --skip-invalid. The rows go in batches of up to ${BATCH_MAX_OPERATIONS}, each all or nothing; a refused batch names the line of the row refused. The import keeps its state in a file (each batch's Idempotency-Key and whether it is done): after Ctrl-C (exit code 130) or a failure, run the same command again to resume; nothing is written twice, as long as it resumes within 24 hours (the server keeps keys that long). A progress bar on a terminal, a line per batch otherwise (standard error).`,
    options: {
      format: FORMAT,
      'batch-size': { type: 'string', value: 'N', help: `rows per batch, 1-${BATCH_MAX_OPERATIONS} (default ${BATCH_MAX_OPERATIONS})` },
      'state-file': { type: 'string', value: 'PATH', help: 'where the import keeps its state (default: FILE.import-state.json beside the file)' },
      'skip-invalid': { type: 'boolean', help: 'import the rows that can be read; those that cannot are listed' },
    },
    run: importResources,
  },
  {
    name: 'resources export',
    summary: 'write resources as NDJSON or CSV, which resources import reads back',
    details:
      'Every resource (or those of --type and --tag), in creation order, to standard output or --output FILE. Imported back, each row updates its resource at the version it had (refused if it changed since); with --no-ids each row creates a new resource (a copy, say into another account).',
    options: {
      format: FORMAT,
      output: { type: 'string', value: 'FILE', help: 'write to FILE rather than standard output' },
      type: { type: 'string', value: 'TYPE', help: `only this type: ${TYPES}` },
      tag: { type: 'string', value: 'TAG', multiple: true, help: 'only resources with this tag (all must match)' },
      'no-ids': { type: 'boolean', help: 'leave out id and version, so that importing the file creates new resources' },
    },
    run: exportResources,
  },
];
